"""DeepSeek MLA decoding over a paged latent cache (FlashMLA's problem): h_kv = 1, d = 576, dv = 512.

Q (batch, h_q, 576): per head the 512 latent dims then the 64 rope dims; the cache holds one
576-wide row per token (keys; its first 512 columns are also the values), in pages of 64 tokens:
KV_cache (num_pages, 64, 576), page p of sequence b at block_table[b, p]; sequence b holds
cache_seqlens[b] tokens (ragged). Scale 1/sqrt(576), as FlashMLA's default.
  split kernel   grid (batch, h_q / block_H, num_split): block_H query heads share every cached
                 row; per page S = Q K^T as two gemms (latent + rope parts, both into S), the
                 online softmax, P staged in shared memory, O += P V (V = the latent K tile)
  combine        flash_decoding.combine_splits (LSE-weighted merge of the splits); with one
                 split there is no combine kernel: the split kernel writes the output itself
Run: python examples/mla_decode.py            (checks against torch on a GPU)
     python examples/mla_decode.py --compile-only
"""
import math

import _harness
import tilec.language as T
from tilec.ops.attention_kernels import PASS_CONFIGS  # the softmax's exp2 as one MUFU.EX2 (fast math)
from flash_decoding import LOG2E, NO_SCORE, combine_splits


