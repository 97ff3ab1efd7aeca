"""fuse_clear_into_gemm: T.clear(C) right before T.gemm(A, B, C) becomes the gemm with
clear_accum=True (attention's S = Q K^T: no zeroing loop per step)."""
import os
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _kernel(between=False, one=False):
    @T.prim_func
    def k(A: T.Tensor((256, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((256, 64), "float32")):
        with T.Kernel(4, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.copy(A[bx * 64, 0], As)
            T.copy(B, Bs)
            if one:
                T.fill(acc, 1.0)
            else:
                T.clear(acc)
            if between:
                for i, j in T.Parallel(64, 64):
                    acc[i, j] = acc[i, j] + 1.0
            T.gemm(As, Bs, acc)
            T.copy(acc, C[bx * 64, 0])

    return k


def _src(f, target="sm_90a", **pc):
    return tilec.compile(f, target=target, pass_configs=pc or None).get_kernel_source()


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_clear_then_gemm_becomes_a_clearing_gemm(target):
    src = _src(_kernel(), target)
    body = src[src.index("__global__"):]
    assert "broadcast<2>(0.0f)" not in body and "= 0.0f" not in body, body
    kept = _src(_kernel(), target, **{"tilec.fuse_clear_into_gemm": False})
    assert "0.0f" in kept[kept.index("__global__"):]


def test_anything_between_or_a_nonzero_fill_is_kept():
    body = _src(_kernel(between=True))[_src(_kernel(between=True)).index("__global__"):]
    assert "0.0f" in body, body
    body = _src(_kernel(one=True))[_src(_kernel(one=True)).index("__global__"):]
    assert "1.0f" in body, body


def test_attention_step_gemm_clears_its_accumulator_itself():
    from flash_attention import flash_attention

    src = _src(flash_attention(1, 2, 512, 128))
    assert "tl::wgmma_gemm_ss<128, 128, 128, 2, 1, false, true, true," in src, src
    zeroing = [ln for ln in src.splitlines() if "tl::store(&acc_s[" in ln and "broadcast<2>(0.0f)" in ln]
    assert not zeroing, zeroing
    assert any("tl::store(&acc_o[" in ln and "broadcast<2>(0.0f)" in ln for ln in src.splitlines())  # O still cleared


def _lines(src, needle):
    return [ln for ln in src.splitlines() if needle in ln]


@pytest.mark.parametrize("causal,seq_kv", [(True, 512), (False, 500)])
def test_a_mask_that_holds_on_the_whole_tile_becomes_the_gemms_clear(causal, seq_kv):
    # unswitch_uniform_conditions + the run-time clear: on steps where no score of the tile is
    # masked (all but the diagonal / the last block), S = Q K^T is a clearing gemm (clear_if)
    # and the branch only marks S's old registers dead; the masked copy stays on the other side.
    from flash_attention import flash_attention

    src = _src(flash_attention(1, 2, 512, 128, is_causal=causal, seq_len_kv=seq_kv))
    gemms = _lines(src, "tl::wgmma_gemm_ss<128, 128, 128, 2, 1, false, true, false,")
    assert gemms and all(not g.rstrip().endswith("tx);") for g in gemms), gemms  # a condition is passed last
    assert _lines(src, "tl::wgmma_undefine_operands<64>(&acc_s[0]);"), src
    assert _lines(src, "tl::select("), src  # the masked steps
    off = _src(flash_attention(1, 2, 512, 128, is_causal=causal, seq_len_kv=seq_kv),
               **{"tilec.unswitch_uniform_conditions": False})
    assert not _lines(off, "wgmma_undefine_operands<64>(&acc_s")
    assert all(g.rstrip().endswith("tx);") for g in _lines(off, "tl::wgmma_gemm_ss<128, 128, 128, 2, 1, false, true,"))


def test_on_sm80_the_unmasked_steps_clear_instead_of_masking():
    from flash_attention import flash_attention

    src = _src(flash_attention(1, 2, 512, 128, is_causal=True), "sm_80")
    assert "tl::gemm_ss<" in src and "wgmma" not in src
    assert _lines(src, "tl::store(&acc_s[") and _lines(src, "tl::select("), src
    body = src[src.index("__global__"):]
    assert "} else {" in body, body  # the unswitched mask: clear on one side, masked on the other
