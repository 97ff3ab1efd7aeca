"""`tilelang.cuda.intrinsics.sparse_layout`: the facts of 2:4 (and, for 32-bit types, 1:2)
structured sparsity that a compressor and a sparse MMA agree on. Data only; T.gemm_sp reads A
in this format (tilec rebuilds dense A in shared memory: docs/LANGUAGE.md).

- ``GROUP_CONFIG[dtype] = (kept, group)``: of every ``group`` consecutive elements along K,
  ``kept`` may be non-zero (sparse MMA on 8/16-bit types keeps 2 of 4; on float32 1 of 2).
- Metadata: each group of kept elements is described by 4 bits (two 2-bit positions), so one
  metadata element of ``b`` bits covers ``b // 4`` groups: ``get_e_factor`` elements of A.
- ``get_e_replicate_factor``: how many neighbouring threads of the sparse MMA read the same
  metadata value (2 for 16/32-bit A, 1 for 8-bit A).
Lookups accept any spelling of a dtype (``T.float32``, ``"float"``, ``"float8_e4m3fn"``)."""
from __future__ import annotations

from typing import Any

from ... import _tilec

_BITS_PER_GROUP = 4


def _canonical(d: Any) -> str:
    return str(_tilec.DataType(str(d)))


class _ByDType(dict):
    """A dict keyed by canonical dtype names that also finds aliases."""

    def __getitem__(self, d: Any):
        return super().__getitem__(_canonical(d))

    def __contains__(self, d: Any) -> bool:
        try:
            return super().__contains__(_canonical(d))
        except Exception:  # not a dtype at all
            return False

    def get(self, d: Any, default: Any = None):
        return self[d] if d in self else default


GROUP_CONFIG = _ByDType({
    "float32": (1, 2),
    "float16": (2, 4), "bfloat16": (2, 4),
    "int8": (2, 4), "uint8": (2, 4),
    "float8_e4m3": (2, 4), "float8_e5m2": (2, 4),
})


def get_e_factor(a_dtype: Any, meta_dtype: Any) -> int:
    """Elements of A (dense K positions) that one metadata element describes."""
    _, group = GROUP_CONFIG[a_dtype]
    return _tilec.DataType(str(meta_dtype)).bits // _BITS_PER_GROUP * group


def get_e_replicate_factor(a_dtype: Any) -> int:
    """Neighbouring threads of the sparse MMA that share one metadata value."""
    return 1 if _tilec.DataType(str(a_dtype)).bits <= 8 else 2


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"tilelang.cuda.intrinsics.sparse_layout.{name}: the sparse MMA metadata layouts are "
                              "not part of tilec (T.gemm_sp runs without them); this module has GROUP_CONFIG, "
                              "get_e_factor and get_e_replicate_factor")
