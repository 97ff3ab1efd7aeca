"""A compiled kernel as a PyTorch custom operator: `kernel.as_torch_op("ns::name")`.

    kernel = tilec.compile(add, out_idx=[-1])          # add(A: float32[n], B: float32[n]) -> C
    add_op = kernel.as_torch_op("mylib::add")
    c = add_op(a, b)                                   # eager, autograd-free
    torch.compile(lambda a, b: add_op(a, b) * 2, fullgraph=True)(a, b)   # no graph break

The operator is registered with `torch.library.custom_op` under a schema derived from the
kernel's parameters (tensors in, `out_idx` tensors out, scalars as int / float arguments), and a
fake (meta) implementation derived from the launch plan: output shapes with their symbolic
dimensions bound from the inputs' shapes (or from a scalar parameter of the same name), dtypes
from the program, on the inputs' device. So torch.compile traces it without running it.
Kernels that write some of their inputs in place (no `out_idx`) name them: `mutates=("C",)`.

torch is imported when this is first used, never by `import tilec`.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from .kernel import bind_dim, dim_value, split_dim
from .language.dtypes import as_torch

__all__ = ["as_torch_op"]

# The tilec dtypes a torch operator takes (their torch dtypes: language/dtypes.as_torch;
# float4_e2m1 is torch's packed float4_e2m1fn_x2, last dimension halved).
_TORCH_DTYPE = {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
                "float8_e4m3", "float8_e5m2", "float4_e2m1"}

_REGISTERED: Dict[str, Any] = {}  # op name -> (kernel cache key, op)


def _scalar_type(dtype: str) -> str:
    if dtype.startswith(("int", "uint")):
        return "int"
    if dtype == "bool":
        return "bool"
    return "float"


def _schema(params: list, mutates: Sequence[str]) -> str:
    args, outs = [], []
    alias = iter("abcdefghijklmnopqrstuvwxyz")
    for p in params:
        if p["kind"] == "tensor" and p["is_output"]:
            outs.append("Tensor")
        elif p["kind"] == "tensor":
            args.append(f"Tensor({next(alias)}!) {p['name']}" if p["name"] in mutates else f"Tensor {p['name']}")
        else:
            args.append(f"{_scalar_type(p['dtype'])} {p['name']}")
    ret = "()" if not outs else outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return "(" + ", ".join(args) + ") -> " + ret


def _output_shapes(params: list, values: list) -> list:
    """Each output's shape, its symbolic dimensions bound from the inputs' shapes or from a
    scalar parameter with the symbol's name. `values` are the op's arguments, in order."""
    symbols: Dict[str, Any] = {}
    inputs = [p for p in params if not (p["kind"] == "tensor" and p["is_output"])]
    for p, v in zip(inputs, values):
        if p["kind"] == "scalar":
            symbols.setdefault(p["name"], v)
            continue
        for d, size in zip(p["shape"], v.shape):
            bind_dim(symbols, d, size)
    shapes = []
    for p in params:
        if p["kind"] == "tensor" and p["is_output"]:
            shapes.append([dim_value(d, symbols) for d in p["shape"]])
    return shapes


def _check_outputs_are_determined(params: list, signature: str) -> None:
    known = set()
    for p in params:
        if p["kind"] == "scalar":
            known.add(p["name"])
        elif not p["is_output"]:
            known.update(split_dim(d)[1] for d in p["shape"] if isinstance(d, str))
    for p in params:
        if p["kind"] == "tensor" and p["is_output"]:
            for d in p["shape"]:
                if isinstance(d, str) and split_dim(d)[1] not in known:
                    raise ValueError(
                        f"as_torch_op: output '{p['name']}' of kernel {signature} has the dimension '{d}', which "
                        f"no input's shape and no scalar parameter determines; the fake implementation that "
                        f"torch.compile needs could not give its shape")


def as_torch_op(kernel: Any, name: str, *, mutates: Sequence[str] = ()) -> Any:
    """Registers `kernel` as the torch custom operator `name` ("namespace::op") and returns it.
    Registering the same kernel under the same name again returns the first operator."""
    import torch

    if not isinstance(name, str) or name.count("::") != 1 or not all(name.split("::")):
        raise ValueError(f"as_torch_op: the name must look like 'namespace::op', got {name!r}")
    params = list(kernel.params())
    signature = kernel.signature
    inputs = [p for p in params if not (p["kind"] == "tensor" and p["is_output"])]
    tensor_inputs = {p["name"] for p in inputs if p["kind"] == "tensor"}
    for m in mutates:
        if m not in tensor_inputs:
            raise ValueError(f"as_torch_op: mutates names '{m}', which is not an input tensor of kernel {signature} "
                             f"(its input tensors: {', '.join(sorted(tensor_inputs)) or 'none'})")
    if not tensor_inputs:
        raise ValueError(f"as_torch_op: kernel {signature} takes no input tensor (the operator's device and the "
                         f"fake implementation come from the inputs)")
    _check_outputs_are_determined(params, signature)
    for p in params:
        if p["kind"] == "tensor" and p["dtype"] not in _TORCH_DTYPE:
            raise ValueError(f"as_torch_op: parameter '{p['name']}' has dtype {p['dtype']}, which torch has no "
                             f"dtype for")
    if name in _REGISTERED:
        key, op = _REGISTERED[name]
        if key != kernel.cache_key:
            raise ValueError(f"as_torch_op: the operator {name!r} is already registered for another kernel; "
                             f"choose another name")
        return op

    out_dtypes = [as_torch(p["dtype"]) for p in params
                  if p["kind"] == "tensor" and p["is_output"]]
    n_out = len(out_dtypes)
    schema = _schema(params, mutates)

    def _real(*args):
        result = kernel(*args)
        if n_out == 0:
            return None
        if n_out == 1:
            return result if isinstance(result, torch.Tensor) else result[0]
        return tuple(result)

    def _fake(*args):
        anchor = next(a for a, p in zip(args, inputs) if p["kind"] == "tensor")
        outs = [anchor.new_empty(shape, dtype=dt) for shape, dt in zip(_output_shapes(params, list(args)), out_dtypes)]
        if n_out == 0:
            return None
        return outs[0] if n_out == 1 else tuple(outs)

    op = torch.library.custom_op(name, _real, mutates_args=tuple(mutates), schema=schema)
    op.register_fake(_fake)
    _REGISTERED[name] = (kernel.cache_key, op)
    return op
