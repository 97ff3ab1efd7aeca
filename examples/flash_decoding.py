"""Flash-Decoding over a paged KV cache: one query token per sequence, split-KV, then a combine.

Q (batch, heads, dim); the cache is pages of `page_size` tokens: K_cache, V_cache
(num_pages, page_size, heads_kv, dim), page p of sequence b at block_table[b, p]; sequence b
holds cache_seqlens[b] tokens (any number: ragged). heads_kv divides heads (GQA).
  split kernel    grid (batch, head blocks, num_split): the query heads that share one KV head
                  (padded to block_H rows: the gemm's M) walk the pages of their split with the
                  online softmax of FlashAttention; each writes its partial output and its
                  base-2 log-sum-exp. An empty split writes O = 0, LSE = -inf.
                  Every split walks ceil(max_pages / num_split) pages and masks those past its
                  sequence: a trip count read from cache_seqlens would make tilec treat the loop
                  as thread-divergent (it cannot place the barriers such a loop needs).
  combine kernel  grid (heads, batch): O = sum_s 2^(lse_s - lse) O_s, lse = log2 sum_s 2^lse_s.
Run: python examples/flash_decoding.py            (checks against torch on a GPU)
     python examples/flash_decoding.py --compile-only
"""
import math

import _harness
import tilec.language as T
from tilec.ops.attention_kernels import PASS_CONFIGS  # the softmax's exp2 as one MUFU.EX2 (fast math)

LOG2E = 1.44269504088896340736
NO_SCORE = -1e30  # the running max before any key: finite, so a split whose keys are all masked stays NaN-free


