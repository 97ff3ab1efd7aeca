"""Fragments indexed outside T.Parallel (TileLang allows it: every thread runs that code) are
allocated as per-thread local buffers when that is exact (frontend/scalar_fragments.py); a
T.copy / T.fill into a local buffer is done by every thread (language/local_copy.py)."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def _mask_kernel():
    @T.prim_func
    def masked(M: T.Tensor((4, 16), T.bool), D: T.Tensor((4,), T.float32), X: T.Tensor((4, 128), T.float32),
               O: T.Tensor((4, 128), T.float32)):
        with T.Kernel(4, threads=128) as bx:
            mask = T.alloc_fragment([16], T.bool)
            d = T.alloc_fragment((1), T.float32)
            acc = T.alloc_fragment([128], T.float32)
            T.copy(M[bx, :], mask)
            d[0] = D[bx]
            T.copy(X[bx, :], acc)
            for k in T.serial(16):
                if mask[k] != 0:
                    for i in T.Parallel(128):
                        acc[i] += d[0]
            T.copy(acc, O[bx, :])

    return masked


def test_fragments_indexed_outside_parallel_become_local():
    text = _mask_kernel().script()
    assert 'T.alloc_local([16], "bool")' in text or "alloc_local" in text, text
    assert "T.copy(M" not in text  # expanded: every thread copies the whole row
    src = tilec.compile(_mask_kernel(), target="sm_90a").get_kernel_source()
    assert "mask[mask_i0] = M[bx * 16 + mask_i0];" in src, src
    assert "d[0] = D[bx];" in src


def test_fill_of_a_local_buffer_is_done_by_every_thread():
    @T.prim_func
    def filled(O: T.Tensor((128, 8), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            loc = T.alloc_local([8], T.float32)
            T.fill(loc, 1.5)
            for i in T.Parallel(128):
                O[i, 0] = loc[0]

    src = tilec.compile(filled, target="sm_90a").get_kernel_source()
    assert "loc[loc_i0] = 1.5f;" in src, src
    assert "if (tx < 1)" not in src


def test_reduce_output_read_outside_parallel_when_every_thread_holds_it():
    # TileLang reads a one-element T.reduce_* result as a scalar; tilec allows it when the
    # all-reduce leaves the value in every thread (as in upstream's fp8 block mean pooling)
    @T.prim_func
    def absmax(X: T.Tensor((32, 128), T.float32), O: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_fragment([32, 128], T.float32)
            col = T.alloc_fragment([128], T.float32)
            m = T.alloc_fragment([1], T.float32)
            T.copy(X, tile)
            T.reduce_sum(tile, col, dim=0)
            T.reduce_absmax(col, m, dim=0)
            O[0] = m[0] * 2.0

    src = tilec.compile(absmax, target="sm_90a").get_kernel_source()
    assert "m[0] * 2.0f" in src, src


def test_reduce_output_not_held_by_every_thread_is_an_error():
    with pytest.raises(CompileError, match="not every thread holds its element"):
        @T.prim_func
        def absmax(X: T.Tensor((128,), T.float32), O: T.Tensor((1,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                acc = T.alloc_fragment([128], T.float32)
                m = T.alloc_fragment([1], T.float32)
                T.copy(X, acc)
                T.reduce_absmax(acc, m, dim=0)
                O[0] = m[0] * 2.0

        tilec.compile(absmax, target="sm_90a")


def test_fragment_written_in_parallel_and_read_outside_keeps_the_error():
    with pytest.raises(CompileError, match="indexed outside a T.Parallel loop"):
        @T.prim_func
        def spread(O: T.Tensor((16,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                f = T.alloc_fragment([16], T.float32)
                for i in T.Parallel(16):
                    f[i] = i * 1.0
                O[0] = f[3]

        tilec.compile(spread, target="sm_90a")
