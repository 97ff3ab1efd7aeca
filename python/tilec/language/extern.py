"""A program's own CUDA device functions: `T.import_source(src)` puts the CUDA C text `src`
into the kernel's source (before the kernel, once however often it is imported), and
`T.call_extern(name, *args, dtype=...)` calls a function of it, e.g. TileLang's dequantize
programs' PTX decoders:

    T.import_source(decode_source)
    T.call_extern("decode_i4s_to_f16", T.access_ptr(B_local, "r"), T.access_ptr(B_deq, "w"), 8,
                  dtype=T.float16)

tilec does not look inside the imported code: the sync pass takes a call to read and write
every buffer whose address it gets, and the code is the program's to get right."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import to_expr
from .dtypes import dtype_str
from .ops import primitive

IMPORT_SOURCE_ATTR = "tilec.import_source"


@primitive
def import_source(source: Any):
    """`T.import_source(cuda_c)`: CUDA C device code the kernel's T.call_extern calls."""
    ctx = context.require("T.import_source")
    if not isinstance(source, str) or not source.strip():
        raise CompileError("T.import_source takes the CUDA C source text as a non-empty string",
                           hint="T.import_source(open('decode.cuh').read())")
    imported = ctx.func_attrs.get(IMPORT_SOURCE_ATTR, "")
    if source not in imported:
        ctx.func_attrs[IMPORT_SOURCE_ATTR] = imported + ("\n" if imported else "") + source


def _is_dtype(v: Any) -> bool:
    try:
        dtype_str(v)
        return True
    except Exception:  # noqa: BLE001 - anything that is not a dtype
        return False


@primitive
def call_extern(*args, dtype: Any = None):
    """`T.call_extern(name, *args, dtype=...)` (TVM's `T.call_extern(dtype, name, *args)` too):
    calls the device function `name` (from T.import_source or a CUDA header)."""
    ctx = context.require("T.call_extern")
    args = list(args)
    if dtype is None and len(args) >= 2 and isinstance(args[1], str) and _is_dtype(args[0]):
        dtype = args.pop(0)
    if not args or not isinstance(args[0], str) or not args[0].isidentifier():
        raise CompileError("T.call_extern needs the function's name first",
                           hint="T.call_extern(\"my_function\", T.access_ptr(A_local, \"r\"), dtype=T.float16)")
    result = "void" if dtype is None else dtype_str(dtype)
    call = _tilec.call(result, "tl.call_extern",
                       [_tilec.string_imm(args[0], ctx.loc)] + [to_expr(a) for a in args[1:]], ctx.loc)
    if result == "void":
        ctx.builder.evaluate(call, ctx.loc)
        return None
    return call
