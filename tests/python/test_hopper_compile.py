"""The sm_90a forms without a GPU: manual warp specialization (T.ws), clusters with TMA
multicast, TMA stores, the hang detector's code, and the errors of these features."""
import os
import re
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _gemm(cluster=None, threads=256, bn=256, swizzle=0, M=1024):
    N = K = 1024

    @T.prim_func
    def g(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"), C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, 128), threads=threads, cluster_dims=cluster) as (bx, by):
            As = T.alloc_shared((128, 64), "bfloat16")
            Bs = T.alloc_shared((64, bn), "bfloat16")
            Cl = T.alloc_fragment((128, bn), "float32")
            if swizzle:
                T.use_swizzle(swizzle)
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                T.copy(A[by * 128, ko * 64], As)
                T.copy(B[ko * 64, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * 128, bx * bn])

    return g


def test_cluster_gemm_multicasts_the_shared_tile():
    kernel = tilec.compile(_gemm(cluster=(2, 1, 1)), target="sm_90a")
    src, ptx = kernel.get_kernel_source(), kernel.get_ptx()
    # A (rows by*128) is the same for both CTAs of a cluster along N: one band each, multicast;
    # B differs per CTA: plain loads.
    assert "tl::tma_load_multicast(" in src and "tl::block_rank_in_cluster()" in src, src
    assert src.count("tl::cluster_sync();") == 2, src  # after the barrier init, at the end
    assert "mbarrier_arrive_cluster" in src
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes"
                     r"\.multicast::cluster", ptx)
    assert "mapa.shared::cluster" in ptx and "barrier.cluster.arrive" in ptx


def _explain(func, **cfg):
    return tilec.compile(func, target="sm_90a", pass_configs=cfg).explain()


def test_cluster_gemm_is_persistent_over_cluster_tiles():
    kernel = tilec.compile(_gemm(cluster=(2, 1, 1)), target="sm_90a")
    src, text = kernel.get_kernel_source(), kernel.explain()
    assert "persistent: 1 block per SM loop over the tiles in clusters of 2" in text and "cluster (2, 1, 1)" in text, text
    # Clusters take cluster tiles (gridDim.x / 2 of them at once), the block of rank r the
    # tile r of its cluster along bx.
    assert "tl::grid_dim_x() >> 1" in src and "tile_start / 2" in src and "* 2 + tile_start % 2" in src, src
    assert "tl::tma_load_multicast(" in src and src.count("tl::cluster_sync();") == 2, src
    off = _explain(_gemm(cluster=(2, 1, 1)), **{"tilec.persistent_clusters": False})
    assert "persistent" not in off and "cluster (2, 1, 1)" in off and "multicast to the cluster" in off, off
    # A cluster that does not divide its grid dimension keeps one block per tile (the launch
    # rejects such a grid with its own message).
    assert "persistent" not in _explain(_gemm(cluster=(1, 3, 1)))


def test_swizzled_cluster_gemm_multicasts_the_shared_column():
    # T.use_swizzle walks a panel's rows with consecutive blocks: a pair along x shares its
    # column of C (B's tile) and has two rows (A's tiles).
    text = _explain(_gemm(cluster=(2, 1, 1), swizzle=4, bn=128))
    a, b = text.split("T.tma_copy(A, As)")[1], text.split("T.tma_copy(B, Bs)")[1]
    assert "no TMA multicast: the source depends on bx_hw" in a.split("line ")[0], text
    assert "multicast to the cluster" in b.split("line ")[0], text
    # Panels of 3 rows (8 rows: 3, 3, 2) pair some blocks across two columns: neither tile is shared.
    odd = _explain(_gemm(cluster=(2, 1, 1), swizzle=3, bn=128))
    assert "multicast to the cluster" not in odd and odd.count("the source depends on bx_hw") == 2, odd


