"""warp_specialize on sm_90a: copies ahead of the pipelined loop (attention's Q) become TMA loads
by the producer warpgroup through their own barrier pair (tilec.producer_head_copies), and loops
whose step count depends on a block index (causal attention) still get a persistent kernel, its
tiles in order of their work, taken in a snake (tilec.persistent_uneven)."""
import pytest

import tilec
import tilec.language as T
from tilec.ops.attention_kernels import flash_attention, flash_attention_bwd

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _kernel(f, **pc):
    return tilec.compile(f, target="sm_90a", pass_configs=pc or None)


def test_attention_q_is_loaded_by_the_producer():
    src = _kernel(flash_attention(2, 4, 512, 64, False, dtype="bfloat16")).get_kernel_source()
    # The producer: wait for the consumers to free Q (phase of the tile), one TMA load, arrive.
    assert "TL_MBARRIER_WAIT(&head_empty[0], 1 - tile_i % 2);" in src, src
    assert "tl::tma_load(&Q_shared[0], tma_Q, &head_full[0]" in src
    # The consumers wait for it before the loop, release it after their last wgmma, and no
    # longer load Q themselves (nor fence a generic-proxy write of it).
    assert "TL_MBARRIER_WAIT(&head_full[0], tile_i_1 % 2);" in src
    assert src.index("TL_MBARRIER_WAIT(&head_full[0]") < src.index("tl::wgmma_gemm_ss")
    release = src.index("tl::mbarrier_arrive(&head_empty[0]);")
    assert src.rindex("tl::wgmma_wait<0>();", 0, release) > src.rindex("tl::wgmma_gemm_rs", 0, release)
    assert "&Q[" not in src
    assert "tl::mbarrier_init(&head_empty[0], 2);" in src  # one arrival per consumer warpgroup


def test_explain_reports_the_q_load():
    text = _kernel(flash_attention(2, 4, 512, 64, False, dtype="bfloat16"))._explain()
    q_lines = [ln for ln in text.splitlines() if "(Q, Q_shared)" in ln]
    assert q_lines and "T.tma_copy" in q_lines[0], text
    after = text.split(q_lines[0], 1)[1].splitlines()[1]
    assert "TMA load" in after and "producer" in after, text


def test_turned_off_the_consumers_load_q():
    src = _kernel(flash_attention(2, 4, 512, 64, False, dtype="bfloat16"),
                  **{"tilec.producer_head_copies": False}).get_kernel_source()
    assert "head_full" not in src and "&Q[" in src


