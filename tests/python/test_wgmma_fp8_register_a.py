"""fp8 wgmma with A from registers (no GPU: NVRTC and the generated source and PTX). FlashAttention-3's
fp8 form — P = T.copy of the QK^T accumulator into an fp8 fragment that P @ V reads — keeps P in
registers: the copy becomes tl::wgmma_acc_to_a8 (fp8 rounding and a shuffle within each quad) and
the gemm a register-A wgmma; no shared-memory stage, no spill. Every other fp8 A fragment is staged
through shared memory as before (stage_gemm_operands): written by a T.Parallel loop, or copied from
an accumulator split across warpgroups along N. The device exchange itself is checked lane by lane
in tests/cpp/wgmma_a8_test.cc; the examples run on the H200 in tests/gpu."""
import importlib
import os
import re
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _attention_like(p_dtype="float8_e4m3", qk_policy=T.GemmWarpPolicy.FullRow, p_from="copy", explicit_pv=False):
    """S = Q K^T (fp8), P = fp8 of S, O = P Vt^T; 256 threads, 128 x 128 tiles. `explicit_pv`: the
    P V gemm as T.wgmma_gemm (nothing is staged for it)."""
    fp8 = "float8_e4m3"

    @T.prim_func
    def attn(Q: T.Tensor((128, 64), fp8), K: T.Tensor((128, 64), fp8), Vt: T.Tensor((64, 128), fp8),
             O: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            Qs = T.alloc_shared((128, 64), fp8)
            Ks = T.alloc_shared((128, 64), fp8)
            Vs = T.alloc_shared((64, 128), fp8)
            S = T.alloc_fragment((128, 128), "float32")
            P = T.alloc_fragment((128, 128), p_dtype)
            Oa = T.alloc_fragment((128, 64), "float32")
            T.copy(Q, Qs)
            T.copy(K, Ks)
            T.copy(Vt, Vs)
            T.gemm(Qs, Ks, S, transpose_B=True, clear_accum=True, policy=qk_policy)
            if p_from == "copy":
                T.copy(S, P)
            else:
                for i, j in T.Parallel(128, 128):
                    P[i, j] = S[i, j] * 0.5
            if explicit_pv:
                T.wgmma_gemm(P, Vs, Oa, transpose_B=True, clear_accum=True)
            else:
                T.gemm(P, Vs, Oa, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(Oa, O)

    return attn


def test_fp8_flash_attention_keeps_p_in_registers():
    fa8 = importlib.import_module("flash_attention_fp8")
    kernel = tilec.compile(fa8.flash_attention_fp8(2, 4, 1024, 128, p_in_registers=True), target="sm_90a")
    src, ptx = kernel.get_kernel_source(), kernel.get_ptx()
    # two warpgroups along M, one 64-row atom each, K = block_N = 128 columns of P
    assert "tl::wgmma_acc_to_a8<1, 128, false>(&acc_s[0], &P[0], tx)" in src
    assert re.search(r"tl::wgmma_gemm_rs<128, 128, 128, 2, 1, true, false, [^>]*>, tl::kWgmmaE4M3E4M3", src)
    assert "P_stage" not in src
    # the register-A wgmma and the exchange: shuffles within quads and byte permutes
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3\s+\{[^}]*\},\s*\{%r", ptx)
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and "shfl.sync.idx.b32" in ptx and "prmt.b32" in ptx
    assert kernel.ptxas_info["spill_stores_bytes"] == 0, kernel.ptxas_info


@pytest.mark.parametrize("causal", [False, True])
def test_fp8_flash_attention_one_warpgroup_keeps_p_in_registers(causal):
    fa8 = importlib.import_module("flash_attention_fp8")
    kernel = tilec.compile(fa8.flash_attention_fp8(1, 2, 1000, 64, causal, block_M=64, block_N=64, threads=128,
                                                   p_in_registers=True), target="sm_90a")
    src = kernel.get_kernel_source()
    assert "tl::wgmma_acc_to_a8<1, 64, false>(&acc_s[0], &P[0], tx)" in src
    assert "tl::wgmma_gemm_rs<64, 64, 64, 1, 1, true" in src
    assert kernel.ptxas_info["spill_stores_bytes"] == 0, kernel.ptxas_info


def test_fp8_flash_attention_through_shared_memory_is_unchanged():
    fa8 = importlib.import_module("flash_attention_fp8")
    src = tilec.compile(fa8.flash_attention_fp8(2, 4, 1024, 128, p_in_registers=False),
                        target="sm_90a").get_kernel_source()
    assert "wgmma_acc_to_a8" not in src and "wgmma_gemm_rs" not in src


@pytest.mark.parametrize("p_dtype, kind, e5m2", [("float8_e4m3", "kWgmmaE4M3E4M3", "false"),
                                                  ("float8_e5m2", "kWgmmaE5M2E4M3", "true")])
def test_accumulator_copied_to_fp8_feeds_a_register_wgmma(p_dtype, kind, e5m2):
    kernel = tilec.compile(_attention_like(p_dtype), target="sm_90a")
    src = kernel.get_kernel_source()
    assert f"tl::wgmma_acc_to_a8<1, 128, {e5m2}>(&S[0], &P[0], tx)" in src
    assert re.search(rf"tl::wgmma_gemm_rs<[^;]*tl::{kind}", src)
    if e5m2 == "true":
        assert "cvt.rn.satfinite.e5m2x2.f32" in kernel.get_ptx()


def test_accumulator_split_along_n_is_staged_as_before():
    # FullCol splits S over the two warpgroups along N: its registers are not P's rows.
    src = tilec.compile(_attention_like(qk_policy=T.GemmWarpPolicy.FullCol), target="sm_90a").get_kernel_source()
    assert "wgmma_acc_to_a8" not in src and "wgmma_gemm_rs" not in src
    assert "P_stage" in src


def test_fp8_fragment_written_by_a_parallel_loop_is_staged_as_before():
    src = tilec.compile(_attention_like(p_from="parallel"), target="sm_90a").get_kernel_source()
    assert "wgmma_acc_to_a8" not in src and "wgmma_gemm_rs" not in src
    assert "P_stage" in src


def test_explicit_register_a_from_another_layout_is_a_layout_conflict():
    # With the gemm's instruction given, nothing is staged: S split along N cannot become P's
    # register-A layout by a shuffle within quads, and the compiler says so instead of copying
    # registers that other threads hold.
    with pytest.raises(tilec.CompileError, match="layout conflict on fragment 'P'"):
        tilec.compile(_attention_like(qk_policy=T.GemmWarpPolicy.FullCol, explicit_pv=True), target="sm_90a")
