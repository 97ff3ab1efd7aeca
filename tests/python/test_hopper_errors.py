"""The user errors of the Hopper features (T.tma_copy, T.ws, T.ClusterKernel, wgmma operand
layouts): each names the problem in words and points at the user's line. The checks run
before CUDA code is generated, so no NVRTC is needed."""
import pytest

import tilec
import tilec.language as T


def _error(func, target="sm_90a"):
    with pytest.raises(tilec.CompileError) as info:
        tilec.compile(func, target=target)
    return str(info.value)


def _tma_load(rows, cols, dtype="float16"):
    @T.prim_func
    def k(A: T.Tensor((rows, cols), dtype), B: T.Tensor((rows, cols), dtype)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((rows, cols), dtype)
            mbar = T.alloc_barrier(arrive_count=1)
            T.tma_copy(A, S, barrier=mbar[0])
            T.barrier_wait(mbar[0], 0)
            T.copy(S, B)

    return k


def _tma_store(**kwargs):
    @T.prim_func
    def k(A: T.Tensor((128, 64), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128, 64), "float16")
            T.copy(A, S)
            T.tma_copy(S, B, **kwargs)

    return k


def test_tma_copy_needs_a_target_with_tma():
    msg = _error(_tma_store(), target="sm_80")
    assert "T.tma_copy needs TMA (sm_90 or newer), the target is sm_80" in msg
    assert "T.tma_copy(S, B, **kwargs)" in msg and "hint: use T.copy, or compile for sm_90a" in msg


def test_tma_copy_of_a_shape_tma_cannot_copy_says_why():
    msg = _error(_tma_load(128, 4))  # 8-byte rows
    assert "T.tma_copy cannot use TMA: a TMA box row must be a multiple of 16 bytes" in msg


def test_tma_box_wider_than_256_columns_is_refused():
    # 4 rows cannot be swizzled, so the box would be the whole 512-column row.
    msg = _error(_tma_load(4, 512))
    assert "a TMA box is at most 256 elements wide, the tile has 512 columns" in msg


def test_cluster_mask_is_for_loads_only():
    msg = _error(_tma_store(cluster_mask=3))
    assert "cluster_mask on a store" in msg


def _ws_kernel(threads=256, nested=False):
    @T.prim_func
    def k(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            with T.ws(0):
                if nested:
                    with T.ws(0):
                        for i in T.Parallel(128):
                            A[i] = 1.0
                else:
                    for i in T.Parallel(128):
                        A[i] = 1.0

    return k


def test_ws_blocks_cannot_be_nested():
    assert "T.ws blocks cannot be nested" in _error(_ws_kernel(nested=True))


def test_ws_needs_whole_warp_groups():
    msg = _error(_ws_kernel(threads=96))
    assert "T.ws splits the block into warp groups of 128 threads, but the block has 96" in msg


def test_ws_outside_a_kernel_is_an_error():
    @T.prim_func
    def k(A: T.Tensor((128,), "float32")):
        with T.ws(0):
            A[0] = 1.0

    assert "T.ws outside a kernel" in _error(k)


def test_ws_needs_a_warp_group_index():
    with pytest.raises(tilec.CompileError, match="T.ws needs at least one warp-group index"):

        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                with T.ws():
                    A[0] = 1.0


def test_cluster_kernel_needs_cluster_dims():
    with pytest.raises(tilec.CompileError, match="T.ClusterKernel needs cluster_dims"):

        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.ClusterKernel(2, threads=128) as bx:
                A[bx] = 1.0


def test_alloc_barrier_needs_an_arrive_count():
    with pytest.raises(tilec.CompileError, match="T.alloc_barrier needs at least one arrive count"):

        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                m = T.alloc_barrier([])
                A[0] = 1.0


def test_wgmma_operand_with_an_unswizzled_annotated_layout_is_refused():
    @T.prim_func
    def g(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.annotate_layout({As: T.Layout((64, 64), lambda i, j: i * 64 + j)})
            T.clear(Cl)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cl)
            T.copy(Cl, C)

    msg = _error(g)
    assert "T.gemm (wgmma): the layout of shared buffer 'As'" in msg
    assert "is not a swizzled tile wgmma can read" in msg
