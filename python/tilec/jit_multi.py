"""A `T.prim_func` with several `with T.Kernel` blocks (TileLang's split + combine kernels) or
with `T.alloc_global` workspaces: each kernel block is compiled as its own kernel over the
function's parameters, and a :class:`MultiKernel` runs them in order on one stream, allocating
the outputs (out_idx) and the workspaces at each call — the caller passes only the inputs, as
with one kernel.

The split is made on the function's T-script (which round-trips): the header, the function-level
statements (T.func_attr) and one kernel block per part.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Callable, Optional, Sequence

from .errors import CompileError

WORKSPACES_ATTR = "tilec.workspaces"


def kernel_blocks(func: Any) -> tuple:
    """(header lines, function-level lines, [kernel block lines]) of the function's script."""
    lines = func.script().splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
    while not lines[end].rstrip().endswith(":"):  # the signature may wrap
        end += 1
    body_start = end + 1
    header, common, blocks = lines[:body_start], [], []
    for ln in lines[body_start:]:
        if ln.startswith("    with T.Kernel(") or ln.startswith("    with T.ClusterKernel("):
            blocks.append([ln])
        elif ln.startswith("        ") and blocks:
            blocks[-1].append(ln)
        elif ln.strip():
            if blocks and not ln.startswith("    "):
                blocks[-1].append(ln)
            else:
                common.append(ln)
    return header, common, blocks


def needs_split(func: Any) -> bool:
    attrs = func.attrs
    if attrs.get(WORKSPACES_ATTR):
        return True
    return sum(1 for ln in func.script().splitlines() if ln.startswith("    with T.Kernel(")
               or ln.startswith("    with T.ClusterKernel(")) > 1


def grid_scalars(func: Any) -> list:
    """The scalar parameters that a `with T.Kernel(...)` grid extent uses, in order."""
    from . import _tilec

    scalars = {str(p) for p in func.params if isinstance(p, _tilec.Var)}
    if not scalars:
        return []
    found = []
    for ln in func.script().splitlines():
        for call, _ in _kernel_calls(ln):
            for arg in call.args:
                for n in ast.walk(arg):
                    if isinstance(n, ast.Name) and n.id in scalars and n.id not in found:
                        found.append(n.id)
    return found


def _kernel_calls(line: str) -> list:
    """[(the T.Kernel call, column of the parsed text in `line`)] of a `with T.Kernel(...)` line."""
    stripped = line.lstrip()
    if not (stripped.startswith("with T.Kernel(") or stripped.startswith("with T.ClusterKernel(")):
        return []
    try:
        tree = ast.parse(stripped + "\n    pass\n")
    except SyntaxError:
        return []
    node = tree.body[0]
    if not isinstance(node, ast.With) or not isinstance(node.items[0].context_expr, ast.Call):
        return []
    return [(node.items[0].context_expr, len(line) - len(stripped))]


def lift_grid_scalars(func: Any, names: list) -> tuple:
    """Rewrites a function whose grid extents use the scalar parameters `names` (which the launch
    plan cannot: its grid comes from tensor dimensions) into one whose grids use a new symbolic
    dimension per scalar, the length of a hidden int8 workspace parameter that the MultiKernel
    allocates at each call with the scalar's value as its length. Returns (the new function,
    [workspace names], {symbol: scalar})."""
    from .script import from_script

    text = func.script()
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in words:
            name, k = f"{base}_{k}", k + 1
        words.add(name)
        return name

    symbols = {s: fresh(f"{s}_grid") for s in names}
    workspaces = {s: fresh(f"{s}_grid_extent") for s in names}
    lines = text.splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
    while not lines[end].rstrip().endswith(":"):
        end += 1
    close = lines[end].rstrip().rfind(")")
    extra = "".join(f", {workspaces[s]}: T.Tensor(({symbols[s]},), \"int8\")" for s in names)
    lines[end] = lines[end][:close] + extra + lines[end][close:]
    for i in range(end + 1, len(lines)):
        for call, col in _kernel_calls(lines[i]):
            spans = [(n.col_offset + col, n.end_col_offset + col, symbols[n.id]) for arg in call.args
                     for n in ast.walk(arg) if isinstance(n, ast.Name) and n.id in symbols]
            for a, b, sym in sorted(spans, reverse=True):
                lines[i] = lines[i][:a] + sym + lines[i][b:]
    decls = [f'{symbols[s]} = T.dynamic("{symbols[s]}")' for s in names]
    new = from_script("\n".join(decls + lines) + "\n", filename=f"<{func.name}>")
    return new, [workspaces[s] for s in names], {symbols[s]: s for s in names}


