"""Pointer tables: `T.Tensor([n], T.ptr)` and `T.make_tensor(ptr, shape, dtype)`.

A kernel gets a table of device addresses (an int64 tensor, e.g. `torch.tensor([t.data_ptr() for
t in ts])`) and views the memory at one of them as a global tensor of a shape and dtype fixed
at compile time, as TileLang does (its `T.ptr` marks the table, stored as int64):

    A = T.make_tensor(A_ptrs[g], (max_M, K), T.float16)

The address is read once, where T.make_tensor is written (bound to `A_ptr`), and the buffer
lives until the end of the enclosing block. Copies from and to it use cp.async / SIMT
instructions, never TMA (a tensor map is made on the host for a tensor parameter); nothing
checks its alignment at launch, so vector accesses assume the address is aligned, as TileLang
assumes (torch allocations are).
"""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from ..frontend import context
from ..frontend.values import to_expr
from .dtypes import dtype_str
from .ops import primitive


class _PointerMarker:
    """`T.ptr`: in `T.Tensor([n], T.ptr)` a table of addresses (int64 storage)."""

    _tilec_pointer_table = True
    __name__ = "ptr"

    def __call__(self, dtype: Any = None, storage_scope: str = "global", *, is_size_var: bool = False):
        raise CompileError("T.ptr(...) as a pointer variable is not supported by tilec",
                           hint="pass addresses in a table, `ptrs: T.Tensor([n], T.ptr)`, and view one with "
                                "T.make_tensor(ptrs[i], shape, dtype)")

    def __repr__(self) -> str:
        return "T.ptr"


ptr = _PointerMarker()


@primitive
def make_tensor(ptr: Any, shape: Any, dtype: Any = "float32", strides: Any = None):
    """`T.make_tensor(address, shape, dtype, strides=None)`: the global memory at `address` (an
    int64 kernel value, e.g. an element of a `T.Tensor([n], T.ptr)` table) as a tensor."""
    ctx = context.require("T.make_tensor")
    if not ctx.kernels:
        raise CompileError("T.make_tensor is used inside `with T.Kernel(...)`",
                           hint="read the address from a pointer table in the kernel body")
    dims = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    dims = [to_expr(n) for n in dims]
    stride_exprs = None
    if strides is not None:
        stride_exprs = [to_expr(s) for s in (strides if isinstance(strides, (list, tuple)) else [strides])]
    name = ctx.take_name("tensor")
    return ctx.builder.make_tensor(name, to_expr(ptr), dims, dtype_str(dtype), stride_exprs, ctx.loc)


make_tensor_from_addr = make_tensor
