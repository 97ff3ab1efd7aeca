"""Pointers: tables `T.Tensor([n], T.ptr)`, pointer parameters `a: T.ptr` / `a: T.handle`, and
`T.make_tensor(ptr, shape, dtype)` / `T.match_buffer(ptr, shape, dtype)`.

A kernel gets a table of device addresses (an int64 tensor, e.g. `torch.tensor([t.data_ptr() for
t in ts])`) and views the memory at one of them as a global tensor of a shape and dtype fixed
at compile time, as TileLang does (its `T.ptr` marks the table, stored as int64):

    A = T.make_tensor(A_ptrs[g], (max_M, K), T.float16)

The address is read once, where T.make_tensor is written (bound to `A_ptr`), and the buffer
lives until the end of the enclosing block. Copies from and to it use cp.async / SIMT
instructions, never TMA (a tensor map is made on the host for a tensor parameter); nothing
checks its alignment at launch, so vector accesses assume the address is aligned, as TileLang
assumes (torch allocations are).

A pointer parameter (`a_ptr: T.ptr`, `T.ptr(dtype)` or TIR's `T.handle`) is one address passed by
value: the call gives a tensor (its data pointer) or an integer address. The tensor at it is
made with T.make_tensor (TIR: T.match_buffer) — inside a kernel as above, or before
`with T.Kernel` as TileLang programs write it (`A = T.make_tensor(a_ptr, (m, k), dtype)` with m, k
scalar parameters): the tensor is then declared at the top of each kernel of the function.
"""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import to_expr
from .dtypes import dtype_str
from .ops import primitive


class _PointerMarker:
    """`T.ptr`: in `T.Tensor([n], T.ptr)` a table of addresses (int64 storage); as a parameter's
    annotation (`a: T.ptr`, `a: T.ptr(T.float16)`, `a: T.handle`) one address."""

    _tilec_pointer_table = True
    __name__ = "ptr"

    def __init__(self, name: str = "ptr", dtype: Any = None):
        self.__name__ = name
        self.dtype = dtype

    def __call__(self, dtype: Any = None, storage_scope: str = "global", *, is_size_var: bool = False):
        if storage_scope != "global":
            raise CompileError(f"T.ptr(storage_scope={storage_scope!r}): tilec's pointer parameters address global "
                               "memory", hint="use T.alloc_shared / T.alloc_fragment for on-chip buffers")
        return _PointerMarker("ptr", dtype)

    def __repr__(self) -> str:
        return f"T.{self.__name__}" + (f"({self.dtype})" if self.dtype is not None else "")


def is_pointer_annotation(spec: Any) -> bool:
    """Whether a parameter annotation declares one address (T.ptr, T.ptr(dtype), T.handle)."""
    return isinstance(spec, _PointerMarker)


ptr = _PointerMarker()
handle = _PointerMarker("handle")


class PendingTensor:
    """T.make_tensor / T.match_buffer written before `with T.Kernel`: a tensor at an address
    known to the whole function (a pointer parameter), declared at the top of each kernel (the
    parser binds the name to the kernel's buffer there). Outside kernels it answers .shape,
    .dtype and .strides, as a tensor parameter does."""

    def __init__(self, name: str, address: Any, dims: list, dtype: str, strides: Any):
        self.name, self.address, self.dims, self.dtype, self.strides = name, address, dims, dtype, strides

    @property
    def shape(self) -> tuple:
        return tuple(self.dims)

    def declare(self, ctx: Any):
        return ctx.builder.make_tensor(self.name, self.address, self.dims, self.dtype, self.strides, ctx.loc)

    def __getitem__(self, index: Any):
        raise CompileError(f"tensor '{self.name}' (T.make_tensor before `with T.Kernel`) is read outside a kernel",
                           hint="index it inside `with T.Kernel(...)`")

    def __repr__(self) -> str:
        return f"T.make_tensor({self.name}, {self.shape}, {self.dtype})"


@primitive
def make_tensor(ptr: Any, shape: Any, dtype: Any = "float32", strides: Any = None):
    """`T.make_tensor(address, shape, dtype, strides=None)`: the global memory at `address` (an
    int64 kernel value, e.g. an element of a `T.Tensor([n], T.ptr)` table) as a tensor."""
    ctx = context.require("T.make_tensor")
    dims = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    dims = [to_expr(n) for n in dims]
    stride_exprs = None
    if strides is not None:
        stride_exprs = [to_expr(s) for s in (strides if isinstance(strides, (list, tuple)) else [strides])]
    if isinstance(ptr, _PointerMarker):
        raise CompileError(f"{ptr!r} is a parameter annotation (`a: T.ptr`), not an address: tilec has no pointer "
                           "variables inside the body",
                           hint="declare the address as a parameter `a_ptr: T.ptr`, or pass a table "
                                "`ptrs: T.Tensor([n], T.ptr)` and use T.make_tensor(ptrs[i], shape, dtype)")
    name = ctx.take_name("tensor")
    address = to_expr(ptr)
    if not ctx.kernels:
        if not (isinstance(address, _tilec.Var) and str(address.dtype) == "handle"):
            raise CompileError("T.make_tensor before `with T.Kernel` takes a pointer parameter (`a_ptr: T.ptr`)",
                               hint="inside the kernel it also takes an element of a pointer table, "
                                    "T.make_tensor(ptrs[i], shape, dtype)")
        return PendingTensor(name, address, dims, dtype_str(dtype), stride_exprs)
    return ctx.builder.make_tensor(name, address, dims, dtype_str(dtype), stride_exprs, ctx.loc)


make_tensor_from_addr = make_tensor


@primitive
def match_buffer(param: Any, shape: Any, dtype: Any = "float32", strides: Any = None, **unused: Any):
    """TIR's `A = T.match_buffer(a, shape, dtype)` over a `T.handle` parameter: T.make_tensor."""
    return make_tensor(param, shape, dtype, strides)
