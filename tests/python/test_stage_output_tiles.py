"""stage_output_tiles: on sm_90 a GEMM's result tile goes fragment -> shared -> one TMA store,
when the shared memory fits; otherwise, and when asked not to, the copy stays as written."""
import os
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _gemm(M=1024, N=1024, K=1024, bm=128, bn=256, bk=64, stages=3, threads=256, out="bfloat16", **copy_kw):
    @T.prim_func
    def g(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"), C: T.Tensor((M, N), out)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared((bm, bk), "bfloat16")
            Bs = T.alloc_shared((bk, bn), "bfloat16")
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], As)
                T.copy(B[ko * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bm, bx * bn], **copy_kw)

    return g


def _src(f, target="sm_90a", **pc):
    return tilec.compile(f, target=target, pass_configs=pc or None).get_kernel_source()


def test_result_tile_leaves_through_shared_memory_and_tma():
    src = _src(_gemm())
    assert "Cl_staged" in src and src.count("tl::tma_store(") == 4, src
    assert "tl::store(&C[" not in src and "C[(" not in src, src
    # Still persistent: the staged tile sits beside the stages, not over them.
    assert "tl::grid_dim_x()" in src, src


def test_partial_tiles_and_float_outputs_are_staged_too():
    src = _src(_gemm(M=1000, N=768, out="float32", bn=128))
    assert "Cl_staged" in src and "tl::tma_store(" in src, src


def test_copy_stays_when_asked_or_when_it_does_not_fit():
    assert "Cl_staged" not in _src(_gemm(), **{"tilec.stage_output_tiles": False})
    assert "Cl_staged" not in _src(_gemm(), **{"tl.disable_tma_lower": True})
    assert "Cl_staged" not in _src(_gemm(disable_tma=True))
    # One warpgroup runs two blocks per SM: 2 x (3 x 48 KiB + 32 KiB) does not fit.
    assert "Cl_staged" not in _src(_gemm(bn=128, bk=128, threads=128))
    assert "Cl_staged" in _src(_gemm(bn=128, bk=32, threads=128))
    # No TMA on sm_80.
    assert "Cl_staged" not in _src(_gemm(), target="sm_80")


def test_a_tile_that_does_not_fit_whole_leaves_in_column_blocks():
    # 4 stages of 48 KiB + a 64 KiB tile > 227 KiB: two 128 x 64 buffers (32 KiB) fit, and the
    # tile leaves in four column blocks, alternating between them; still persistent.
    src = _src(_gemm(stages=4))
    assert "Cl_staged" in src and src.count("tl::tma_store(") == 4, src
    stores = [line.strip() for line in src.splitlines() if "tl::tma_store(" in line]
    assert stores == [f"tl::tma_store(tma_C, &Cl_staged[{8192 * (c % 2)}], bx_1 * 256{f' + {64 * c}' if c else ''}, "
                      f"by_1 * 128);" for c in range(4)], stores
    assert "tl::grid_dim_x()" in src, src


@pytest.mark.parametrize("causal", [True, False])
def test_head_dim_256_attention_output_leaves_in_column_blocks(causal):
    # sm_90's blocks: 128 keys in one stage (Q, K, V: 192 KiB) leave room for column blocks
    from flash_attention import flash_attention

    kernel = tilec.compile(flash_attention(1, 2, 512, 256, causal, target="sm_90a"), target="sm_90a")
    src = kernel.get_kernel_source()
    assert src.count("tl::tma_store(tma_Output") == 4, src
    assert kernel.ptxas_info["spill_stores_bytes"] == 0


def test_kernels_without_a_gemm_loop_are_left_alone():
    @T.prim_func
    def scale(A: T.Tensor((256, 256), "float32"), C: T.Tensor((256, 256), "float32")):
        with T.Kernel(2, threads=128) as bx:
            f = T.alloc_fragment((128, 256), "float32")
            T.copy(A[bx * 128, 0], f)
            for i, j in T.Parallel(128, 256):
                f[i, j] = f[i, j] * 2.0
            T.copy(f, C[bx * 128, 0])

    assert "_staged" not in _src(scale)