def mla_decode(batch, h_q, num_pages, max_pages, num_split=4, dv=512, dpe=64, page_size=64, block_H=64,
               dtype="float16", threads=256, num_stages=2, heads_first=True, cluster_heads=False):
    """The split kernel and the combine kernel; with num_split=1 one kernel, returned alone as `(main,)`:
    main(Q, KV_cache, block_table, cache_seqlens, Output) writes the output in its dtype (nothing
    to combine: no float32 partials, no second launch). Shared memory: num_stages=2 needs sm_90's 227 KB,
    num_stages=1 fits sm_80. The h_q / block_H blocks of one sequence read the same pages:
    heads_first puts them next to each other in the grid (they run together and the second read
    of a page hits L2; with them a grid row apart, each page came from HBM twice); cluster_heads
    makes them one cluster, so each page is loaded once and multicast to both (sm_90)."""
    valid_H = min(block_H, h_q)
    if h_q % valid_H != 0:
        raise ValueError(f"mla_decode: h_q ({h_q}) must be at most block_H ({block_H}) or a multiple of it")
    dim = dv + dpe
    scale = dim ** -0.5 * LOG2E
    accum_dtype = "float32"
    pages_per_split = -(-max_pages // num_split)  # a static trip count (see flash_decoding.py)

    @T.macro
    def body(Q, KV_cache, block_table, cache_seqlens, O_partial, LSE_partial, Output):
        head_blocks = h_q // valid_H
        heads_inner = heads_first or cluster_heads  # a cluster spans the head blocks of one sequence
        grid = (head_blocks, batch, num_split) if heads_inner else (batch, head_blocks, num_split)
        cluster = (head_blocks, 1, 1) if cluster_heads else None
        with T.Kernel(*grid, threads=threads, cluster_dims=cluster) as (b0, b1, bz):
            by, bx = (b0, b1) if heads_inner else (b1, b0)  # head block, sequence
            Q_shared = T.alloc_shared((block_H, dv), dtype)
            Q_pe_shared = T.alloc_shared((block_H, dpe), dtype)
            KV_shared = T.alloc_shared((page_size, dv), dtype)
            K_pe_shared = T.alloc_shared((page_size, dpe), dtype)
            S_shared = T.alloc_shared((block_H, page_size), dtype)
            acc_s = T.alloc_fragment((block_H, page_size), accum_dtype)
            acc_o = T.alloc_fragment((block_H, dv), accum_dtype)
            scores_max = T.alloc_fragment((block_H,), accum_dtype)
            scores_max_prev = T.alloc_fragment((block_H,), accum_dtype)
            scores_scale = T.alloc_fragment((block_H,), accum_dtype)
            scores_sum = T.alloc_fragment((block_H,), accum_dtype)
            logsum = T.alloc_fragment((block_H,), accum_dtype)
            head0 = by * valid_H
            seqlen = cache_seqlens[bx]
            last_page = T.ceildiv(seqlen, page_size) - 1

            if valid_H == block_H:  # whole head blocks: tile copies (on sm_90 the producer's TMA loads)
                T.copy(Q[bx, head0:head0 + block_H, 0:dv], Q_shared)
                T.copy(Q[bx, head0:head0 + block_H, dv:dim], Q_pe_shared)
            else:
                for i, d in T.Parallel(block_H, dv):  # rows past h_q are padding (zeros)
                    Q_shared[i, d] = T.if_then_else(i < valid_H, Q[bx, T.min(head0 + i, h_q - 1), d], 0)
                for i, d in T.Parallel(block_H, dpe):
                    Q_pe_shared[i, d] = T.if_then_else(i < valid_H, Q[bx, T.min(head0 + i, h_q - 1), dv + d], 0)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, NO_SCORE)
            for p in T.Pipelined(pages_per_split, num_stages=num_stages):
                # Pages past the sequence are masked (a split may hold none); the load then
                # re-reads its last page rather than an unset block-table entry.
                page = block_table[bx, T.min(bz * pages_per_split + p, last_page)]
                T.copy(KV_cache[page, :, 0:dv], KV_shared)
                T.copy(KV_cache[page, :, dv:dim], K_pe_shared)
                for i, j in T.Parallel(block_H, page_size):
                    acc_s[i, j] = T.if_then_else((bz * pages_per_split + p) * page_size + j < seqlen, 0,
                                                 -T.infinity(accum_dtype))
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, page_size):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, S_shared)  # P through shared memory: the gemm's warps sit along dv
                for i, j in T.Parallel(block_H, dv):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            if num_split == 1:  # the output itself, in its dtype (an empty sequence: zeros)
                for i, d in T.Parallel(block_H, dv):
                    if i < valid_H:
                        Output[bx, head0 + i, d] = T.if_then_else(logsum[i] > 0, acc_o[i, d] / logsum[i], 0)
            else:
                for i, d in T.Parallel(block_H, dv):  # an empty split (logsum 0) writes zeros
                    if i < valid_H:
                        O_partial[bx, head0 + i, bz, d] = T.if_then_else(logsum[i] > 0, acc_o[i, d] / logsum[i], 0)
                for i in T.Parallel(block_H):
                    if i < valid_H:
                        LSE_partial[bx, head0 + i, bz] = T.if_then_else(
                            logsum[i] > 0, T.log2(logsum[i]) + scores_max[i] * scale, -T.infinity(accum_dtype))

    q_t, kv_t = T.Tensor((batch, h_q, dim), dtype), T.Tensor((num_pages, page_size, dim), dtype)
    table_t, lens_t = T.Tensor((batch, max_pages), "int32"), T.Tensor((batch,), "int32")
    if num_split == 1:
        @T.prim_func
        def main(Q: q_t, KV_cache: kv_t, block_table: table_t, cache_seqlens: lens_t,
                 Output: T.Tensor((batch, h_q, dv), dtype)):
            body(Q, KV_cache, block_table, cache_seqlens, Output, Output, Output)

        return (main,)

    @T.prim_func
    def split(Q: q_t, KV_cache: kv_t, block_table: table_t, cache_seqlens: lens_t,
              O_partial: T.Tensor((batch, h_q, num_split, dv), accum_dtype),
              LSE_partial: T.Tensor((batch, h_q, num_split), accum_dtype)):
        body(Q, KV_cache, block_table, cache_seqlens, O_partial, LSE_partial, O_partial)

    return split, combine_splits(batch, h_q, num_split, dv, dtype)