def test_manual_ws_roles_use_their_threads():
    ws = __import__("warp_specialized_gemm")
    src = tilec.compile(ws.ws_gemm(1024, 1024, 1024), target="sm_90a").get_kernel_source()
    assert "if (tx < 128) {" in src and "if (tx >= 128) {" in src, src
    # The consumer's gemm counts its threads from the role's first: tx - 128.
    line = next(l for l in src.splitlines() if "tl::wgmma_gemm_ss<" in l)
    assert line.rstrip().endswith(", tx - 128);"), line
    # One thread of the producer role issues each TMA copy.
    assert src.count("if (tx == 0) {") >= 2, src


def test_ws_groups_must_be_consecutive_and_inside_the_block():
    def build(groups):
        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=256) as bx:
                with T.ws(*groups):
                    for i in T.Parallel(128):
                        A[i] = 1.0

        return k

    with pytest.raises(tilec.CompileError, match="consecutive"):
        tilec.compile(build((0, 2)), target="sm_90a")
    with pytest.raises(tilec.CompileError, match="2 warp groups"):
        tilec.compile(build((3,)), target="sm_90a")


def test_debug_sync_bounds_every_wait(monkeypatch):
    monkeypatch.setenv("TILEC_DEBUG_SYNC", "1")
    tilec._tilec.clear_memory_cache()
    src = tilec.compile(_gemm(), target="sm_90a").get_kernel_source()
    assert src.startswith("// Generated") and "#define TILEC_DEBUG_SYNC 1" in src
    assert "TL_MBARRIER_WAIT(" in src


def test_explicit_tma_requests_that_cannot_work_are_errors():
    @T.prim_func
    def k(A: T.Tensor((128, 64), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128, 64), "float16")
            T.copy(A, S, prefer_instruction="tma")  # a load needs an mbarrier
            T.copy(S, B)

    with pytest.raises(tilec.CompileError, match="T.tma_copy"):
        tilec.compile(k, target="sm_90a")

    @T.prim_func
    def no_barrier(A: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128, 64), "float16")
            T.tma_copy(A, S)

    with pytest.raises(tilec.CompileError, match="barrier="):
        tilec.compile(no_barrier, target="sm_90a")


def test_shared_to_global_copy_is_a_tma_store_on_sm90():
    @T.prim_func
    def k(A: T.Tensor((256, 128), "float16"), B: T.Tensor((256, 128), "float16")):
        with T.Kernel(2, threads=128) as bx:
            S = T.alloc_shared((128, 128), "float16")
            T.copy(A[bx * 128, 0], S)
            T.copy(S, B[bx * 128, 0])

    src = tilec.compile(k, target="sm_90a").get_kernel_source()
    assert "tl::tma_store(" in src and "tl::tma_store_wait_read<0>()" in src, src
    assert src.index("tl::fence_proxy_async()") < src.index("tl::tma_store("), src
    assert src.count("tl::fence_proxy_async()") == 1, src  # the store's own fence: no second one
    src80 = tilec.compile(k, target="sm_80").get_kernel_source()
    assert "tma" not in src80
    off = tilec.compile(k, target="sm_90a", pass_configs={"tl.disable_tma_lower": True}).get_kernel_source()
    assert "tma_store" not in off


def test_attention_consumers_take_turns_at_the_first_gemm():
    from flash_attention import flash_attention

    def source(**cfg):
        return tilec.compile(flash_attention(1, 2, 512, 128), target="sm_90a", pass_configs=cfg).get_kernel_source()

    src = source()
    # Warpgroup 1 passes warpgroup 0's barrier once; each step waits for its turn before
    # S = Q K^T and passes the turn on right after it; P V stays outside the turn.
    assert src.count("tl::pingpong_pass(14);") == 1, src
    body = src[src.index("tl::pingpong_wait(tx / 128 + 14);"):]
    first_gemm, turn_passed = body.index("tl::wgmma_gemm_ss<"), body.index("tl::pingpong_pass(15 - tx / 128);")
    assert first_gemm < turn_passed < body.index("tl::wgmma_gemm_rs<"), src
    assert "pingpong" not in source(**{"tilec.pingpong": False})
    # A main loop of gemms only has nothing to overlap: no turns.
    assert "pingpong" not in tilec.compile(_gemm(), target="sm_90a").get_kernel_source()


