"""copy_stmatrix (src/ops/copy_stmatrix.cc): under tilec.stmatrix, T.copy of a whole 16-bit
fragment into a shared buffer of its dtype is stmatrix.x4 on sm_90 where the fragment's layout
holds 8 x 8 matrices; elsewhere (sm_80, the config off, a cast on the way) the per-pair stores."""
import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _program(cast=False, N=128):
    dt = "bfloat16"

    @T.prim_func
    def f(A: T.Tensor((128, 64), dt), B: T.Tensor((N, 64), dt), C: T.Tensor((128, N), dt)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((128, 64), dt)
            B_s = T.alloc_shared((N, 64), dt)
            C_s = T.alloc_shared((128, N), dt)
            acc = T.alloc_fragment((128, N), "float32")
            c16 = T.alloc_fragment((128, N), dt)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            T.gemm(A_s, B_s, acc, transpose_B=True)
            if cast:
                T.copy(acc, C_s)
            else:
                T.copy(acc, c16)
                T.copy(c16, C_s)
            T.copy(C_s, C)

    return f


def _src(prog, target="sm_90a", on=True):
    return tilec.compile(prog, target=target, pass_configs={"tilec.stmatrix": on}).get_kernel_source()


def test_a_wgmma_accumulator_goes_to_shared_by_stmatrix():
    src = _src(_program())
    # 128 x 128 on 256 threads: 64 elements a thread, 8 groups of four pairs, one call with the
    # registers and a row address per group (the sync pass sees one write, no barrier between)
    call = [line.strip() for line in src.splitlines() if "tl::stmatrix_x4(" in line]
    assert len(call) == 1 and call[0].startswith("tl::stmatrix_x4(&c16[0], &C_s[") and call[0].count("&C_s[") == 8, src
    assert "tl::store(&C_s[" not in src, src


def test_the_per_pair_stores_elsewhere():
    for src in (_src(_program(), on=False), _src(_program(), target="sm_80"), _src(_program(cast=True))):
        assert "stmatrix" not in src, src


def test_the_backward_stores_ds_by_stmatrix():
    from tilec.ops.attention_kernels import BACKWARD_PASS_CONFIGS, flash_attention_bwd

    for dim in (64, 128):
        main = flash_attention_bwd(1, 2, 512, dim, False, dtype="bfloat16", target="sm_90a")[1]
        src = tilec.compile(main, target="sm_90a",
                            pass_configs={**BACKWARD_PASS_CONFIGS, "tilec.stmatrix": True}).get_kernel_source()
        assert "tl::stmatrix_x4(&dsT_cast[0], &dsT_shared[" in src and "tl::store(&dsT_shared[" not in src, src
        # as many barriers as the per-pair stores get
        plain = tilec.compile(main, target="sm_90a", pass_configs=BACKWARD_PASS_CONFIGS).get_kernel_source()
        assert src.count("named_barrier_sync") == plain.count("named_barrier_sync"), src
