"""Shared buffers only T.Parallel loops touch get the layout with the fewest bank conflicts
(layout inference, tilec.bank_aware_layouts; include/tilec/layout/bank_layout.h), and an
element-wise T.Parallel store loop gets no barrier between its iterations."""
import os
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

ROW_MAJOR = {"tilec.bank_aware_layouts": False}


def _transpose(dtype="float32", n=32):
    @T.prim_func
    def tr(A: T.Tensor((1024, 1024), dtype), B: T.Tensor((1024, 1024), dtype)):
        with T.Kernel(1024 // n, 1024 // n, threads=256) as (bx, by):
            tile = T.alloc_shared((n, n), dtype)
            for i, j in T.Parallel(n, n):
                tile[i, j] = A[by * n + i, bx * n + j]
            for i, j in T.Parallel(n, n):
                B[bx * n + i, by * n + j] = tile[j, i]

    return tr


def _rows_only():
    @T.prim_func
    def k(A: T.Tensor((1024, 1024), "float32"), B: T.Tensor((1024, 1024), "float32")):
        with T.Kernel(32, 32, threads=256) as (bx, by):
            tile = T.alloc_shared((32, 32), "float32")
            for i, j in T.Parallel(32, 32):
                tile[i, j] = A[by * 32 + i, bx * 32 + j]
            for i, j in T.Parallel(32, 32):
                B[by * 32 + i, bx * 32 + j] = tile[i, j] * 2.0

    return k


def _src(f, **pc):
    return tilec.compile(f, target="sm_80", pass_configs=pc or None).get_kernel_source()


def _explain(f, **pc):
    return tilec.compile(f, target="sm_80", pass_configs=pc or None).explain(show=False)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_transpose_tile_gets_a_conflict_free_layout(dtype):
    assert "bank conflict" in _explain(_transpose(dtype), **ROW_MAJOR)
    assert "bank conflict" not in _explain(_transpose(dtype))
    src = _src(_transpose(dtype))
    assert "^" in src[src.index("__global__"):], src  # the word XOR swizzle


def test_conflict_free_buffers_stay_row_major_and_vectorized():
    src = _src(_rows_only())
    body = src[src.index("__global__"):]
    assert "^" not in body and "tl::store(&tile[" in body, body


def test_buffers_a_tile_op_touches_keep_their_default():
    @T.prim_func
    def k(A: T.Tensor((1024, 1024), "float32"), B: T.Tensor((1024, 1024), "float32")):
        with T.Kernel(32, 32, threads=256) as (bx, by):
            tile = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], tile)
            for i, j in T.Parallel(32, 32):
                B[bx * 32 + i, by * 32 + j] = tile[j, i]

    # The copy's own lowering decides nothing about layouts here: row-major stays (and the
    # column read stays a conflict explain reports).
    assert "bank conflict" in _explain(k)


def test_an_elementwise_store_loop_has_no_barrier_inside_but_one_before_a_later_reader():
    src = _src(_transpose())
    body = src[src.index("__global__"):]
    first_loop = body[body.index("for (int v"):body.index("}", body.index("for (int v"))]
    assert "__syncthreads" not in first_loop, body
    assert body.count("__syncthreads();") == 1, body


def test_a_store_loop_after_readers_of_the_same_tile_still_waits_for_them():
    @T.prim_func
    def k(A: T.Tensor((1024, 1024), "float32"), B: T.Tensor((1024, 1024), "float32")):
        with T.Kernel(32, 32, threads=256) as (bx, by):
            tile = T.alloc_shared((32, 32), "float32")
            for i, j in T.Parallel(32, 32):
                tile[i, j] = A[by * 32 + i, bx * 32 + j]
            for i, j in T.Parallel(32, 32):
                B[bx * 32 + i, by * 32 + j] = tile[j, i]
            for i, j in T.Parallel(32, 32):
                tile[j, i] = B[bx * 32 + i, by * 32 + j] * 2.0
            for i, j in T.Parallel(32, 32):
                A[by * 32 + i, bx * 32 + j] = tile[i, j]

    body = _src(k)[_src(k).index("__global__"):]
    # write, barrier, read, barrier (readers done before the rewrite), write, barrier, read.
    assert body.count("__syncthreads();") == 3, body


def test_a_store_loop_inside_an_outer_loop_waits_for_the_last_steps_readers():
    @T.prim_func
    def k(A: T.Tensor((4096, 32), "float32"), B: T.Tensor((32, 4096), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tile = T.alloc_shared((32, 32), "float32")
            for s in T.serial(128):
                for i, j in T.Parallel(32, 32):
                    tile[i, j] = A[s * 32 + i, j]
                for i, j in T.Parallel(32, 32):
                    B[i, s * 32 + j] = tile[j, i]

    body = _src(k)[_src(k).index("__global__"):]
    step = body[body.index("for (int s = 0; s < 128; ++s) {"):]
    # One barrier before the step's stores (the previous step's readers), one before the reads;
    # none between the store loop's own iterations.
    assert step.count("__syncthreads();") == 2, body
    first = step.index("__syncthreads();")
    assert first < step.index("tile["), body


def test_explain_reports_the_choice_and_its_costs():
    text = _explain(_transpose())
    assert "shared 'tile' layout" in text and "word XOR swizzle, 8 shared-memory wavefronts per warp" in text, text
    assert "(132 row-major)" in text, text
    assert "shared 'tile' layout" not in _explain(_transpose(), **ROW_MAJOR)
    assert "layout" not in _explain(_rows_only()).split("kernel ")[0].split("\n", 1)[1], _explain(_rows_only())
