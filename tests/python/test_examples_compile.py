"""CI's view of the examples (no GPU): every example compiles with NVRTC for sm_80 and sm_90a,
and the generated code uses the instructions it is meant to (checked in the PTX):
  - the pipelined GEMM: on sm_80 mma.sync, ldmatrix, cp.async (with commit/wait groups); on
    sm_90a wgmma, TMA loads (cp.async.bulk.tensor) completing on mbarriers, warp
    specialization (setmaxnreg for two consumer warpgroups) — and no mma.sync;
  - memory-bound kernels: vector global accesses (8 or 16 bytes); reductions: warp shuffles.
Patterns are regular expressions.
On a GPU machine the examples also run and check themselves (tests/gpu/test_examples_gpu.py)."""
import importlib
import os
import re
import sys

import pytest

import tilec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

TARGETS = ["sm_80", "sm_90a"]


def _gemm():
    return importlib.import_module("gemm").matmul(1024, 1024, 1024, relu=True)


def _gemm_bf16_transposed():
    return importlib.import_module("gemm").matmul(512, 768, 256, dtype="bfloat16", trans_B=True)


def _gemm_big_tile():
    return importlib.import_module("gemm").matmul(4096, 4096, 4096, 128, 256, 32, dtype="bfloat16", threads=256)


VECTOR_LOAD = r"ld\.global(\.nc)?\.v[24]"

WGMMA = r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32"
TMA_LOAD = r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\.mbarrier::complete_tx::bytes"
MBAR_WAIT = r"mbarrier\.try_wait\.parity"
HOPPER_GEMM = [WGMMA, TMA_LOAD, MBAR_WAIT, "mbarrier.expect_tx", "wgmma.wait_group"]

