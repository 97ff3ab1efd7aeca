"""FlashAttention forward over a batch of sequences of different lengths, packed (varlen):
Q is (total_q, heads, dim) and K, V are (total_k, heads_kv, dim), with sequence b's queries at
rows cu_seqlens_q[b] .. cu_seqlens_q[b+1] and its keys at cu_seqlens_k[b] .. cu_seqlens_k[b+1]
(FlashAttention's varlen interface). GQA when heads_kv divides heads; causal masking is top-left
aligned within each sequence (query i of a sequence sees its keys j <= i). fp16 or bf16, float32
accumulation.

One block owns `block_M` queries of one head of one sequence (the grid covers the longest
sequence; blocks past a sequence's end store nothing). The key loop's trip count is read from
cu_seqlens_k (uniform across the block: insert_syncs treats reads of a tensor the kernel never
writes at block-uniform indices as uniform); key tiles run into the next sequence's rows at a
sequence's end, and those keys are masked to -inf before the softmax.
Run: python examples/flash_attention_varlen.py            (checks against torch on a GPU)
     python examples/flash_attention_varlen.py --compile-only
"""
import math

import _harness
import tilec.language as T
from tilec.ops.attention_kernels import PASS_CONFIGS  # the softmax's exp2 as one MUFU.EX2 (fast math)

LOG2E = 1.44269504088896340736


def flash_attention_varlen(batch, heads, dim, total_q, total_k, max_seqlen_q, is_causal=False, heads_kv=None,
                           block_M=64, block_N=64, dtype="float16", num_stages=2, threads=128):
    heads_kv = heads if heads_kv is None else heads_kv
    if heads % heads_kv != 0:
        raise ValueError(f"flash_attention_varlen: heads_kv ({heads_kv}) must divide heads ({heads})")
    groups = heads // heads_kv
    scale = (1.0 / dim) ** 0.5 * LOG2E  # softmax in base 2
    accum_dtype = "float32"

    @T.prim_func
    def flash_varlen(Q: T.Tensor((total_q, heads, dim), dtype), K: T.Tensor((total_k, heads_kv, dim), dtype),
                     V: T.Tensor((total_k, heads_kv, dim), dtype), cu_seqlens_q: T.Tensor((batch + 1,), "int32"),
                     cu_seqlens_k: T.Tensor((batch + 1,), "int32"), Output: T.Tensor((total_q, heads, dim), dtype)):
        with T.Kernel(T.ceildiv(max_seqlen_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum_dtype)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum_dtype)
            scores_max = T.alloc_fragment((block_M,), accum_dtype)
            scores_max_prev = T.alloc_fragment((block_M,), accum_dtype)
            scores_scale = T.alloc_fragment((block_M,), accum_dtype)
            scores_sum = T.alloc_fragment((block_M,), accum_dtype)
            logsum = T.alloc_fragment((block_M,), accum_dtype)
            q_start = cu_seqlens_q[bz]
            q_len = cu_seqlens_q[bz + 1] - q_start
            k_start = cu_seqlens_k[bz]
            k_len = cu_seqlens_k[bz + 1] - k_start
            hk = by // groups

            T.copy(Q[q_start + bx * block_M:q_start + (bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            loop_range = (T.min(T.ceildiv(k_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(k_len, block_N))
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[k_start + k * block_N:k_start + (k + 1) * block_N, hk, :], K_shared)
                for i, j in T.Parallel(block_M, block_N):
                    visible = k * block_N + j < k_len
                    if is_causal:
                        visible = visible and bx * block_M + i >= k * block_N + j
                    acc_s[i, j] = T.if_then_else(visible, 0, -T.infinity(accum_dtype))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[k_start + k * block_N:k_start + (k + 1) * block_N, hk, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            # Rows of this block that belong to the sequence (the rest are the next one's queries,
            # or past the end of Q): a sequence without keys gets zeros, not 0/0.
            for i, j in T.Parallel(block_M, dim):
                if bx * block_M + i < q_len:
                    Output[q_start + bx * block_M + i, by, j] = T.if_then_else(
                        logsum[i] > 0, acc_o[i, j] / logsum[i], 0)

    return flash_varlen


def reference(q, k, v, cu_q, cu_k, is_causal):
    """Per sequence: softmax(Q K^T / sqrt(dim)) V, in the inputs' precision (float64 from the harness)."""
    import torch

    out = torch.zeros_like(q)
    heads, heads_kv = q.shape[1], k.shape[1]
    for b in range(len(cu_q) - 1):
        qs, qe, ks, ke = int(cu_q[b]), int(cu_q[b + 1]), int(cu_k[b]), int(cu_k[b + 1])
        if qe == qs or ke == ks:
            continue
        qb = q[qs:qe].transpose(0, 1)                                      # (heads, lq, dim)
        kb = k[ks:ke].repeat_interleave(heads // heads_kv, dim=1).transpose(0, 1)
        vb = v[ks:ke].repeat_interleave(heads // heads_kv, dim=1).transpose(0, 1)
        s = qb @ kb.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if is_causal:
            lq, lk = qe - qs, ke - ks
            mask = torch.ones(lq, lk, dtype=torch.bool, device=s.device).tril()
            s = s.masked_fill(~mask, float("-inf"))
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)                      # a query seeing no key: zeros
        out[qs:qe] = (p @ vb).transpose(0, 1)
    return out


CASES = [
    # (seqlens_q, seqlens_k, heads, heads_kv, dim, is_causal, dtype)
    ([100, 37, 256, 1], [100, 37, 256, 1], 4, 4, 64, False, "float16"),
    ([64, 200, 129], [300, 65, 129], 4, 2, 64, False, "bfloat16"),
    ([130, 64, 77], [130, 64, 77], 2, 2, 128, True, "float16"),
    ([33, 190], [40, 250], 4, 1, 128, True, "bfloat16"),
]


def build(seqlens_q, seqlens_k, heads, heads_kv, dim, is_causal, dtype):
    return flash_attention_varlen(len(seqlens_q), heads, dim, sum(seqlens_q), sum(seqlens_k), max(seqlens_q),
                                  is_causal, heads_kv, dtype=dtype)


def run_case(seqlens_q, seqlens_k, heads, heads_kv, dim, is_causal, dtype):
    import torch

    tdt = getattr(torch, dtype)
    kernel = _harness.tilec.compile(build(seqlens_q, seqlens_k, heads, heads_kv, dim, is_causal, dtype),
                                    target="auto", pass_configs=PASS_CONFIGS)
    cu = lambda lens: torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device="cuda")  # noqa: E731
    cu_q, cu_k = cu(seqlens_q), cu(seqlens_k)
    q = torch.randn(sum(seqlens_q), heads, dim, dtype=tdt, device="cuda")
    k, v = (torch.randn(sum(seqlens_k), heads_kv, dim, dtype=tdt, device="cuda") for _ in range(2))
    out = _harness.poisoned((sum(seqlens_q), heads, dim), tdt)
    _harness.check(kernel, [q, k, v, cu_q, cu_k], [out],
                   lambda q, k, v, cq, ck: reference(q, k, v, cq.tolist(), ck.tolist(), is_causal), dtype,
                   f"flash_attention_varlen q={seqlens_q} k={seqlens_k} h={heads}/{heads_kv} d={dim} "
                   f"causal={is_causal} {dtype}")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling varlen FlashAttention for", ", ".join(_harness.COMPILE_TARGETS))
        for case in CASES[:2]:
            _harness.compile_only(build(*case), out_idx=[5], show_source=args.show_source)
        return
    _harness.run_cases(_harness.cases(CASES), run_case)


if __name__ == "__main__":
    main()