@pytest.mark.parametrize("causal", [False, True])
def test_three_consumer_warpgroups_take_turns_round_robin(causal):
    # 192 query rows on 384 threads (FlashAttention-3's head-dim-64 block): warpgroup w waits on
    # barrier 13 + w and passes to (w + 1) % 3; the last warpgroup passes barrier 13 once. Each
    # warpgroup owns 64 rows, so the softmax's row reductions are shuffles, with no barrier.
    from flash_attention import flash_attention

    src = tilec.compile(flash_attention(1, 2, 512, 64, causal, block_M=192, block_N=128, threads=384),
                        target="sm_90a").get_kernel_source()
    assert "setmaxnreg_inc<160>" in src, src
    assert src.count("tl::pingpong_pass(13);") == 1, src
    assert "if (tx >= 256) {\n      tl::pingpong_pass(13);" in src, src
    loop = src[src.index("for (int k = 1; k <"):]
    wait, passed = loop.index("tl::pingpong_wait(tx / 128 + 13);"), loop.index("tl::pingpong_pass((tx / 128 + 1) % 3 + 13);")
    assert wait < loop.index("tl::wgmma_gemm_ss<") < passed, loop
    assert _turns_hold_no_barrier(src), src
    step = loop[:loop.index("tl::wgmma_wait<0>();")]
    assert "tl::shfl_xor(" in step and "named_barrier_sync" not in step and "_red_shared" not in step, step


def test_partial_tile_copy_into_shared_needs_no_barrier_per_element():
    # The slow path of a guarded copy (ragged query block) writes each element once: no
    # barrier inside its loops (there were 64 per tile, with 64 fences).
    from flash_attention import flash_attention

    src = tilec.compile(flash_attention(1, 2, 320, 64), target="sm_90a").get_kernel_source()
    assert src.count("tl::named_barrier_sync(") <= 3, src


def test_attention_k_and_v_get_their_own_barriers():
    # K is read only by S = Q K^T, V only by O += P V: each copy has its own full/empty pair, so
    # K's slot is released (and refilled) while P V still reads V; V is awaited right before P V.
    from flash_attention import flash_attention

    src = tilec.compile(flash_attention(1, 2, 512, 128), target="sm_90a").get_kernel_source()
    step = src[src.index("tl::pingpong_wait(tx / 128 + 14);") - 200:]
    assert "TL_MBARRIER_WAIT(&k_full0[" in step and "TL_MBARRIER_WAIT(&k_full1[" in step, src
    s_gemm, pv_gemm = step.index("tl::wgmma_gemm_ss<"), step.index("tl::wgmma_gemm_rs<")
    assert s_gemm < step.index("mbarrier_arrive(&k_empty0[") < step.index("TL_MBARRIER_WAIT(&k_full1[") < pv_gemm
    assert pv_gemm < step.index("mbarrier_arrive(&k_empty1["), src
    # A GEMM's A and B are read by the same gemm: one pair.
    g = tilec.compile(_gemm(), target="sm_90a").get_kernel_source()
    assert "ko_full[" in g and "ko_full0" not in g and "ko_full1" not in g, g