# name -> (builder, PTX patterns (regular expressions) that must appear; a dict by target
# where the two targets differ, and patterns that must not appear under "absent")
EXAMPLES = {
    "gemm": (_gemm, {"sm_80": ["mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "cp.async.cg.shared.global",
                               "cp.async.commit_group", "cp.async.wait_group"],
                     "sm_90a": HOPPER_GEMM, "absent": {"sm_90a": ["mma.sync", "cp.async.cg"]}}),
    "gemm_bf16_tB": (_gemm_bf16_transposed,
                     {"sm_80": [r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32",
                                "ldmatrix.sync.aligned", "cp.async.cg.shared.global"],
                      "sm_90a": [r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.bf16\.bf16", TMA_LOAD]}),
    "gemm_128x256": (_gemm_big_tile, {"sm_80": ["mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "cp.async"],
                                      "sm_90a": HOPPER_GEMM + ["setmaxnreg.inc.sync.aligned.u32 240",
                                                               "setmaxnreg.dec.sync.aligned.u32 24"]}),
    "warp_specialized_gemm": (lambda: importlib.import_module("warp_specialized_gemm").ws_gemm(1024, 1024, 1024),
                              {"sm_80": None, "sm_90a": [WGMMA, TMA_LOAD, MBAR_WAIT, "mbarrier.arrive"]}),
    "elementwise_add": (lambda: importlib.import_module("elementwise_add").elementwise_add(), [r"ld\.global"]),
    "flash_attention_fp8": (lambda: importlib.import_module("flash_attention_fp8").flash_attention_fp8(2, 4, 1024, 128),
                            {"sm_80": None, "sm_90a": [r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3",
                                                       TMA_LOAD, MBAR_WAIT, "ex2.approx"]}),
    # a while loop around a software-pipelined main loop (not warp-specialized inside a loop)
    "gemm_streamk": (lambda: importlib.import_module("gemm_streamk").streamk_gemm(1024, 1024, 1024, 132),
                     {"sm_80": ["mma.sync.aligned.m16n8k16", "cp.async.cg.shared.global", r"(red|atom)\.global"],
                      "sm_90a": [WGMMA, "cp.async.cg.shared.global", r"(red|atom)\.global"]}),
    "softmax": (lambda: importlib.import_module("softmax").softmax(4096), ["shfl.sync.bfly", VECTOR_LOAD]),
    "rmsnorm": (lambda: importlib.import_module("rmsnorm").rmsnorm(4096), ["shfl.sync.bfly", VECTOR_LOAD]),
    "layernorm": (lambda: importlib.import_module("layernorm").layernorm(4096), ["shfl.sync.bfly"]),
    "gemv": (lambda: importlib.import_module("gemv").gemv(4096, 4096), ["shfl.sync.bfly"]),
    "reduction": (lambda: importlib.import_module("reduction").row_reduce(1024), ["shfl.sync.bfly"]),
    "cumsum": (lambda: importlib.import_module("cumsum").row_cumsum(512), ["bar.sync"]),
    "flash_attention_d64": (lambda: importlib.import_module("flash_attention").flash_attention(1, 8, 1024, 64),
                            {"sm_80": ["mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned",
                                       "cp.async.cg.shared.global", "shfl.sync.bfly", "ex2.approx"],
                             "sm_90a": [WGMMA, TMA_LOAD, "shfl.sync.bfly", "ex2.approx",
                                        # P @ V with P in registers: wgmma's register-A form
                                        r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{[^}]*\}, \{"]}),
    "flash_attention_d128": (lambda: importlib.import_module("flash_attention").flash_attention(2, 4, 512, 128),
                             {"sm_80": ["mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned",
                                        "cp.async.cg.shared.global"],
                              "sm_90a": [WGMMA, TMA_LOAD]}),
    "flash_attention_gqa_ragged_lse": (
        lambda: importlib.import_module("flash_attention").flash_attention(2, 8, 333, 128, True, heads_kv=2,
                                                                           seq_len_kv=517, return_lse=True),
        {"sm_80": ["mma.sync.aligned.m16n8k16", "cp.async.cg.shared.global", "ex2.approx"],
         "sm_90a": [WGMMA, TMA_LOAD]}),
    "flash_attention_d256": (
        lambda: importlib.import_module("flash_attention").flash_attention(1, 4, 512, 256, True, seq_len_kv=500),
        {"sm_80": ["mma.sync.aligned.m16n8k16"], "sm_90a": [WGMMA, TMA_LOAD]}),
    "flash_attention_bwd_d64": (
        lambda: importlib.import_module("flash_attention_bwd").flash_attention_bwd(2, 4, 333, 64, True)[1],
        {"sm_80": ["mma.sync.aligned.m16n8k16", "cp.async.cg.shared.global", r"(red|atom)\.global\.add\.f32"],
         "sm_90a": [WGMMA, TMA_LOAD, r"(red|atom)\.global\.add\.f32"]}),
    "flash_attention_bwd_d128": (
        lambda: importlib.import_module("flash_attention_bwd").flash_attention_bwd(1, 4, 256, 128, False, "bfloat16")[1],
        {"sm_80": None, "sm_90a": [WGMMA, TMA_LOAD]}),  # (sm_80: a few bytes of spills, see the example)
    "flash_attention_bwd_pre_post": (
        lambda: importlib.import_module("flash_attention_bwd").flash_attention_bwd(1, 4, 300, 64)[0], ["shfl.sync.bfly"]),
    # Paged: the page index is read from the block table, so the K/V copies are cp.async (TMA
    # warp specialization takes copies whose regions read no memory); the gemms are wgmma on sm_90a.
    "flash_decoding_split": (
        lambda: importlib.import_module("flash_decoding").flash_decoding(4, 32, 8, 128, 256, 64)[0],
        {"sm_80": ["mma.sync.aligned.m16n8k16", "cp.async.cg.shared.global", "ex2.approx"],
         "sm_90a": [WGMMA, TMA_LOAD, MBAR_WAIT, "ex2.approx"]}),  # the producer reads the block table
    "flash_decoding_mqa_bf16": (
        lambda: importlib.import_module("flash_decoding").flash_decoding(2, 128, 1, 64, 64, 32, dtype="bfloat16")[0],
        {"sm_80": None,  # (ptxas spills 8 bytes at 128 registers here)
         "sm_90a": [r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.bf16\.bf16"]}),
    "flash_decoding_combine": (
        lambda: importlib.import_module("flash_decoding").flash_decoding(4, 32, 8, 128, 256, 64)[1], ["ex2.approx"]),
    # Varlen: the copies' rows start at cu_seqlens (read from memory), so cp.async rather than TMA.
    "flash_attention_varlen": (
        lambda: importlib.import_module("flash_attention_varlen").flash_attention_varlen(3, 4, 64, 333, 400, 200, True, 2),
        {"sm_80": None, "sm_90a": [WGMMA, TMA_LOAD, MBAR_WAIT, "ex2.approx"]}),  # the producer reads cu_seqlens
    # MLA decoding: two stages of the 64 x 512 latent tile need sm_90's shared memory; sm_80 gets one.
    "mla_decode_sm80": (
        lambda: importlib.import_module("mla_decode").mla_decode(4, 128, 256, 64, num_stages=1)[0],
        {"sm_80": ["mma.sync.aligned.m16n8k16", "ex2.approx"], "sm_90a": None}),
    "mla_decode": (
        lambda: importlib.import_module("mla_decode").mla_decode(4, 128, 256, 64, dtype="bfloat16")[0],
        {"sm_80": None, "sm_90a": [r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16",
                                   TMA_LOAD, "fence.proxy.async"]}),
    "flash_attention_causal_bf16": (
        lambda: importlib.import_module("flash_attention").flash_attention(1, 4, 512, 64, is_causal=True,
                                                                           dtype="bfloat16"),
        {"sm_80": [r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32"],
         "sm_90a": [r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.bf16\.bf16"]}),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_compiles_with_intended_instructions(name, target):
    build, patterns = EXAMPLES[name]
    absent = []
    if isinstance(patterns, dict):
        absent = patterns.get("absent", {}).get(target, [])
        patterns = patterns[target]
    if patterns is None:
        pytest.skip(f"{name} is a {', '.join(t for t in TARGETS if t != target)} program")
    kernel = tilec.compile(build(), target=target)
    assert kernel.target == target
    ptx = kernel.get_ptx()
    assert ptx, "NVRTC returned no PTX"
    missing = [p for p in patterns if not re.search(p, ptx)]
    assert not missing, f"{name} for {target}: PTX lacks {missing}"
    present = [p for p in absent if re.search(p, ptx)]
    assert not present, f"{name} for {target}: PTX has {present}"
    info = kernel.ptxas_info
    assert info["registers"] > 0
    assert info["spill_stores_bytes"] == 0, f"{name} spills registers on {target}: {info}"


def test_gemm_main_loop_has_one_barrier_per_step():
    # overlap_gemm_mainloop moves the loop's one wait + barrier into tl::gemm_ss_overlap
    # (before its last k-step); the first of them stays in front of the loop.
    src = tilec.compile(_gemm(), target="sm_80").get_kernel_source()
    head, loop = src[:src.index("for (int ko")], src[src.index("for (int ko"):]
    loop = loop[:loop.index("tl::cp_async_wait(0)")]
    assert loop.count("__syncthreads()") == 0, src
    assert loop.count("tl::cp_async_wait") == 0, src
    assert loop.count("tl::gemm_ss_overlap<") == 1 and "tl::gemm_ss<" not in loop, src
    prefetch = head.index("tl::gemm_ss_prefetch<")
    assert head.rindex("__syncthreads()") < prefetch and head.rindex("tl::cp_async_wait(") < prefetch, src


def test_gemm_main_loop_without_overlap_has_one_barrier_per_step():
    src = tilec.compile(_gemm(), target="sm_80",
                        pass_configs={"tl.disable_gemm_overlap": True}).get_kernel_source()
    assert "gemm_ss_overlap" not in src and "gemm_frag" not in src, src
    loop = src[src.index("for (int ko"):]
    body = loop[:loop.index("tl::gemm_ss")]
    assert body.count("__syncthreads()") == 1, src


@pytest.mark.parametrize("target", TARGETS)
def test_flash_attention_feeds_p_from_registers(target):
    # P @ V reads P (the cast scores) from registers: tl::gemm_rs, and Q K^T stays tl::gemm_ss.
    fa = importlib.import_module("flash_attention")
    kernel = tilec.compile(fa.flash_attention(1, 8, 1024, 64), target=target)
    src = kernel.get_kernel_source()
    if target == "sm_90a":  # wgmma with A from registers; two warpgroups along M (FullRow)
        assert "tl::wgmma_gemm_rs<128, 64, 64, 2, 1, false, false, " in src, src
        assert "tl::wgmma_gemm_ss<128, 64, 64, 2, 1, false, true, " in src, src
        return
    assert "tl::gemm_rs<128, 64, 64, 8, 1, false, false, " in src, src
    assert "tl::gemm_ss<" in src or "tl::gemm_ss_overlap<" in src, src
    assert re.search("mma.sync.aligned.m16n8k16", kernel.get_ptx())


# The forward's variants that must keep the warp-specialized form on sm_90a (TMA producer,
# wgmma consumers): the common case, causal, GQA, ragged key/query lengths (masked by a fill of S
# before Q K^T, which leaves the loop's TMA copies and gemms as the pass wants them), the LSE output.
FLASH_FWD_WS_CASES = {
    "d64": ((1, 8, 1024, 64), {}),
    "d128_causal_bf16": ((2, 4, 512, 128, True), {"dtype": "bfloat16"}),
    "gqa_ragged_lse": ((2, 8, 333, 64), {"heads_kv": 2, "seq_len_kv": 517, "return_lse": True}),
    "causal_ragged_lse_d128": ((1, 6, 401, 128, True), {"heads_kv": 3, "seq_len_kv": 390, "return_lse": True}),
    "d256": ((1, 4, 512, 256), {"dtype": "bfloat16"}),
    # the sm_90 key blocks (ops.attention_kernels.HOPPER_BLOCK_N); 176 keys leave a ragged last step
    "hopper_blocks_d64": ((1, 8, 1024, 64), {"target": "sm_90a"}),
    "hopper_blocks_d128_causal": ((1, 4, 512, 128, True), {"dtype": "bfloat16", "target": "sm_90a"}),
    "hopper_blocks_d256_causal": ((1, 4, 400, 256, True), {"dtype": "bfloat16", "target": "sm_90a"}),
    # 176 keys non-causal from 8192 keys (a ragged last step)
    "hopper_blocks_d128": ((1, 2, 4200, 128), {"dtype": "bfloat16", "target": "sm_90a", "seq_len_kv": 8300}),
}


@pytest.mark.parametrize("case", sorted(FLASH_FWD_WS_CASES))
def test_flash_attention_stays_warp_specialized_on_sm90a(case):
    args, kwargs = FLASH_FWD_WS_CASES[case]
    kernel = tilec.compile(importlib.import_module("flash_attention").flash_attention(*args, **kwargs),
                           target="sm_90a")
    src, ptx = kernel.get_kernel_source(), kernel.get_ptx()
    assert "tl::tma_load" in src and "wgmma.mma_async" in src and "tl::wgmma_gemm_rs<" in src, src
    assert re.search(WGMMA, ptx) and re.search(TMA_LOAD, ptx) and "setmaxnreg" in ptx
    assert kernel.ptxas_info["spill_stores_bytes"] == 0, kernel.ptxas_info


def test_flash_attention_masks_only_ragged_key_blocks():
    # A key length that is a multiple of block_N compiles without the mask (S is cleared).
    fa = importlib.import_module("flash_attention")
    plain = tilec.compile(fa.flash_attention(1, 4, 512, 64), target="sm_80").get_kernel_source()
    ragged = tilec.compile(fa.flash_attention(1, 4, 512, 64, seq_len_kv=500), target="sm_80").get_kernel_source()
    loop = ragged[ragged.index("#pragma unroll 2"):]
    assert "tl::select(" in loop and "(500)" in loop and "infinity" in loop, ragged
    assert "tl::select" not in plain, plain


def test_mla_decode_orders_p_stores_before_the_pv_gemm():
    # P goes through shared memory (S_shared): a barrier (after the async-proxy fence) must separate
    # the threads' stores from the wgmma that reads it. A loop trip count read from cache_seqlens
    # used to lose these barriers (fixed: tests/python/test_sync_gaps.py); the example still keeps
    # its static trip count. Warp-specialized (the consumers' named barrier) and not.
    for ws in (True, False):
        src = tilec.compile(importlib.import_module("mla_decode").mla_decode(2, 128, 64, 16)[0], target="sm_90a",
                            pass_configs={"tilec.ws_indirect_copies": ws}).get_kernel_source()
        loop = src[src.index("for (int p"):]
        between = loop[loop.index("&S_shared["):loop.index("(&S_shared[0]")]
        barrier = "tl::named_barrier_sync(1, 256);" if ws else "__syncthreads();"
        assert re.search(r"tl::fence_proxy_async\(\);\n\s*" + re.escape(barrier), between), between


def test_flash_attention_option_errors():
    fa = importlib.import_module("flash_attention")
    with pytest.raises(ValueError, match=r"heads_kv \(3\) must divide heads \(8\)"):
        fa.flash_attention(1, 8, 256, 64, heads_kv=3)
    with pytest.raises(ValueError, match=r"seq_len_kv \(40\) must be at least .* block_N \(64\)"):
        fa.flash_attention(1, 4, 256, 64, seq_len_kv=40)
    with pytest.raises(ValueError, match=r"head dim 96 is not supported"):
        fa.flash_attention(1, 4, 256, 96)


def test_gemm_overlap_is_dropped_when_it_makes_ptxas_spill():
    # 256x128x64, 3 stages, 256 threads: with the operand fragments carried across the loop
    # ptxas (CUDA 13.0) spills a few registers; tilec then keeps the kernel built without the
    # overlap. An explicit tl.disable_gemm_overlap=False is the user's choice and is kept.
    import warnings

    f = importlib.import_module("gemm").matmul(4096, 4096, 4096, 256, 128, 64, dtype="bfloat16", threads=256)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the forced variant may warn about its spills
        forced = tilec.compile(f, target="sm_90a", pass_configs={"tl.disable_gemm_overlap": False,
                                                                 "tl.disable_wgmma": True})
    auto = tilec.compile(f, target="sm_90a", pass_configs={"tl.disable_wgmma": True})

    def spills(k):
        return k.ptxas_info["spill_stores_bytes"] + k.ptxas_info["spill_loads_bytes"]

    assert "tl::gemm_ss_overlap<" in forced.get_kernel_source()
    if spills(forced) > 0:
        assert "gemm_ss_overlap" not in auto.get_kernel_source() and spills(auto) < spills(forced)
    else:  # another ptxas: nothing to fall back from
        assert auto.get_kernel_source() == forced.get_kernel_source()


@pytest.mark.parametrize("target", TARGETS)
def test_cumsum_keeps_the_barriers_between_its_phases(target):
    # Regressions (found on the H200): the scan's loops read what other threads wrote; only the
    # register loops of copies between two buffers may skip barriers across iterations. And
    # its 4-row shared tile has no swizzled TMA form (a 128B swizzle period is 8 rows): its
    # 512-column rows are wider than a TMA box, so the store stays a plain copy.
    src = tilec.compile(importlib.import_module("cumsum").row_cumsum(512), target=target).get_kernel_source()
    assert src.count("__syncthreads();") == 4, src  # fill | scan | totals | (store, in both arms)
    assert "tma_store" not in src, src


def test_fragment_to_shared_copy_needs_one_barrier_not_one_per_register():
    # The epilogue copy C_local -> C_shared (swizzled) of a warp-specialized GEMM: one barrier
    # before it (the stage buffers it may share bytes with), none inside its register loop.
    bench = os.path.join(ROOT, "bench")
    sys.path.insert(0, bench)
    import tilec.language as T
    from peer_gemm import program

    src = tilec.compile(program(T, 1024, 1024, 1024, 128, 256, 64, 3, 256, "bfloat16"), target="sm_90a",
                        pass_configs={"tilec.persistent": False}).get_kernel_source()
    epilogue = src[src.index("tl::wgmma_wait<0>();"):src.index("tl::tma_store(")]
    assert epilogue.count("named_barrier_sync") == 2, epilogue  # before the copy, before the TMA store