def reference(q, kv_cache, block_table, cache_seqlens, dv=512):
    """softmax(q K^T / sqrt(576)) V per sequence over its first cache_seqlens[b] cached rows (float64)."""
    import torch

    page_size, dim = kv_cache.shape[1], kv_cache.shape[2]
    out = q.new_empty(q.shape[0], q.shape[1], dv)
    for b in range(q.shape[0]):
        n = int(cache_seqlens[b])
        kv = kv_cache[block_table[b, :math.ceil(n / page_size)].long()].reshape(-1, dim)[:n]
        out[b] = torch.softmax(q[b] @ kv.T / math.sqrt(dim), dim=-1) @ kv[:, :dv]
    return out


CASES = [
    # (batch, h_q, cache_seqlens, num_split, dtype)
    (2, 128, [1024, 333], 4, "float16"),
    (3, 128, [1, 64, 4097], 8, "bfloat16"),     # one token, one whole page, many pages; empty splits
    (2, 16, [500, 129], 2, "float16"),          # fewer heads than block_H (padded rows)
    (3, 128, [1, 64, 4097], 8, "bfloat16", {"heads_first": False}),  # the grid's other order
    (2, 128, [1024, 333], 4, "bfloat16", {"cluster_heads": True}),   # pages multicast to both head blocks
    (3, 128, [1, 700, 4097], 1, "bfloat16"),    # one split: the kernel writes the output, no combine
    (2, 16, [500, 129], 1, "float16"),          # one split, padded head rows
]


def run_case(batch, h_q, seqlens, num_split, dtype, options=None, page_size=64):
    import torch

    tdt = getattr(torch, dtype)
    max_pages = max(math.ceil(n / page_size) for n in seqlens)
    num_pages = batch * max_pages + 5
    num_stages = 2 if torch.cuda.get_device_capability()[0] >= 9 else 1
    options = dict(options or {})
    if options.get("cluster_heads") and torch.cuda.get_device_capability()[0] < 9:
        options["cluster_heads"] = False  # clusters need sm_90
    kernels = [_harness.tilec.compile(f, pass_configs=PASS_CONFIGS) for f in mla_decode(
        batch, h_q, num_pages, max_pages, num_split, dtype=dtype, num_stages=num_stages, **options)]
    q = torch.randn(batch, h_q, 576, dtype=tdt, device="cuda")
    kv_cache = torch.randn(num_pages, page_size, 576, dtype=tdt, device="cuda")
    block_table = torch.randperm(num_pages, device="cuda")[:batch * max_pages].int().reshape(batch, max_pages)
    cache_seqlens = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
    o_part = _harness.poisoned((batch, h_q, num_split, 512), torch.float32)
    lse_part = _harness.poisoned((batch, h_q, num_split), torch.float32)

    def run(q, kv_cache, block_table, cache_seqlens, out):
        if num_split == 1:
            kernels[0](q, kv_cache, block_table, cache_seqlens, out)
            return
        split, combine = kernels
        split(q, kv_cache, block_table, cache_seqlens, o_part, lse_part)
        combine(o_part, lse_part, out)

    out = _harness.poisoned((batch, h_q, 512), tdt)
    _harness.check(run, [q, kv_cache, block_table, cache_seqlens], [out], reference, dtype,
                   f"mla_decode b={batch} h_q={h_q} seqlens={seqlens} split={num_split} {dtype} {options or ''}")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling MLA decoding for", ", ".join(_harness.COMPILE_TARGETS))
        for target, num_stages in (("sm_80", 1), ("sm_90a", 2)):
            for f, out_idx in zip(mla_decode(4, 128, 256, 64, num_stages=num_stages), ([4, 5], [2])):
                _harness.compile_only(f, out_idx=out_idx, targets=(target,), show_source=args.show_source)
            (single,) = mla_decode(4, 128, 256, 64, 1, num_stages=num_stages)
            _harness.compile_only(single, out_idx=[4], targets=(target,), show_source=args.show_source)
        return
    _harness.run_cases(CASES, run_case)


if __name__ == "__main__":
    main()