def test_attention_step_is_rotated_so_softmax_overlaps_p_v():
    # (Off by default until measured on the GPU.) Step k issues S_k = Q K_k^T and then P_{k-1} V_{k-1} (one turn), waits only for S_k
    # (wgmma_wait<1>), runs the softmax, then waits for P V before touching P and O.
    from flash_attention import flash_attention

    for causal in (False, True):
        src = tilec.compile(flash_attention(1, 2, 512, 128, causal), target="sm_90a",
                            pass_configs={"tilec.intra_wg_overlap": True}).get_kernel_source()
        loop = src[src.index("for (int k = 1; k <"):]
        ss, rs = loop.index("tl::wgmma_gemm_ss<"), loop.index("tl::wgmma_gemm_rs<")
        wait1, wait0 = loop.index("tl::wgmma_wait<1>();"), loop.index("tl::wgmma_wait<0>();")
        cast = loop.index("tl::cast<half>(tl::load<2>(&acc_s[")
        assert ss < rs < loop.index("tl::pingpong_pass(15 - tx / 128);") < wait1 < loop.index("tl::exp2(") < wait0
        assert wait0 < cast, src
        # The prologue (step 0 up to its P V) and the epilogue (the last P V) around the loop.
        assert src.count("tl::wgmma_gemm_rs<") == 2 and src.count("tl::wgmma_gemm_ss<") == 2, src
    plain = tilec.compile(flash_attention(1, 2, 512, 128), target="sm_90a",
                          pass_configs={"tilec.intra_wg_overlap": False}).get_kernel_source()
    assert "tl::wgmma_wait<1>();" not in plain and plain.count("tl::wgmma_gemm_rs<") == 1


def test_deferred_rescale_of_o_runs_between_the_two_issues():
    # tilec.defer_accumulator_updates: O *= scale of step k-1 runs in step k after S_k is issued
    # and before P_{k-1} V_{k-1} (FlashAttention-3's order); the prologue leaves it out and the
    # epilogue runs the last one before the last P V. The cast of P stays at the end of the step.
    from flash_attention import flash_attention

    rescale = "tl::store(&acc_o["
    for causal in (False, True):
        src = tilec.compile(flash_attention(1, 2, 512, 128, causal), target="sm_90a",
                            pass_configs={"tilec.defer_accumulator_updates": True}).get_kernel_source()
        loop_at = src.index("for (int k = 1; k <")
        pro, loop = src[:loop_at], src[loop_at:]
        ss, rs = loop.index("tl::wgmma_gemm_ss<"), loop.index("tl::wgmma_gemm_rs<")
        assert ss < loop.index(rescale) < rs, loop
        assert loop.index("tl::cast<half>(tl::load<2>(&acc_s[") > loop.index("tl::wgmma_wait<0>();")
        epi = loop[loop.index("tl::wgmma_gemm_rs<") + 1:]
        epi = epi[epi.index("tl::wgmma_gemm_rs<") - 400:]
        assert rescale in epi[:epi.index("tl::wgmma_gemm_rs<")], epi
        # Not in the prologue's tail (between the first S wait and the loop).
        first_s = pro.rindex("tl::wgmma_gemm_ss<")
        assert rescale not in pro[first_s:], pro[first_s:]
        default = tilec.compile(flash_attention(1, 2, 512, 128, causal), target="sm_90a").get_kernel_source()
        dloop = default[default.index("for (int k = 1; k <"):]
        assert dloop.index(rescale) > dloop.index("tl::wgmma_wait<0>();")


def _turns_hold_no_barrier(src):
    pos = 0
    while (w := src.find("tl::pingpong_wait(", pos)) >= 0:
        p = src.index("tl::pingpong_pass(", w)
        turn = src[w:p]
        if "named_barrier_sync" in turn or "__syncthreads" in turn:
            return False
        pos = p
    return True


def test_no_barrier_inside_a_pingpong_turn():
    # A barrier of both warpgroups between one's turn wait and its pass deadlocks them (the
    # rotated attention step's prologue got the Q barrier there): safe_pingpong_turns moves
    # it before the wait.
    from flash_attention import flash_attention

    for causal in (False, True):
        for rotate in (False, True):
            src = tilec.compile(flash_attention(1, 2, 320, 128, causal), target="sm_90a",
                                pass_configs={"tilec.intra_wg_overlap": rotate}).get_kernel_source()
            assert "tl::pingpong_wait(" in src, src
            assert _turns_hold_no_barrier(src), src