def compile_split(func: Any, backend: Callable, options: dict, extra_workspaces: Sequence[str] = (),
                  derived_symbols: Optional[dict] = None) -> "MultiKernel":
    from .script import from_script

    header, common, blocks = kernel_blocks(func)
    if not blocks:
        raise CompileError(f"'{func.name}' has no kernel launch", hint="write the body as `with T.Kernel(...)`")
    common = [ln for ln in common if "tilec.workspaces" not in ln or not ln.strip().startswith("T.func_attr")]
    kernels = []
    for k, block in enumerate(blocks):
        text = "\n".join(header + common + block) + "\n"
        part = from_script(text, filename=f"<{func.name}: kernel {k}>")
        kernels.append(backend(part, **dict(options, out_idx=None)))
    workspaces = [n for n in func.attrs.get(WORKSPACES_ATTR, "").split(",") if n] + list(extra_workspaces)
    return MultiKernel(func.name, kernels, options.get("out_idx"), workspaces, derived_symbols)


class MultiKernel:
    """Several compiled kernels over one parameter list, run in order by one call."""

    def __init__(self, name: str, kernels: list, out_idx: Optional[Sequence[int]], workspaces: list,
                 derived_symbols: Optional[dict] = None):
        self.kernel_name = name
        self.derived_symbols = dict(derived_symbols or {})  # symbolic dimension -> scalar parameter
        self.kernels = kernels
        self._all = kernels[0].params()  # every part has the function's parameters, in order
        self.workspaces = set(workspaces)
        visible = [i for i, p in enumerate(self._all) if p["name"] not in self.workspaces]
        outs = set()
        for i in out_idx or []:
            if not -len(visible) <= i < len(visible):
                raise CompileError(f"out_idx {i} is out of range for the {len(visible)} parameters of '{name}'")
            outs.add(visible[i])
        self._outputs = outs
        self._visible = visible

    # ------------------------------------------------------------------ the Kernel interface
    def params(self) -> list:
        out = []
        for i in self._visible:
            p = dict(self._all[i])
            p["is_output"] = i in self._outputs
            out.append(p)
        return out

    @property
    def signature(self) -> str:
        return f"{self.kernel_name}({', '.join(self._all[i]['name'] for i in self._visible)})"

    @property
    def target(self):
        return self.kernels[0].target

    @property
    def ptxas_info(self) -> dict:
        return self.kernels[0].ptxas_info

    def get_kernel_source(self, *args, **kwargs) -> str:
        return "\n\n".join(k.get_kernel_source(*args, **kwargs) for k in self.kernels)

    def launch_plan_summary(self) -> str:
        return "\n".join(k.launch_plan_summary() for k in self.kernels)

    def get_profiler(self, *args, **kwargs):
        from .profiler import Profiler

        return Profiler(self, *args, **kwargs)

    def __call__(self, *args, stream: Any = None):
        import torch

        from .kernel import bind_dim, param_shapes
        from .language.dtypes import as_torch

        inputs = [i for i in self._visible if i not in self._outputs]
        if len(args) == len(self._visible):
            given = dict(zip(self._visible, args))
        elif len(args) == len(inputs):
            given = dict(zip(inputs, args))
        else:
            raise CompileError(f"kernel {self.signature} takes {len(inputs)} inputs (or all {len(self._visible)} "
                               f"arguments), got {len(args)}")
        symbols, device = {}, None
        for i, a in given.items():
            p = self._all[i]
            if p["kind"] == "tensor" and hasattr(a, "shape"):
                device = device or a.device
                for d, n in zip(p["shape"], a.shape):
                    bind_dim(symbols, d, n)
            elif p["kind"] == "scalar":
                symbols.setdefault(p["name"], a)
        for sym, scalar in self.derived_symbols.items():  # a grid extent from a scalar parameter
            symbols[sym] = max(int(symbols[scalar]), 0)
        shapes = param_shapes(self.kernels[0], symbols)
        full = []
        outputs = []
        for i, p in enumerate(self._all):
            if i in given:
                full.append(given[i])
                continue
            t = torch.empty(shapes[i], dtype=as_torch(p["dtype"]), device=device)
            full.append(t)
            if i in self._outputs:
                outputs.append(t)
        for k in self.kernels:
            k(*full, stream=stream) if stream is not None else k(*full)
        if len(args) == len(self._visible) or not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs
