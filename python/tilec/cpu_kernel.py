"""`tilec.compile(func, target="cpu")`: the tile-level CPU reference target.

The kernel runs on the host in the C++ interpreter (src/target/cpu, described in
include/tilec/target/cpu/interpreter.h) on numpy arrays or CPU torch tensors, with the GPU
kernel's calling convention: pass every parameter, or only the inputs when the kernel has
``out_idx`` outputs, which are then allocated (numpy, or torch when the inputs are torch
tensors; floats start as NaN so that an element the kernel never writes shows) and returned.
It is slow (an interpreter) and meant for debugging and for judging the GPU lowering.

float16 is numpy's float16; bfloat16 and float8 arrays come from ml_dtypes (when installed)
or torch. Out-of-bounds accesses raise a CompileError naming the kernel, the buffer, the index
and the source line; a global access outside a tensor (a partial tile) reads 0 and writes
nothing, as on the GPU, unless pass_configs={"tl.disable_safe_memory_legalize": True}.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

from . import _tilec
from .errors import CompileError

__all__ = ["CpuKernel"]

# numpy dtype name -> tilec dtype name (ml_dtypes spells its types like this too).
_NUMPY_DTYPES = {
    "float16": "float16", "float32": "float32", "float64": "float64", "bool": "bool",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2",
}
# torch dtypes numpy cannot hold: viewed as integers of the same width.
_TORCH_VIEWS = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3"),
                "float8_e5m2": ("uint8", "float8_e5m2")}
_NO_NUMPY_HINT = {"bfloat16": "install ml_dtypes (pip install ml_dtypes) or pass a torch tensor",
                  "float8_e4m3": "install ml_dtypes or pass a torch tensor",
                  "float8_e5m2": "install ml_dtypes or pass a torch tensor"}


def _is_torch_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _numpy_dtype(name: str):
    import numpy as np

    try:
        return np.dtype(name)
    except TypeError:
        pass
    try:
        import ml_dtypes  # noqa: F401

        return np.dtype({"float8_e4m3": "float8_e4m3fn"}.get(name, name))
    except (ImportError, TypeError):
        raise CompileError(f"target=cpu: numpy has no {name} dtype",
                           hint=_NO_NUMPY_HINT.get(name, "use another dtype")) from None


class CpuKernel:
    """A PrimFunc bound to target="cpu"; call it like a GPU kernel."""

    def __init__(self, func: Any, out_idx: Optional[Sequence[int]] = None, pass_configs: Optional[dict] = None):
        self.func = func
        self.params = list(func.params)
        n = len(self.params)
        self.out_idx = sorted({i + n if i < 0 else i for i in (out_idx or [])})
        for i in self.out_idx:
            if not 0 <= i < n or not hasattr(self.params[i], "shape"):
                raise CompileError(f"out_idx {i} is not a tensor parameter of '{func.name}' ({n} parameters)")
        configs = pass_configs or {}
        self.strict_global_bounds = bool(configs.get("tl.disable_safe_memory_legalize", False))
        self.target = "cpu"
        self.kernel_name = func.name

    # TileLang's kernel object API, where it means something on the host.
    def get_kernel_source(self) -> str:
        return self.func.script()

    def params_info(self) -> list:
        return [{"name": p.name, "kind": "tensor" if hasattr(p, "shape") else "scalar"} for p in self.params]

    def __repr__(self) -> str:
        return f"<tilec.CpuKernel {self.func.name} (target=cpu)>"

    def __call__(self, *args: Any, **kwargs: Any):
        if kwargs:
            raise TypeError(f"kernel call got an unexpected keyword argument '{next(iter(kwargs))}'")
        n = len(self.params)
        n_in = n - len(self.out_idx)
        if len(args) not in (n, n_in):
            expected = f"{n_in} (inputs)" + (f" or {n} (inputs and outputs)" if self.out_idx else "")
            raise _tilec.KernelArgumentError(
                f"kernel {self.func.name} (target=cpu) takes {expected} arguments, got {len(args)}")
        with_outputs = len(args) == n
        use_torch = any(_is_torch_tensor(a) for a in args)
        full: list = [None] * n
        it = iter(args)
        for pos in range(n):
            if pos in self.out_idx and not with_outputs:
                continue
            full[pos] = next(it)
        marshalled: list = [None] * n
        keep: list = []
        symbols: dict = {}
        for pos, value in enumerate(full):
            if value is None:
                continue
            marshalled[pos] = self._marshal(pos, value, keep, symbols)
        outputs = []
        for pos in self.out_idx:
            if with_outputs:
                outputs.append(full[pos])
                continue
            out = self._allocate(pos, symbols, use_torch)
            outputs.append(out)
            marshalled[pos] = self._marshal(pos, out, keep, symbols)
        _tilec.cpu_run(self.func, marshalled, self.strict_global_bounds)
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs

    def _marshal(self, pos: int, value: Any, keep: list, symbols: dict):
        param = self.params[pos]
        if not hasattr(param, "shape") and str(param.dtype) == "handle":  # a pointer parameter (T.ptr)
            if isinstance(value, int) or (hasattr(value, "item") and not hasattr(value, "shape")):
                raise _tilec.KernelArgumentError(
                    f"argument {pos} ('{param.name}') of kernel {self.func.name} is a pointer: target=cpu takes the "
                    "array itself (a numpy array or a CPU tensor), not an address it cannot check")
            return self._host_array(pos, value, keep)[0]
        if not hasattr(param, "shape"):  # a scalar parameter
            if _is_torch_tensor(value) or hasattr(value, "item"):
                value = value.item()
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _tilec.KernelArgumentError(
                    f"argument {pos} ('{param.name}') of kernel {self.func.name} is a scalar, got "
                    f"{type(value).__name__}")
            if isinstance(value, int):
                symbols[param.name] = value
            return value
        marshalled, arr = self._host_array(pos, value, keep)
        for d, dim in enumerate(param.shape):
            name = getattr(dim, "name", None)
            if name is not None and d < arr.ndim:
                symbols.setdefault(name, int(arr.shape[d]))
        return marshalled

    def _host_array(self, pos: int, value: Any, keep: list):
        """(address, dtype, shape, strides in elements) of an array argument, and the array (kept alive)."""
        arr, dtype = self._as_numpy(pos, value)
        keep.append(arr)
        itemsize = arr.dtype.itemsize
        return (int(arr.ctypes.data), dtype, list(arr.shape), [s // itemsize for s in arr.strides]), arr

    def _as_numpy(self, pos: int, value: Any):
        import numpy as np

        name = self.params[pos].name
        if _is_torch_tensor(value):
            if value.device.type != "cpu":
                raise _tilec.KernelArgumentError(
                    f"argument '{name}' of kernel {self.func.name} is on {value.device}; target=cpu takes CPU "
                    "tensors (.cpu())")
            tname = str(value.dtype).replace("torch.", "")
            if tname in _TORCH_VIEWS:
                view, dtype = _TORCH_VIEWS[tname]
                import torch

                return value.detach().view(getattr(torch, view)).numpy(), dtype
            value = value.detach().numpy()
        if not isinstance(value, np.ndarray):
            raise _tilec.KernelArgumentError(
                f"argument '{name}' of kernel {self.func.name} must be a numpy array or a CPU torch tensor, got "
                f"{type(value).__name__}")
        dtype = _NUMPY_DTYPES.get(value.dtype.name)
        if dtype is None:
            raise _tilec.KernelArgumentError(
                f"argument '{name}' of kernel {self.func.name} has the unsupported dtype {value.dtype}")
        return value, dtype

    def _allocate(self, pos: int, symbols: dict, use_torch: bool):
        import numpy as np

        param = self.params[pos]
        shape = tuple(_tilec.cpu_param_shape(self.func, pos, list(symbols.items())))
        dtype = str(param.dtype)
        is_float = dtype.startswith(("float", "bfloat"))
        if use_torch:
            import torch

            tdt = getattr(torch, {"float8_e4m3": "float8_e4m3fn"}.get(dtype, dtype))
            out = torch.empty(shape, dtype=tdt)
            out.fill_(float("nan") if is_float else 0)
            return out
        out = np.empty(shape, dtype=_numpy_dtype(dtype))
        out.fill(np.nan if is_float else 0)
        return out
