"""T.any_of / T.all_of (language/logical.py): one boolean over a buffer or a region, checked on the
CPU target against numpy, and their errors."""
import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError


def _flags():
    @T.prim_func
    def k(M: T.Tensor((8, 4), "int32"), Any: T.Tensor((8,), "int32"), All: T.Tensor((8,), "int32"),
          Mid: T.Tensor((1,), "int32")):
        with T.Kernel(8, threads=32) as b:
            row = T.alloc_local((4,), "int32")
            for j in T.serial(4):
                row[j] = M[b, j]
            Any[b] = T.if_then_else(T.any_of(row), 1, 0)
            All[b] = T.if_then_else(T.all_of(row), 1, 0)
            if b == 0:
                Mid[0] = T.if_then_else(T.any_of(M[2:5, 1]), 1, 0)

    return k


def test_any_and_all_match_numpy():
    m = np.zeros((8, 4), np.int32)
    m[1, 2] = 5
    m[3] = [1, 2, 3, 4]
    m[6] = [0, 0, 0, -1]
    any_, all_, mid = np.full(8, -1, np.int32), np.full(8, -1, np.int32), np.full(1, -1, np.int32)
    tilec.compile(_flags(), target="cpu")(m, any_, all_, mid)
    np.testing.assert_array_equal(any_, (m != 0).any(1).astype(np.int32))
    np.testing.assert_array_equal(all_, (m != 0).all(1).astype(np.int32))
    assert mid[0] == int((m[2:5, 1] != 0).any())
    assert "||" in tilec.compile(_flags(), target="sm_90a").get_kernel_source()


def test_too_large_a_region_is_an_error():
    with pytest.raises(CompileError, match="T.any_of over 4096 elements"):
        @T.prim_func
        def big(M: T.Tensor((64, 64), "int32"), O: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=32) as b:
                O[0] = T.if_then_else(T.any_of(M), 1, 0)