def _q_also_read_elsewhere(M=128, D=64, N=512):
    @T.prim_func
    def f(Q: T.Tensor((M, D), "bfloat16"), K: T.Tensor((N, D), "bfloat16"), O: T.Tensor((M, N), "float32"),
          S: T.Tensor((M, D), "float32")):
        with T.Kernel(1, threads=256) as bx:
            Q_shared = T.alloc_shared((M, D), "bfloat16")
            K_shared = T.alloc_shared((128, D), "bfloat16")
            acc = T.alloc_fragment((M, 128), "float32")
            q_frag = T.alloc_fragment((M, D), "float32")
            T.copy(Q, Q_shared)
            for k in T.Pipelined(N // 128, num_stages=2):
                T.copy(K[k * 128, 0], K_shared)
                T.gemm(Q_shared, K_shared, acc, transpose_B=True, clear_accum=True)
                T.copy(acc, O[0, k * 128])
            T.copy(Q_shared, q_frag)  # read by something other than the loop's gemms
            T.copy(q_frag, S)

    return f


def test_a_head_tile_read_outside_the_loop_stays_with_the_consumers():
    src = _kernel(_q_also_read_elsewhere()).get_kernel_source()
    assert "tma_K" in src  # the loop is still warp-specialized
    assert "head_full" not in src and "&Q[" in src


def test_two_blocks_per_sm_keep_their_head_copies():
    # The backward's main kernel with its small blocks runs one consumer warpgroup, two blocks per SM.
    src = _kernel(flash_attention_bwd(1, 4, 256, 128, False, dtype="bfloat16", block_M=64, block_N=32,
                                      threads=128)[1]).get_kernel_source()
    assert "__launch_bounds__(256, 2)" in src and "head_full" not in src


def test_causal_attention_is_persistent_in_a_snake_of_decreasing_work():
    # grid (4 query blocks, 32 heads, 32 batches): the query block varies slowest, longest first.
    k = _kernel(flash_attention(32, 32, 512, 64, True, dtype="bfloat16"))
    src = k.get_kernel_source()
    assert "k_done[0] = 0;" in src and "k_done[0] = loop_range + k_done[0];" in src, src
    assert "tile_i * tl::grid_dim_x() + (tile_i % 2 == 1 ? tl::grid_dim_x() - tile_start - 1 : tile_start)" in src
    assert "if (tile < 4096) {" in src
    assert "const int bx_hw = (tile >> 10) & 3;" in src and "const int bx = 3 - bx_hw;" in src
    # Slots and phases run on across tiles from the steps done so far.
    assert "TL_MBARRIER_WAIT(&k_empty0[(k + k_done[0]) & 1], 1 - (((k + k_done[0]) >> 1) & 1));" in src
    text = k.explain(show=False)
    assert "grid (4096)" in text
    assert "persistent: 1 block per SM loop over the tiles, longest first, taken in a snake" in text, text


def test_uneven_persistence_can_be_turned_off():
    k = _kernel(flash_attention(32, 32, 512, 64, True, dtype="bfloat16"), **{"tilec.persistent_uneven": False})
    src = k.get_kernel_source()
    assert "k_done" not in src and "tile_i" not in src and "blockIdx.z" in src
    assert "grid (4, 32, 32)" in k.explain(show=False)


def test_even_kernels_keep_the_plain_tile_loop():
    src = _kernel(flash_attention(32, 32, 512, 64, False, dtype="bfloat16")).get_kernel_source()
    assert "k_done" not in src and "tile_i % 2 == 1 ?" not in src
    text = _kernel(flash_attention(32, 32, 512, 64, False, dtype="bfloat16")).explain(show=False)
    assert "persistent: 1 block per SM loop over the tiles, taken in turn" in text, text
    assert "for (int tile_i = 0; tile_i < tl::floordiv(tl::grid_dim_x() - tile_start + 4095" in src


def test_head_copies_after_the_first_step():
    # tilec.head_copies_after_first_step: the first step's K and V are issued before Q (their
    # slots free up during the previous tile); a loop whose step count is not a constant also
    # issues Q when it has no steps, so the consumers' wait on it completes.
    cfg = {"tilec.head_copies_after_first_step": True}
    src = _kernel(flash_attention(2, 4, 512, 64, False, dtype="bfloat16"), **cfg).get_kernel_source()
    first_v, q = src.index("tl::tma_load(&V_shared"), src.index("tl::tma_load(&Q_shared[0], tma_Q, &head_full[0]")
    assert first_v < q and "if (k == 0) {" in src[first_v:q], src
    assert src.count("tma_Q, &head_full[0]") == 1  # 8 steps: no empty-loop case
    causal = _kernel(flash_attention(32, 32, 512, 64, True, dtype="bfloat16"), **cfg).get_kernel_source()
    assert causal.count("tma_Q, &head_full[0]") == 2, causal  # in the loop, and after it when empty


def test_defer_gemm_waits_keeps_a_gemm_running_until_its_registers_are_needed():
    # tilec.defer_gemm_waits (off by default): the backward's dV gemm (A = P^T from registers)
    # stays in flight while dS^T is converted (it touches neither dV nor P^T); the dK gemm reads
    # dS^T right after, so it waits as before, and its wait covers dV's. The do / q slots are
    # released only after that.
    main = flash_attention_bwd(1, 4, 256, 128, False, dtype="bfloat16")[1]
    on = tilec.compile(main, target="sm_90a", pass_configs={"tilec.defer_gemm_waits": True}).get_kernel_source()
    off = _kernel(main).get_kernel_source()
    dv = "tl::wgmma_gemm_rs<128, 128, 64, 2, 1, false, false, tl::WgTile<64, 128, 3>, tl::kWgmmaBF16, 128, {}>(&pT_cast[0]"
    assert dv.format(-1) in on and dv.format(0) in off
    step = on[on.index(dv.format(-1)):]
    assert step.index("(&dsT_cast[0], &q[") < step.index("tl::mbarrier_arrive(&k_empty1[")
