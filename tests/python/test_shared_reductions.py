"""T.reduce_* on shared tiles (TileLang reduces shared buffers too; upstream's mHC backward and
KDA kernels do): the pass stage_shared_reductions reduces fragments shaped like the regions in
between, copying a shared input in and a shared output out (and in first when clear=False)."""
import numpy as np
import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _program(clear=True, src_shared=True, dst_shared=True):
    @T.prim_func
    def f(A: T.Tensor((64, 128), T.float32), R: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 128), T.float32)
            a_f = T.alloc_fragment((64, 128), T.float32)
            row_s = T.alloc_shared((64,), T.float32)
            row_f = T.alloc_fragment((64,), T.float32)
            T.copy(A, a_s)
            T.copy(A, a_f)
            if not clear:
                for i in T.Parallel(64):
                    row_s[i] = 1.0
                    row_f[i] = 1.0
            T.reduce_sum(a_s if src_shared else a_f, row_s if dst_shared else row_f, dim=1, clear=clear)
            if dst_shared:
                T.copy(row_s, R)
            else:
                T.copy(row_f, R)

    return f


@pytest.mark.parametrize("src_shared,dst_shared", [(True, True), (True, False), (False, True)])
def test_shared_reductions_go_through_fragments(src_shared, dst_shared):
    src = tilec.compile(_program(True, src_shared, dst_shared), target="sm_90a").get_kernel_source()
    assert ("a_s_frag" in src) == src_shared, src
    assert ("row_s_frag" in src) == dst_shared, src
    assert "tl::shfl_xor" in src  # the fragment reduction across lanes


def test_clear_false_reads_the_shared_output_first():
    src = tilec.compile(_program(clear=False), target="sm_90a").get_kernel_source()
    body = src[src.index("row_s_frag["):]
    # row_s -> row_s_frag comes before the reduction combines into it.
    assert body.index("= row_s[") < body.index("row_s_frag_red"), src


def test_fragment_reductions_are_unchanged():
    src = tilec.compile(_program(True, False, False), target="sm_90a").get_kernel_source()
    assert "_frag" not in src.replace("row_f", "").replace("a_f", ""), src


@pytest.mark.parametrize("clear", [True, False])
def test_cpu_target_agrees(clear):
    # The CPU target reduces shared tiles at the tile level (independent of the pass).
    A = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float32)
    R = np.zeros(64, np.float32)
    tilec.compile(_program(clear), target="cpu")(A, R)
    np.testing.assert_allclose(R, A.sum(1) + (0.0 if clear else 1.0), rtol=1e-5, atol=1e-5)
