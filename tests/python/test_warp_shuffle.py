"""Warp shuffles (TileLang's T.shfl_xor/down/up/sync, TVM's T.tvm_warp_shuffle(_down/_up)) lower
to the device library's full-warp shuffles; a width below 32 becomes a source lane within this
lane's segment."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def _source(body):
    @T.prim_func
    def shuffles(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding(0)
            v = T.alloc_local((2,), T.float32)
            v[0] = A[tx]
            v[1] = body(v[0], tx)
            B[tx] = v[1]

    return tilec.compile(shuffles, target="sm_90a").get_kernel_source()


def test_full_warp_shuffles():
    assert "tl::shfl_xor(v[0], 4)" in _source(lambda x, tx: T.shfl_xor(x, 4))
    assert "tl::shfl_down(v[0], 1)" in _source(lambda x, tx: T.shfl_down(x, 1))
    assert "tl::shfl_up(v[0], 2)" in _source(lambda x, tx: T.shfl_up(x, 2))
    assert "tl::shfl_idx(v[0], 5)" in _source(lambda x, tx: T.tvm_warp_shuffle(0xFFFFFFFF, x, 5, 32, 32))


def test_a_narrow_width_shuffles_within_the_segment():
    src = _source(lambda x, tx: T.tvm_warp_shuffle(0xFFFFFFFF, x, tx ^ 1, 8, 8))
    line = next(ln for ln in src.splitlines() if "shfl_idx" in ln)
    # lane L reads lane (L - L % 8) + (src % 8)
    assert "% 8" in line and "% 32" in line


def test_a_narrow_shuffle_down_keeps_every_lane_in_the_shuffle():
    src = _source(lambda x, tx: T.tvm_warp_shuffle_down(0xFFFFFFFF, x, 1, 8, 32))
    line = next(ln for ln in src.splitlines() if "shfl_idx" in ln)
    assert "?" in line.split("shfl_idx", 1)[1]  # the source lane is selected, the shuffle is not


def test_shfl_sync_is_tvm_warp_shuffle():
    assert "tl::shfl_idx(v[0], 0)" in _source(lambda x, tx: T.shfl_sync(0xFFFFFFFF, x, 0))


def test_width_must_be_a_power_of_two():
    with pytest.raises(CompileError, match="power of two"):
        _source(lambda x, tx: T.tvm_warp_shuffle(0xFFFFFFFF, x, 0, 12, 32))
