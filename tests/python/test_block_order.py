"""order_blocks_by_work: a kernel whose main loop runs longer for later blocks (causal
attention) is launched longest block first; other kernels keep the launch order."""
import os
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _triangle(grow=True, n=8):
    @T.prim_func
    def tri(A: T.Tensor((n * 64, 64), "float32"), C: T.Tensor((n * 64, 64), "float32")):
        with T.Kernel(n, threads=128) as bx:
            acc = T.alloc_fragment((64, 64), "float32")
            tile = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.serial(bx + 1 if grow else n - bx):
                T.copy(A[k * 64, 0], tile)
                for i, j in T.Parallel(64, 64):
                    acc[i, j] += tile[i, j]
            T.copy(acc, C[bx * 64, 0])

    return tri


def _src(f, target="sm_80", **pc):
    return tilec.compile(f, target=target, pass_configs=pc or None).get_kernel_source()


def test_growing_trip_count_launches_the_last_block_first():
    src = _src(_triangle())
    assert "const int bx_hw = blockIdx.x;" in src and "const int bx = 7 - bx_hw;" in src, src


def test_other_kernels_keep_their_order():
    assert "bx_hw" not in _src(_triangle(grow=False))
    assert "bx_hw" not in _src(_triangle(), **{"tilec.longest_blocks_first": False})


def test_causal_attention_is_reordered():
    from flash_attention import flash_attention

    assert "const int bx = 3 - bx_hw;" in _src(flash_attention(1, 2, 512, 64, True), target="sm_90a")
    assert "bx_hw" not in _src(flash_attention(1, 2, 512, 64, False), target="sm_90a")

