"""tilec.ops without torch: the package imports no torch, and the FlashAttention programs behind
tilec.ops.flash_attn (python/tilec/ops/attention_kernels.py) check their options and compile, in
the configurations the op picks, for sm_80 and sm_90a (NVRTC, no GPU)."""
import subprocess
import sys

import pytest

import tilec
from tilec.ops import attention_kernels as K


def test_tilec_and_tilec_ops_import_without_torch():
    code = ("import sys, tilec, tilec.ops, tilec.ops.attention_kernels; "
            "print('torch' in sys.modules, 'flash_attn' in dir(tilec.ops))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_unknown_ops_attribute_is_an_attribute_error():
    import tilec.ops

    with pytest.raises(AttributeError, match="has no attribute 'no_such_op'"):
        tilec.ops.no_such_op  # noqa: B018


def test_forward_blocks():
    # no target / sm_80 / the CPU target: the sizes that fit sm_80
    for target in (None, "sm_80", "cpu"):
        assert K.forward_blocks(4096, 4096, 128, target=target) == (128, 128, 256)
        assert K.forward_blocks(4096, 4096, 64, True, target=target) == (128, 64, 256)
        assert K.forward_blocks(8192, 8192, 64, target=target) == (128, 64, 256)
        assert K.forward_blocks(4096, 4096, 256, target=target) == (128, 32, 256)
        assert K.forward_blocks(100, 100, 128, target=target) == (64, 64, 128)   # short queries, short keys
        assert K.forward_blocks(64, 64, 256, target=target) == (64, 32, 128)
    # sm_90: the sizes measured best on the H200 (d128 176 keys from 4096 causal, 8192 not), 64 when the keys are fewer
    for target in ("sm_90a", "sm_90", {"kind": "cuda", "arch": "sm_90a"}):
        # d64: 192 query rows on three consumer warpgroups from 2048 queries (causal: 8192)
        assert K.forward_blocks(4096, 4096, 64, target=target) == (192, 128, 384)
        assert K.forward_blocks(2048, 300, 64, target=target) == (192, 128, 384)
        assert K.forward_blocks(1024, 4096, 64, target=target) == (128, 128, 256)
        assert K.forward_blocks(4096, 4096, 64, True, target=target) == (128, 128, 256)
        assert K.forward_blocks(8192, 8192, 64, True, target=target) == (192, 128, 384)
        assert K.forward_blocks(4096, 4096, 128, target=target) == (128, 128, 256)
        assert K.forward_blocks(4096, 8192, 128, target=target) == (128, 176, 256)
        assert K.forward_blocks(4096, 4096, 128, True, target=target) == (128, 176, 256)
        assert K.forward_blocks(4096, 4096, 256, target=target) == (128, 128, 256)
        assert K.forward_blocks(4096, 4096, 256, True, target=target) == (128, 128, 256)
        assert K.forward_blocks(4096, 100, 256, target=target) == (128, 64, 256)
        assert K.forward_blocks(4096, 150, 128, True, target=target) == (128, 128, 256)
        assert K.forward_blocks(4096, 100, 128, True, target=target) == (128, 64, 256)
        assert K.forward_blocks(2048, 2048, 128, True, target=target) == (128, 128, 256)  # short: 128
    with pytest.raises(tilec.CompileError, match="unknown target 'sm_77'"):
        K.forward_blocks(4096, 4096, 128, target="sm_77")


def test_forward_stages_fit_beside_q():
    # two stages of K and V beside Q in 227 KiB, else one (head dim 256 with 128-key blocks)
    assert K.forward_stages(128, 128, 256) == 1
    assert K.forward_stages(128, 80, 256) == 2
    assert K.forward_stages(128, 176, 128) == 2
    assert K.forward_stages(192, 128, 64) == 2


def test_backward_blocks_per_target():
    for target in ("sm_90a", "sm_90"):
        assert K.backward_blocks(4096, 4096, 64, target) == (128, 128, 256)
        assert K.backward_blocks(4096, 4096, 128, target) == (128, 64, 256)
        assert K.backward_blocks(100, 4096, 64, target) == (64, 32, 128)
    for target in (None, "sm_80", "cpu"):
        assert K.backward_blocks(4096, 4096, 64, target) == (128, 64, 256)
    assert K.backward_blocks(4096, 4096, 256, "sm_90a") == (64, 32, 128)


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
def test_head_dim_256_step_runs_serially_when_rotation_would_spill():
    """warp_specialize rotates the attention step (S_k beside P_{k-1} V_{k-1}) only where the
    fragments leave registers for the rest: head dim 256 with 128-key blocks (226 registers of
    fragments of 240) runs serially, as with tilec.intra_wg_overlap off, and spills nothing; with
    80-key blocks (190) it rotates."""
    def src(block_N, **configs):
        prog = K.flash_attention(1, 2, 1024, 256, False, block_N=block_N, dtype="bfloat16", target="sm_90a")
        k = tilec.compile(prog, target="sm_90a", pass_configs={**K.PASS_CONFIGS, **configs})
        return k.get_kernel_source(), k.ptxas_info["spill_stores_bytes"]

    serial, spills = src(128)
    assert spills == 0 and "wgmma_gemm" in serial
    assert serial == src(128, **{"tilec.intra_wg_overlap": False})[0]
    assert "% 2" not in serial.split("setmaxnreg_inc")[1].split("for (int k")[1][:400]  # one stage: no slot index
    assert src(80)[0] != src(80, **{"tilec.intra_wg_overlap": False})[0]


def test_forward_program_takes_the_targets_block():
    # block_N left out: the key block of the target named; "auto" without a GPU: the portable one
    def src(**kw):
        return tilec.compile(K.flash_attention(1, 2, 4096, 128, True, dtype="bfloat16", **kw),
                             target="sm_90a").get_kernel_source()

    assert src(target="sm_90a") == src(block_N=176) != src(block_N=128)
    if not tilec._tilec.driver_available()[0]:
        assert src(target="auto") == src() == src(block_N=128)


def test_resolve_target():
    assert tilec.resolve_target("sm_80") == "sm_80"
    assert tilec.resolve_target("cuda -arch=sm_90a") == "sm_90a"
    assert tilec.resolve_target({"kind": "cuda", "arch": "sm_90"}) == "sm_90"
    assert tilec.resolve_target("cpu") == "cpu"
    with pytest.raises(tilec.CompileError, match="unknown target"):
        tilec.resolve_target("sm_77")
    if not tilec._tilec.driver_available()[0]:
        with pytest.raises(tilec.CompileError, match="no GPU found"):
            tilec.resolve_target("auto")


def test_backward_blocks():
    assert K.backward_blocks(4096, 4096, 64) == (128, 64, 256)
    assert K.backward_blocks(4096, 4096, 128) == (128, 64, 256)
    assert K.backward_blocks(4096, 4096, 256) == (64, 32, 128)   # head dim 256: the small blocks
    assert K.backward_blocks(4096, 100, 128) == (64, 32, 128)    # fewer keys than a 128-key block
    assert K.backward_blocks(100, 4096, 64) == (64, 32, 128)     # fewer queries than a 128-key block
    # the backward's main kernel without blocks given is the one with these blocks
    default, given = (tilec.compile(K.flash_attention_bwd(1, 2, 512, 64, **sizes)[1], target="sm_90a")
                      for sizes in ({}, {"block_M": 128, "block_N": 64, "threads": 256}))
    assert default.get_kernel_source() == given.get_kernel_source()


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
@pytest.mark.parametrize("seq,rows_in_shared", [(512, True), (333, False)])
def test_backward_reads_lse_rows_from_shared_where_tma_can_load_them(seq, rows_in_shared):
    """rows_in_shared's default: on when the LSE / Delta rows (seq_len float32 values) have a
    stride TMA takes (16-byte multiples); else in place, so that the loop stays warp-specialized."""
    k = tilec.compile(K.flash_attention_bwd(1, 2, seq, 64, True)[1], target="sm_90a")
    src = k.get_kernel_source()
    assert ("tma_load(&lse_shared[" in src) == rows_in_shared
    assert "setmaxnreg_inc" in src and "tl::wgmma_wait<1>();" in src  # warp-specialized, P overlapped
    assert k.ptxas_info["spill_stores_bytes"] == 0


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
def test_backward_dv_gemm_runs_across_ds_under_deferred_waits():
    """dv_before_ds: the dV gemm is left running (wg_wait=-1) and T.wait_wgmma(1) waits for dP^T
    only. With tilec.defer_gemm_waits the consumer step honors that (the gemm's slot is released
    after the dK gemm's wait); without it the slot release waits for the gemm at once."""
    main = K.flash_attention_bwd(1, 2, 512, 64, False, dv_before_ds=True)[1]
    deferred = tilec.compile(main, target="sm_90a", pass_configs={"tilec.defer_gemm_waits": True})
    src = deferred.get_kernel_source()
    after_dv = src[src.index("(&pT_cast[0], &do_["):]
    between = after_dv[:after_dv.index("(&dsT_cast[0], &q[")]  # up to the dK gemm
    assert "tl::wgmma_wait<1>();" in between and "tl::wgmma_wait<0>();" not in between, between
    assert deferred.ptxas_info["spill_stores_bytes"] == 0
    plain = tilec.compile(main, target="sm_90a").get_kernel_source()
    after_dv = plain[plain.index("(&pT_cast[0], &do_["):]
    assert "tl::wgmma_wait<0>();" in after_dv[:after_dv.index("(&dsT_cast[0], &q[")]


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
def test_backward_dk_gemm_runs_while_dq_is_stored():
    """dkv_in_flight (the default on sm_90), FlashAttention-3's order: the dV gemm is issued once P
    is cast, dS goes to shared memory, then the dQ and dK gemms (wg_wait=-1 all); under
    tilec.defer_gemm_waits (BACKWARD_PASS_CONFIGS) nothing waits before the dQ gemm, one
    wgmma_wait<1> (dV, dQ done) comes before dQ is stored, releasing the dO slot, and the dK gemm's
    wait<0> comes after the TMA reduce-add, releasing the Q slot. No spills at head dim 128."""
    for dim, spill_bound in ((64, 16), (128, 0)):  # d64: 128 x 128 blocks, 8 bytes
        main = K.flash_attention_bwd(1, 2, 512, dim, False, dtype="bfloat16", target="sm_90a")[1]
        deferred = tilec.compile(main, target="sm_90a", pass_configs=K.BACKWARD_PASS_CONFIGS)
        src = deferred.get_kernel_source()
        step = src[src.index("(&pT_cast[0], &do_["):src.index("tl::tma_store_commit();", src.index("tma_reduce_add"))]
        assert "tl::wgmma_wait<" not in step[:step.index("(&dsT_cast[0], &q[")], step
        assert step.index("tl::store(&dsT_shared[") < step.index("named_barrier_sync") < \
            step.index("(&dsT_shared[0], 0, 0, &K_shared[0]") < step.index("(&dsT_cast[0], &q[") < \
            step.index("tl::wgmma_wait<1>();") < step.index("mbarrier_arrive(&k_empty1[") < \
            step.index("tl::store(&dq_shared[") < step.index("tma_reduce_add")
        assert step.count("tl::wgmma_wait<") == 1, step
        rest = src[src.index("tl::tma_store_commit();", src.index("tma_reduce_add")):]
        assert rest.index("tl::wgmma_wait<0>();") < rest.index("mbarrier_arrive(&k_empty0[")
        assert deferred.ptxas_info["spill_stores_bytes"] <= spill_bound, dim
    main = K.flash_attention_bwd(1, 2, 512, 64, False, dkv_in_flight=True)[1]
    plain = tilec.compile(main, target="sm_90a").get_kernel_source()
    after_dv = plain[plain.index("(&pT_cast[0], &do_["):]
    assert "tl::wgmma_wait<0>();" in after_dv[:after_dv.index("(&dsT_cast[0], &q[")]


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
@pytest.mark.parametrize("target,tma", [("sm_90a", True), ("sm_80", False)])
def test_backward_dq_by_tma_reduce_add_on_sm90(target, tma):
    """dq_by_tma's default follows the target: on sm_90 dQ goes to shared memory and into dQ_f32
    by TMA reduce-adds whose wait defer_bulk_read_waits puts at the next step's barrier; elsewhere
    an atomic per element from registers."""
    main = K.flash_attention_bwd(1, 2, 512, 128, False, dtype="bfloat16", target=target)[1]
    src = tilec.compile(main, target=target).get_kernel_source()
    assert ("tl::tma_reduce_add(tma_dQ, &dq_shared[" in src) == tma, src
    if tma:
        loop = src[src.index("for (int k = 0; k < 8; ++k) {", src.index("setmaxnreg_inc")):]
        step = loop[:loop.index("tl::tma_store_commit();")]
        # one wait in the step, before the barrier that precedes this step's dQ writes
        assert step.count("tl::tma_store_wait_read<0>();") == 1, step
        assert step.index("tl::tma_store_wait_read<0>();") < step.index("&dq_shared[tx"), step
        # and one after the loop for the last step's adds
        assert "tl::tma_store_wait_read<0>();" in loop[loop.index("tl::tma_store_commit();"):]
    # explicit: the other form on sm_90a too
    other = K.flash_attention_bwd(1, 2, 512, 128, False, dtype="bfloat16", dq_by_tma=not tma)[1]
    assert ("tma_reduce_add" in tilec.compile(other, target="sm_90a").get_kernel_source()) == (not tma)


def test_backward_keeps_dv_and_dk_in_flight_on_sm90_only():
    on = tilec.compile(K.flash_attention_bwd(1, 2, 512, 64, False, target="sm_90a")[1], target="sm_90a",
                       pass_configs=K.BACKWARD_PASS_CONFIGS).get_kernel_source()
    off = tilec.compile(K.flash_attention_bwd(1, 2, 512, 64, False, target="sm_80")[1], target="sm_90a",
                        pass_configs=K.BACKWARD_PASS_CONFIGS).get_kernel_source()
    assert on.index("(&pT_cast[0], &do_[") < on.index("tl::store(&dsT_shared["), on
    assert off.index("(&pT_cast[0], &do_[") < off.index("(&dsT_cast[0], &q[") < off.index("tl::store(&dsT_shared["), off


def test_backward_option_errors():
    with pytest.raises(ValueError, match=r"dv_before_ds needs overlap_softmax=True"):
        K.flash_attention_bwd(1, 2, 256, 64, overlap_softmax=False, dv_before_ds=True)
    for other in ("dv_before_ds", "ds_to_shared_first"):
        with pytest.raises(ValueError, match=r"dkv_in_flight orders the dV / dK gemms itself"):
            K.flash_attention_bwd(1, 2, 256, 64, dkv_in_flight=True, **{other: True})
    with pytest.raises(ValueError, match=r"heads_kv \(3\) must divide heads \(8\)"):
        K.flash_attention_bwd(1, 8, 256, 64, heads_kv=3)
    with pytest.raises(ValueError, match=r"head dim 96 is not supported"):
        K.flash_attention_bwd(1, 4, 256, 96)
    with pytest.raises(ValueError, match=r"seq_len_kv \(40\) at least block_M"):
        K.flash_attention_bwd(1, 4, 256, 64, seq_len_kv=40)


needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

# (name, program) as tilec.ops.flash_attn builds them: short/ragged lengths, GQA, a scale.
def _fwd(b, h, sq, d, causal, hkv, skv, dtype="float16"):
    bm, bn, threads = K.forward_blocks(sq, skv, d)
    return K.flash_attention(b, h, sq, d, causal, block_M=bm, block_N=bn, threads=threads, dtype=dtype,
                             heads_kv=hkv, seq_len_kv=skv, return_lse=True, sm_scale=0.3)


OP_PROGRAMS = {
    "fwd_short_q_d64": lambda: _fwd(2, 4, 64, 64, True, 2, 100),
    "fwd_short_q_d128_bf16": lambda: _fwd(1, 4, 100, 128, False, 4, 77, "bfloat16"),
    "fwd_short_q_d256": lambda: _fwd(1, 2, 70, 256, True, 1, 90),
    "fwd_gqa_ragged_d128": lambda: _fwd(2, 8, 333, 128, True, 2, 517),
    "bwd_gqa_causal_more_keys_d64": lambda: K.flash_attention_bwd(2, 4, 100, 64, True, heads_kv=2,
                                                                  seq_len_kv=300, sm_scale=0.3)[1],
    "bwd_mqa_fewer_keys_d128_bf16": lambda: K.flash_attention_bwd(1, 4, 300, 128, True, "bfloat16", heads_kv=1,
                                                                  seq_len_kv=70)[1],
}


@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(OP_PROGRAMS))
def test_op_programs_compile(name, target):
    kernel = tilec.compile(OP_PROGRAMS[name](), target=target)
    info = kernel.ptxas_info
    assert info["registers"] > 0
    if target == "sm_90a":  # TMA + wgmma, no spills (sm_80's backward at dim 128 spills a few bytes)
        src = kernel.get_kernel_source()
        assert "tl::tma_load" in src and "wgmma" in src, src
        assert info["spill_stores_bytes"] == 0, info