def flash_decoding(batch, heads, heads_kv, dim, num_pages, max_pages, page_size=64, num_split=4, block_H=64,
                   dtype="float16", threads=128, num_stages=2):
    """The split kernel and the combine kernel."""
    if heads % heads_kv != 0:
        raise ValueError(f"flash_decoding: heads_kv ({heads_kv}) must divide heads ({heads})")
    groups = heads // heads_kv
    valid_H = min(block_H, groups)  # query heads per block
    if groups % valid_H != 0:
        raise ValueError(f"flash_decoding: the query heads per KV head ({groups}) must be at most block_H "
                         f"({block_H}) or a multiple of it")
    scale = (1.0 / dim) ** 0.5 * LOG2E
    accum_dtype = "float32"
    pages_per_split = -(-max_pages // num_split)  # a static trip count (see the module docstring)
    cache_shape = (num_pages, page_size, heads_kv, dim)
    part_shape, lse_shape = (batch, heads, num_split, dim), (batch, heads, num_split)

    @T.prim_func
    def split(Q: T.Tensor((batch, heads, dim), dtype), K_cache: T.Tensor(cache_shape, dtype),
              V_cache: T.Tensor(cache_shape, dtype), block_table: T.Tensor((batch, max_pages), "int32"),
              cache_seqlens: T.Tensor((batch,), "int32"), O_partial: T.Tensor(part_shape, accum_dtype),
              LSE_partial: T.Tensor(lse_shape, accum_dtype)):
        with T.Kernel(batch, heads // valid_H, num_split, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_H, dim), dtype)
            K_shared = T.alloc_shared((page_size, dim), dtype)
            V_shared = T.alloc_shared((page_size, dim), dtype)
            acc_s = T.alloc_fragment((block_H, page_size), accum_dtype)
            acc_s_cast = T.alloc_fragment((block_H, page_size), dtype)
            acc_o = T.alloc_fragment((block_H, dim), accum_dtype)
            scores_max = T.alloc_fragment((block_H,), accum_dtype)
            scores_max_prev = T.alloc_fragment((block_H,), accum_dtype)
            scores_scale = T.alloc_fragment((block_H,), accum_dtype)
            scores_sum = T.alloc_fragment((block_H,), accum_dtype)
            logsum = T.alloc_fragment((block_H,), accum_dtype)
            head0 = by * valid_H
            hk = head0 // groups
            seqlen = cache_seqlens[bx]
            last_page = T.ceildiv(seqlen, page_size) - 1

            for i, d in T.Parallel(block_H, dim):  # rows past the group's heads are padding (zeros)
                Q_shared[i, d] = T.if_then_else(i < valid_H, Q[bx, T.min(head0 + i, heads - 1), d], 0)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, NO_SCORE)
            for p in T.Pipelined(pages_per_split, num_stages=num_stages):
                # Pages past the sequence are masked (a split may hold none); the load then
                # re-reads its last page rather than an unset block-table entry.
                page = block_table[bx, T.min(bz * pages_per_split + p, last_page)]
                T.copy(K_cache[page, :, hk, :], K_shared)
                for i, j in T.Parallel(block_H, page_size):
                    acc_s[i, j] = T.if_then_else((bz * pages_per_split + p) * page_size + j < seqlen, 0,
                                                 -T.infinity(accum_dtype))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
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
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V_cache[page, :, hk, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, d in T.Parallel(block_H, dim):  # an empty split (logsum 0) writes zeros
                if i < valid_H:
                    O_partial[bx, head0 + i, bz, d] = T.if_then_else(logsum[i] > 0, acc_o[i, d] / logsum[i], 0)
            for i in T.Parallel(block_H):
                if i < valid_H:
                    LSE_partial[bx, head0 + i, bz] = T.if_then_else(
                        logsum[i] > 0, T.log2(logsum[i]) + scores_max[i] * scale, -T.infinity(accum_dtype))

    return split, combine_splits(batch, heads, num_split, dim, dtype)


def combine_splits(batch, heads, num_split, dim, dtype):
    """O[b, h] = sum_s 2^(lse_s - lse) O_s / sum_s 2^(lse_s - lse), lse = max_s lse_s (examples/mla_decode.py
    uses it too)."""
    accum_dtype = "float32"
    part_shape, lse_shape = (batch, heads, num_split, dim), (batch, heads, num_split)

    @T.prim_func
    def combine(O_partial: T.Tensor(part_shape, accum_dtype), LSE_partial: T.Tensor(lse_shape, accum_dtype),
                Output: T.Tensor((batch, heads, dim), dtype)):
        with T.Kernel(heads, batch, threads=128) as (bx, by):
            o = T.alloc_fragment((dim,), accum_dtype)
            lse_max = T.alloc_var(accum_dtype, init=-T.infinity(accum_dtype))
            total = T.alloc_var(accum_dtype, init=0)
            for s in T.serial(num_split):
                lse_max = T.max(lse_max, LSE_partial[by, bx, s])
            for s in T.serial(num_split):
                total = total + T.exp2(LSE_partial[by, bx, s] - lse_max)
            T.clear(o)
            for s in T.serial(num_split):
                for d in T.Parallel(dim):
                    o[d] += T.exp2(LSE_partial[by, bx, s] - lse_max) * O_partial[by, bx, s, d]
            for d in T.Parallel(dim):
                Output[by, bx, d] = o[d] / total

    return combine


def reference(q, k_cache, v_cache, block_table, cache_seqlens):
    """Attention of each sequence's query over its first cache_seqlens[b] cached tokens (float64)."""
    import torch

    batch, heads, dim = q.shape
    page_size, heads_kv = k_cache.shape[1], k_cache.shape[2]
    out = torch.empty_like(q)
    for b in range(batch):
        n = int(cache_seqlens[b])
        pages = block_table[b, :math.ceil(n / page_size)].long()
        k = k_cache[pages].reshape(-1, heads_kv, dim)[:n].repeat_interleave(heads // heads_kv, 1)  # (n, heads, dim)
        v = v_cache[pages].reshape(-1, heads_kv, dim)[:n].repeat_interleave(heads // heads_kv, 1)
        s = torch.einsum("hd,nhd->hn", q[b], k) / math.sqrt(dim)
        out[b] = torch.einsum("hn,nhd->hd", torch.softmax(s, dim=-1), v)
    return out


CASES = [
    # (batch, heads, heads_kv, dim, cache_seqlens, num_split, dtype)
    (2, 32, 8, 128, [1000, 4096], 4, "float16"),
    (4, 16, 2, 128, [1, 63, 64, 777], 8, "float16"),       # ragged: 1 token, part of a page, empty splits
    (3, 8, 8, 64, [129, 2000, 65], 2, "bfloat16"),          # MHA
    (2, 128, 1, 128, [513, 300], 4, "bfloat16"),            # MQA, 128 heads: two head blocks per KV head
]


def run_case(batch, heads, heads_kv, dim, seqlens, num_split, dtype, page_size=64):
    import torch

    tdt = getattr(torch, dtype)
    max_pages = max(math.ceil(n / page_size) for n in seqlens)
    num_pages = batch * max_pages + 3
    split, combine = (_harness.tilec.compile(f, pass_configs=PASS_CONFIGS) for f in flash_decoding(
        batch, heads, heads_kv, dim, num_pages, max_pages, page_size, num_split, dtype=dtype))
    q = torch.randn(batch, heads, dim, dtype=tdt, device="cuda")
    k_cache, v_cache = (torch.randn(num_pages, page_size, heads_kv, dim, dtype=tdt, device="cuda") for _ in range(2))
    block_table = torch.randperm(num_pages, device="cuda")[:batch * max_pages].int().reshape(batch, max_pages)
    cache_seqlens = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
    o_part = _harness.poisoned((batch, heads, num_split, dim), torch.float32)
    lse_part = _harness.poisoned((batch, heads, num_split), torch.float32)

    def run(q, k_cache, v_cache, block_table, cache_seqlens, out):
        split(q, k_cache, v_cache, block_table, cache_seqlens, o_part, lse_part)
        combine(o_part, lse_part, out)

    out = _harness.poisoned((batch, heads, dim), tdt)
    _harness.check(run, [q, k_cache, v_cache, block_table, cache_seqlens], [out], reference, dtype,
                   f"flash_decoding b={batch} h={heads}/{heads_kv} dim={dim} seqlens={seqlens} split={num_split} {dtype}")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling Flash-Decoding for", ", ".join(_harness.COMPILE_TARGETS))
        for f, out_idx in zip(flash_decoding(4, 32, 8, 128, 256, 64), ([5, 6], [2])):
            _harness.compile_only(f, out_idx=out_idx, show_source=args.show_source)
        return
    _harness.run_cases(CASES, run_case)


if __name__ == "__main__":
    main()
