"""A T.copy region of a global tensor that runs past the tensor's end (TileLang predicates the
copy): the rows outside are not read and the tile gets zeros there. Starting outside stays an
error; so does a region larger than a shared or fragment buffer."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def test_copy_from_global_past_its_end_zero_fills():
    @T.prim_func
    def clipped(F: T.Tensor((24, 256), T.float32), O: T.Tensor((32, 64), T.float32)):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((32, 64), T.float32)
            T.copy(F[0, bx * 64], s)  # 32 rows of a 24-row tensor
            T.copy(s, O)

    src = tilec.compile(clipped, target="sm_90a").get_kernel_source()
    assert "k_1 * 8 + tx / 16 < 24 ? F[" in src and ": 0.0f;" in src, src


def test_copy_starting_outside_the_tensor_is_an_error():
    with pytest.raises(CompileError, match="starts at 30 in dimension 0 but the buffer's extent there is 24"):
        @T.prim_func
        def outside(F: T.Tensor((24, 64), T.float32), O: T.Tensor((8, 64), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                s = T.alloc_shared((8, 64), T.float32)
                T.copy(F[30:38, :], s)
                T.copy(s, O)

        tilec.compile(outside, target="sm_90a")


def test_region_larger_than_a_shared_buffer_is_still_an_error():
    with pytest.raises(CompileError, match="has extent 64 in dimension 0 but the buffer's extent there is 32"):
        @T.prim_func
        def too_big(F: T.Tensor((64, 64), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                s = T.alloc_shared((32, 64), T.float32)
                T.copy(F, s[0:64, :])

        tilec.compile(too_big, target="sm_90a")