def test_fp8_example_and_attention_output_are_staged():
    from flash_attention import flash_attention
    from gemm_fp8 import fp8_gemm

    src = _src(fp8_gemm(4096, 4096, 1024))
    assert "C_local_staged" in src and src.count("tl::tma_store(") == 4, src
    src = _src(flash_attention(1, 2, 512, 128))
    assert "acc_o_staged" in src and "tl::tma_store(tma_Output" in src, src
    # Causal: the step count is a Let around the loop and the result copy; staged all the same.
    src = _src(flash_attention(1, 2, 512, 128, True))
    assert "const int loop_range" in src and "acc_o_staged" in src and "tl::tma_store(tma_Output" in src, src


def test_explain_says_which_result_copies_are_staged_and_why_not():
    staged = tilec.compile(_gemm(), target="sm_90a").explain(show=False)
    assert "TMA store of the result tile, staged through shared memory by the compiler" in staged, staged
    blocks = tilec.compile(_gemm(stages=4), target="sm_90a").explain(show=False)
    assert "staged through shared memory by the compiler in column blocks of 64 through two shared buffers" in blocks
    # mma.sync layouts (no column blocks), 4 stages: nothing fits, and a GEMM's B stages are
    # read at once with A's (not a tile to share).
    kept = tilec.compile(_gemm(stages=4), target="sm_90a", pass_configs={"tl.disable_wgmma": True}).explain(show=False)
    assert "each thread stores its own elements (local.fragment -> global)" in kept, kept
    assert "not staged through shared memory for one TMA store: its 64 KiB tile does not fit" in kept, kept


@pytest.mark.parametrize("first", [0, 64])
def test_a_column_block_of_a_fragment_is_copied_by_its_holders(first):
    # The first block (columns 0:64, a bare loop index over part of the dimension) as the
    # others (an offset index): each thread copies its own elements in vectors, with no
    # guarded nest over the whole fragment.
    @T.prim_func
    def f(A: T.Tensor((128, 64), "bfloat16"), B: T.Tensor((64, 256), "bfloat16"), C: T.Tensor((128, 64), "bfloat16")):
        with T.Kernel(1, threads=256) as bx:
            As = T.alloc_shared((128, 64), "bfloat16")
            Bs = T.alloc_shared((64, 256), "bfloat16")
            acc = T.alloc_fragment((128, 256), "float32")
            S = T.alloc_shared((128, 64), "bfloat16")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, acc)
            T.copy(acc[:, first:first + 64], S)
            T.copy(S, C)

    text = tilec.compile(f, target="sm_90a").explain(show=False)
    part = text.split("T.copy(acc, S)")[1].split("line ")[0]
    assert "4-byte vectors (2 × bfloat16) per thread" in part and "element by element" not in part, text


def _gemm_own_staging(stages=4, reuse=False, annotate=False):
    """The peer GEMM's text: C through the program's own shared tile C_shared."""
    M = N = K = 1024

    @T.prim_func
    def g(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"), C: T.Tensor((M, N), "bfloat16"),
          D: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, 256), T.ceildiv(M, 128), threads=256) as (bx, by):
            As = T.alloc_shared((128, 64), "bfloat16")
            Bs = T.alloc_shared((64, 256), "bfloat16")
            Cl = T.alloc_fragment((128, 256), "float32")
            C_shared = T.alloc_shared((128, 256), "bfloat16")
            if annotate:
                T.annotate_layout({C_shared: T.Layout((128, 256), lambda i, j: i * 256 + j)})
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=stages):
                T.copy(A[by * 128, ko * 64], As)
                T.copy(B[ko * 64, bx * 256], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C_shared)
            T.copy(C_shared, C[by * 128, bx * 256])
            if reuse:
                T.copy(C_shared, D[by * 128, bx * 256])

    return g