@needs_nvrtc
def test_backward_causal_loop_starts_in_range_when_keys_outlast_queries():
    # Key blocks past the last query still run the loop once (all masked): the start is clamped.
    src = tilec.compile(K.flash_attention_bwd(1, 2, 64, 64, True, seq_len_kv=256)[1],
                        target="sm_80").get_kernel_source()
    assert "min(" in src, src


def test_scale_reaches_the_program():
    # sm_scale is folded into the program text: two scales, two different programs.
    a = K.flash_attention(1, 2, 128, 64, sm_scale=0.5).script()
    b = K.flash_attention(1, 2, 128, 64).script()
    assert a != b


def test_flash_attention_takes_its_blocks_from_forward_blocks():
    def src(target, **kw):
        return tilec.compile(K.flash_attention(1, 2, 2048, 64, dtype="bfloat16", target=target, **kw),
                             target="sm_90a").get_kernel_source()

    assert "setmaxnreg_inc<160>" in src("sm_90a")            # 192 rows, three consumer warpgroups
    assert "setmaxnreg_inc<240>" in src(None)                # portable: 128 rows, two
    assert "setmaxnreg_inc<240>" in src("sm_90a", block_M=128)  # an explicit block_M keeps 256 threads
    with pytest.raises(ValueError, match="block_M"):
        K.flash_attention(1, 2, 100, 64, block_M=128)          # explicit blocks longer than the sequence
    K.flash_attention(1, 2, 100, 64)                           # the defaults fit: 64-row blocks