def test_fast_math_exp2_is_one_mufu_instruction():
    # tl.enable_fast_math: T.exp2 is ex2.approx.ftz (one MUFU.EX2), the softmax's inner op;
    # by default the precise form (subnormal handling around ex2.approx).
    from flash_attention import flash_attention

    def ptx(fast):
        return tilec.compile(flash_attention(1, 2, 256, 64), target="sm_90a",
                             pass_configs={"tl.enable_fast_math": fast}).get_ptx()

    fast, precise = ptx(True), ptx(False)
    assert "ex2.approx.ftz.f32" in fast and "ex2.approx.f32" not in fast
    assert "ex2.approx.ftz.f32" not in precise and "ex2.approx.f32" in precise


def _attention_one_stage(block_m=128, block_n=128, dim=128, threads=128, stages=1):
    """Upstream's example_mha_fwd_bshd.py shape: one consumer warpgroup over a 128-row block,
    T.Pipelined(num_stages=1) with K and V copied inside the loop."""
    shape = (1, 1024, 4, dim)

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             O: T.Tensor(shape, "float16")):
        with T.Kernel(1024 // block_m, 4, 1, threads=threads) as (bx, by, bz):
            Qs = T.alloc_shared((block_m, dim), "float16")
            Ks = T.alloc_shared((block_n, dim), "float16")
            Vs = T.alloc_shared((block_n, dim), "float16")
            s = T.alloc_fragment((block_m, block_n), "float32")
            p = T.alloc_fragment((block_m, block_n), "float16")
            o = T.alloc_fragment((block_m, dim), "float32")
            m = T.alloc_fragment((block_m,), "float32")
            T.copy(Q[bz, bx * block_m:(bx + 1) * block_m, by, :], Qs)
            T.fill(o, 0)
            for k in T.Pipelined(1024 // block_n, num_stages=stages):
                T.copy(K[bz, k * block_n:(k + 1) * block_n, by, :], Ks)
                T.clear(s)
                T.gemm(Qs, Ks, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.reduce_max(s, m, dim=1)
                for i, j in T.Parallel(block_m, block_n):
                    s[i, j] = T.exp2(s[i, j] - m[i])
                T.copy(s, p)
                T.copy(V[bz, k * block_n:(k + 1) * block_n, by, :], Vs)
                T.gemm(p, Vs, o, policy=T.GemmWarpPolicy.FullRow)
            T.copy(o, O[bz, bx * block_m:(bx + 1) * block_m, by, :])

    return main


def test_one_stage_loop_is_warp_specialized_over_one_buffer():
    # num_stages=1 on sm_90a: the copies go to a producer warpgroup as TMA loads into one buffer
    # each (slot 0, phase k % 2), K and V with their own barriers; the consumers run the rest.
    k = tilec.compile(_attention_one_stage(block_m=64, block_n=64, dim=64), target="sm_90a")
    src = k.get_kernel_source()
    assert "tl::tma_load(" in src and "TL_MBARRIER_WAIT(&k_full0[" in src and "TL_MBARRIER_WAIT(&k_full1[" in src, src
    assert "k_full0[1];" in src and "k_full1[1];" in src  # one slot per group
    assert "__launch_bounds__(256" in src
    # The same program on sm_80 is a serial loop with plain loads (no cp.async pipeline).
    ampere = tilec.compile(_attention_one_stage(block_m=64, block_n=64, dim=64), target="sm_80").get_kernel_source()
    assert "cp_async" not in ampere and "mbarrier" not in ampere.lower()


@pytest.mark.filterwarnings("ignore::tilec.kernel.PerformanceWarning")  # S, P, O: 320 registers
def test_two_blocks_per_sm_only_when_registers_and_shared_memory_fit():
    # One consumer warpgroup plans two blocks per SM (232 consumer registers each after
    # setmaxnreg) only when its fragments fit them and two blocks' shared buffers fit on one SM.
    small = tilec.compile(_attention_one_stage(block_m=64, block_n=64, dim=64), target="sm_90a").get_kernel_source()
    assert "__launch_bounds__(256, 2)" in small and "setmaxnreg_inc<232>" in small
    # S, P and O of 128 rows at d128: 320 registers per thread. One block, 240 registers.
    big = tilec.compile(_attention_one_stage(), target="sm_90a").get_kernel_source()
    assert "__launch_bounds__(256, 1)" in big and "setmaxnreg_inc<240>" in big
    # 64 rows at d256 with 2 stages: the fragments fit (176 registers), Q, K, V (160 KB) do not.
    wide = tilec.compile(_attention_one_stage(block_m=64, block_n=64, dim=256, stages=2), target="sm_90a")
    assert "__launch_bounds__(256, 1)" in wide.get_kernel_source()


@pytest.mark.filterwarnings("ignore::tilec.kernel.PerformanceWarning")  # S, P, O: 320 registers
def test_attention_step_is_not_rotated_when_its_fragments_exceed_the_registers():
    # 128 rows on one warpgroup at d128: S (128 registers per thread), P (64) and O (128) do not
    # fit 240 registers at once, so the rotated step (S_k beside P_{k-1} V_{k-1}) is not used.
    big = tilec.compile(_attention_one_stage(), target="sm_90a").get_kernel_source()
    assert "tl::wgmma_wait<1>();" not in big and big.count("tl::wgmma_gemm_rs<") == 1
    small = tilec.compile(_attention_one_stage(block_m=64, block_n=64, dim=64), target="sm_90a",
                          pass_configs={"tilec.intra_wg_overlap": True}).get_kernel_source()
    assert "tl::wgmma_wait<1>();" in small and small.count("tl::wgmma_gemm_rs<") == 2


def test_a_turn_gemm_the_program_leaves_running_is_not_waited_for():
    # The backward (overlap_softmax) issues K Q^T in its ping-pong turn with wg_wait=-1 and
    # V dO^T right after, then T.wait_wgmma(1): no wgmma_wait<0> between the two issues.
    from tilec.ops.attention_kernels import flash_attention_bwd

    for causal in (False, True):
        main = flash_attention_bwd(1, 2, 512, 128, is_causal=causal, dtype="bfloat16")[1]
        src = tilec.compile(main, target="sm_90a").get_kernel_source()
        turn = src.index("tl::pingpong_pass(15 - tx / 128);")
        second = src.index("tl::wgmma_gemm_ss<", turn)
        assert "tl::wgmma_wait<" not in src[turn:second], src[turn:second]
        assert src.index("tl::wgmma_wait<1>();", second) < src.index("tl::exp2(", second)


def test_cross_warpgroup_reductions_take_one_barrier_and_no_fence():
    # MLA decoding's S is split across two warpgroups along its columns (FullCol), so each
    # step's row max and row sum go through a static shared scratch: one barrier before its
    # reads, none between the writes of its two row slots (the slots differ), and no
    # fence.proxy.async for it (no wgmma reads that scratch). P's store to S_shared, which the
    # P V wgmma reads, keeps its fence before the barrier that hands it over.
    from mla_decode import mla_decode

    split, _ = mla_decode(4, 128, 4 * 16, 16, 2, dtype="bfloat16", num_stages=2)
    # (tilec.defer_row_sums off: the row sum reduced every step, as the program says)
    src = tilec.compile(split, target="sm_90a", pass_configs={"tilec.defer_row_sums": False}).get_kernel_source()
    step = src[src.rindex("for (int p = 0;"):]  # the consumers' loop
    step = step[:step.index("O_partial")]
    assert step.count("tl::named_barrier_sync(1, 256);") == 3, step
    assert step.count("tl::fence_proxy_async();") == 1, step
    pv = step.index("tl::wgmma_gemm_ss<64, 512, 64")
    assert step.rindex("tl::fence_proxy_async();", 0, pv) > step.rindex("S_shared[", 0, pv), step
    for red in ("scores_max_red_shared[kb", "scores_sum_red_shared[kb"):
        writes = step.index(red)
        loop = step.rindex("for (int kb", 0, writes)
        assert "named_barrier_sync" not in step[loop:writes], step


def _two_part_scores(policy="FullRow", M=128):
    """Attention-like: S = Q1 K1^T + Q2 K2^T (two gemms into one accumulator), P = exp2(S),
    O += P V; 256 threads (two consumer warpgroups on sm_90a)."""
    N, D1, D2, DV, S = 64, 64, 32, 64, 512

    @T.prim_func
    def f(Q1: T.Tensor((M, D1), "float16"), Q2: T.Tensor((M, D2), "float16"), K1: T.Tensor((S, D1), "float16"),
          K2: T.Tensor((S, D2), "float16"), V: T.Tensor((S, DV), "float16"), O: T.Tensor((M, DV), "float32")):
        with T.Kernel(1, threads=256):
            q1, q2 = T.alloc_shared((M, D1), "float16"), T.alloc_shared((M, D2), "float16")
            k1, k2 = T.alloc_shared((N, D1), "float16"), T.alloc_shared((N, D2), "float16")
            v = T.alloc_shared((N, DV), "float16")
            s = T.alloc_fragment((M, N), "float32")
            p = T.alloc_fragment((M, N), "float16")
            o = T.alloc_fragment((M, DV), "float32")
            T.copy(Q1, q1)
            T.copy(Q2, q2)
            T.fill(o, 0)
            for k in T.Pipelined(S // N, num_stages=2):
                T.copy(K1[k * N, 0], k1)
                T.copy(K2[k * N, 0], k2)
                T.gemm(q1, k1, s, transpose_B=True, policy=policy, clear_accum=True)
                T.gemm(q2, k2, s, transpose_B=True, policy=policy)
                for i, j in T.Parallel(M, N):
                    s[i, j] = T.exp2(s[i, j] * 0.01)
                T.copy(s, p)
                T.copy(V[k * N, 0], v)
                T.gemm(p, v, o, policy=policy)
            T.copy(o, O)

    return f


def test_gemms_into_the_turns_accumulator_join_the_turn():
    # S = Q K^T as two gemms into one accumulator (MLA's latent and rope parts): both are issued
    # in the consumer's ping-pong turn, back to back, and one wait follows.
    src = tilec.compile(_two_part_scores(), target="sm_90a").get_kernel_source()
    turn = src[src.index("tl::pingpong_wait(tx"):]
    turn = turn[:turn.index("tl::pingpong_pass(15 - tx / 128);")]
    assert turn.count("tl::wgmma_gemm_ss") == 2 and "wgmma_wait" not in turn, turn
    assert turn.count("TL_MBARRIER_WAIT(") == 1, turn  # the second tile's barrier, inside the turn


def test_no_turns_when_the_warpgroups_share_rows():
    # Warpgroups splitting the rows' columns meet at every row reduction anyway (MLA decoding:
    # 64 heads, FullCol): no ping-pong turns there (measured slower on the H200).
    from mla_decode import mla_decode

    (split,) = mla_decode(4, 128, 4 * 16, 16, 1, dtype="bfloat16", num_stages=2)  # one kernel at num_split 1
    src = tilec.compile(split, target="sm_90a").get_kernel_source()
    assert "setmaxnreg" in src and "pingpong" not in src


def _weighted_rowsum():
    sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
    from hopper_cases import weighted_rowsum_program

    return weighted_rowsum_program()


def test_one_dimensional_shared_tiles_are_tma_copies_in_a_warp_specialized_loop():
    # A 1-D tile (T.alloc_shared([n])) loaded in a pipelined loop, as upstream's GQA backward
    # loads its LSE rows: a TMA load of one row, so the loop stays warp-specialized; the
    # versions of the tile are rows of a (stages, 1, n) buffer, not a (stages, n) tile.
    kernel = tilec.compile(_weighted_rowsum(), target="sm_90a")
    text = kernel.explain()
    assert "warp-specialized: a producer warpgroup issues TMA loads" in text, text
    w_entry = text.split("T.tma_copy(W, w_shared)")[1].split("line ")[0]
    assert "chosen: TMA load" in w_entry, text
    store = text.split("T.copy(o_shared, O)")[1].split("line ")[0]
    assert "chosen: TMA store" in store, text
    src = kernel.get_kernel_source()
    assert len(re.findall(r"tl::tma_load\(", src)) == 3 and "tl::tma_store(" in src
    assert "cp_async" not in src


def test_one_dimensional_shared_tiles_keep_the_sm80_copies():
    src = tilec.compile(_weighted_rowsum(), target="sm_80").get_kernel_source()
    assert "tma_" not in src and "cp_async" in src


def test_a_one_row_tile_wider_than_a_box_is_cut_into_boxes():
    # 512 floats per step (T.alloc_shared([512]) or (1, 512)): two 256-element boxes into the
    # same stage, the barrier expecting all 2048 bytes; before, the 2-D form was a CompileError
    # ("a TMA box is at most 256 elements wide") and the 1-D form kept the loop off TMA.
    for two_d in (False, True):
        @T.prim_func
        def f(Q: T.Tensor((1024, 64), "float16"), K: T.Tensor((4096, 64), "float16"), W: T.Tensor((4096,), "float32"),
              O: T.Tensor((1024, 64), "float32")):
            with T.Kernel(8, threads=256) as bx:
                Qs = T.alloc_shared((128, 64), "float16")
                Ks = T.alloc_shared((256, 64), "float16")
                ws = T.alloc_shared((1, 512) if two_d else (512,), "float32")
                s = T.alloc_fragment((128, 256), "float32")
                acc = T.alloc_fragment((128, 64), "float32")
                T.copy(Q[bx * 128, 0], Qs)
                T.clear(acc)
                for k in T.Pipelined(8, num_stages=2):
                    T.copy(K[k * 256, 0], Ks)
                    if two_d:
                        T.copy(W[k * 512:(k + 1) * 512], ws[0, :])
                    else:
                        T.copy(W[k * 512:(k + 1) * 512], ws)
                    T.clear(s)
                    T.gemm(Qs, Ks, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    for i, j in T.Parallel(128, 256):
                        s[i, j] = s[i, j] * (ws[0, j] + ws[0, j + 256] if two_d else ws[j] + ws[j + 256])
                    for i, j in T.Parallel(128, 64):
                        acc[i, j] += s[i, j]
                T.copy(acc, O[bx * 128, 0])

        src = tilec.compile(f, target="sm_90a").get_kernel_source()
        loads = [line.strip() for line in src.splitlines() if "tl::tma_load(&ws" in line]
        assert len(loads) == 2 and "&ws[k % 2 * 512 + 256]" in loads[1] and "k * 512 + 256)" in loads[1], loads
        assert re.search(r"mbarrier_expect_tx\(&k_full\d\[k % 2\], 2048\)", src), src


def test_a_one_dimensional_result_tile_leaves_in_boxes():
    @T.prim_func
    def f(A: T.Tensor((1024,), "float16"), D: T.Tensor((1024,), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((1024,), "float16")
            T.copy(A, S)
            T.copy(S, D)

    src = tilec.compile(f, target="sm_90a").get_kernel_source()
    stores = [line.strip() for line in src.splitlines() if "tl::tma_store(" in line]
    assert stores == [f"tl::tma_store(tma_D, &S[{c}], {c});" for c in (0, 256, 512, 768)], stores