def test_the_programs_own_staging_tile_becomes_column_blocks_when_it_keeps_the_kernel_from_persisting():
    # 4 stages (192 KiB) + the program's 64 KiB C_shared do not fit side by side, so the kernel
    # could not be persistent: C_shared is replaced by two 128 x 64 blocks (measured on the H200:
    # 4 persistent stages beat both 3 persistent and 4 non-persistent ones).
    kernel = tilec.compile(_gemm_own_staging(), target="sm_90a")
    src = kernel.get_kernel_source()
    stores = [line.strip() for line in src.splitlines() if "tl::tma_store(" in line]
    assert stores == [f"tl::tma_store(tma_C, &C_shared_staged[{8192 * (c % 2)}], bx_1 * 256{f' + {64 * c}' if c else ''}, "
                      f"by_1 * 128);" for c in range(4)], stores
    assert "tl::grid_dim_x()" in src and "ko % 4" in src, src
    assert "column blocks of 64" in kernel.explain(show=False)


def test_the_programs_own_staging_tile_stays_when_it_fits_or_is_used_again():
    for kw, why in (({"stages": 3}, "fits beside 3 stages"), ({"reuse": True}, "read by a second copy"),
                    ({"annotate": True}, "a layout given by T.annotate_layout")):
        src = _src(_gemm_own_staging(**kw))
        assert "C_shared_staged" not in src and "&C_shared[" in src, why
    assert "C_shared_staged" not in _src(_gemm_own_staging(), **{"tilec.stage_output_tiles": False})
    assert "C_shared_staged" not in _src(_gemm_own_staging(), **{"tl.disable_tma_lower": True})


def test_the_backwards_dk_reuses_the_tile_its_dv_was_staged_in():
    # Head dim 128: after dV's 32 KiB tile only 16 KiB are left (the fragment -> shared copies
    # inside the loop, dS and dQ, keep one buffer each, not one per stage), so dK is written
    # into dV's tile once TMA has read it: two TMA stores from one buffer, a wait in between.
    from tilec.ops.attention_kernels import flash_attention_bwd

    kernel = tilec.compile(flash_attention_bwd(2, 4, 1024, 128, True, dtype="bfloat16", target="sm_90a")[1],
                           target="sm_90a")
    src = kernel.get_kernel_source()
    assert "tl::tma_store(tma_dV, &dv_staged[0]" in src and "tl::tma_store(tma_dK, &dv_staged[0]" in src, src
    assert "dk_staged" not in src
    between = src.split("tl::tma_store(tma_dV, &dv_staged[0]")[1].split("&dk[")[0]
    assert "tl::tma_store_wait_read<0>();" in between and "named_barrier_sync" in between, between
    assert kernel.ptxas_info["spill_stores_bytes"] <= 8  # the 8 bytes d128 spilled before


def test_column_blocks_only_where_the_rows_holders_hold_every_block():
    # mma.sync accumulators (tl.disable_wgmma) and warpgroups side by side (FullCol) spread a
    # 64-column block over some threads only: their copy would be a guarded nest over all the
    # registers. The tile then stays as written (register stores).
    assert "Cl_staged" not in _src(_gemm(stages=4), **{"tl.disable_wgmma": True})

    @T.prim_func
    def wide(A: T.Tensor((1024, 1024), "bfloat16"), B: T.Tensor((1024, 1024), "bfloat16"),
             C: T.Tensor((1024, 1024), "bfloat16")):
        with T.Kernel(8, 8, threads=256) as (bx, by):
            As = T.alloc_shared((128, 64), "bfloat16")
            Bs = T.alloc_shared((64, 256), "bfloat16")
            Cl = T.alloc_fragment((128, 256), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(16, num_stages=4):
                T.copy(A[by * 128, ko * 64], As)
                T.copy(B[ko * 64, bx * 256], Bs)
                T.gemm(As, Bs, Cl, policy=T.GemmWarpPolicy.FullCol)
            T.copy(Cl, C[by * 128, bx * 256])

    assert "Cl_staged" not in _src(wide)


def _over_v(src):
    """(staged tile's offset, V_shared's offset) in the arena."""
    import re

    offsets = dict(re.findall(r"\* (\w+) = reinterpret_cast<[\w ]+\*>\(tilec_smem \+ (\d+)\)", src))
    return offsets.get("acc_o_staged"), offsets.get("V_shared")


@pytest.mark.parametrize("dim,block_N", [(256, 80), (128, 176)])
def test_attention_output_is_staged_over_v_stages_when_nothing_else_fits(dim, block_N):
    # Head dim 256 with 80-key blocks (128 with 176): Q, K and V's stages leave 2 (18) KiB, not
    # even a column block; O (64 / 32 KiB) goes over V's two stages (80 / 88 KiB), as in
    # FlashAttention-3, in loops of at most 32 steps (2048 keys: 26 / 12). The persistent
    # producer loads a tile's first V after the last tile's store has read O: staged_free, one
    # arrival by the storing thread after its bulk read.
    from flash_attention import flash_attention

    kernel = tilec.compile(flash_attention(1, 2, 2048, dim, block_N=block_N, target="sm_90a"), target="sm_90a")
    src = kernel.get_kernel_source()
    staged, v = _over_v(src)
    assert staged is not None and staged == v, src
    assert src.count("tl::tma_store(tma_Output") == dim // 64, src
    assert "tl::tma_store_wait_read<0>();\n        tl::mbarrier_arrive(&staged_free[0]);" in src, src
    # The producer's wait comes before V's empty barrier in a tile's first step, K's goes first.
    producer = src[src.index("setmaxnreg_dec"):src.index("setmaxnreg_inc")]
    assert producer.index("k_empty0") < producer.index("staged_free") < producer.index("k_empty1"), producer
    assert "if (k == 0) {\n            TL_MBARRIER_WAIT(&staged_free[0], 1 - tile_i % 2);" in producer, producer
    assert "tl::mbarrier_init(&staged_free[0], 1);" in src, src
    assert kernel.ptxas_info["spill_stores_bytes"] == 0
    assert f"over the pipeline stages of 'V_shared'" in kernel.explain(show=False)


def test_long_loops_keep_their_output_in_registers():
    # 52 steps of 80 keys (4096 keys): the stores from registers measured faster there.
    from flash_attention import flash_attention

    kernel = tilec.compile(flash_attention(1, 2, 4096, 256, block_N=80, target="sm_90a"), target="sm_90a")
    src = kernel.get_kernel_source()
    assert "acc_o_staged" not in src and "staged_free" not in src, src
    assert "its 64 KiB tile does not fit" in kernel.explain(show=False)
    # A step count known only at run time (causal) does not qualify either.
    causal = _src(flash_attention(1, 2, 1024, 256, True, block_N=80, target="sm_90a"))
    assert "staged_free" not in causal and "tl::tma_store(tma_Output" not in causal, causal


def test_a_non_persistent_kernel_shares_v_without_the_barrier():
    from flash_attention import flash_attention

    src = _src(flash_attention(1, 2, 512, 256, block_N=80, target="sm_90a"), **{"tilec.persistent": False})
    staged, v = _over_v(src)
    assert staged is not None and staged == v and "staged_free" not in src, src
    assert src.count("tl::tma_store(tma_Output") == 4, src


def test_a_gemms_b_stages_do_not_take_its_result_tile():
    # mma.sync layouts take no column blocks, the whole tile does not fit beside 4 stages, and
    # a GEMM reads A and B at once: the next tile would wait for the epilogue. As written.
    src = _src(_gemm(stages=4), **{"tl.disable_wgmma": True})
    assert "Cl_staged" not in src and "staged_free" not in src, src
