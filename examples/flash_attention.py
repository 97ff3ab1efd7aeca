"""FlashAttention forward: O = softmax(Q K^T * scale) V per (batch, head), MHA or GQA, causal or not.

Q and O are (batch, seq_len, heads, dim); K and V are (batch, seq_len_kv, heads_kv, dim), with
heads_kv dividing heads (GQA: query head h reads key/value head h // (heads // heads_kv)); fp16 or
bf16; scores and the output accumulate in float32. With return_lse=True the kernel also writes
LSE (batch, heads, seq_len), float32, the natural-log log-sum-exp of each row of scaled scores
(what the backward pass needs). Causal masking is top-left aligned, as torch's
scaled_dot_product_attention(is_causal=True): query i sees keys j <= i.
One block of `threads` threads owns `block_M` query rows of one head: Q is staged in shared
memory once, then a software-pipelined loop walks the keys `block_N` at a time:
  S = Q K^T                 (T.gemm, both operands in shared memory, S in registers); S starts
                            at 0 or -inf per element: -inf masks keys past seq_len_kv and, when
                            causal, keys after the query (the gemm accumulates onto it)
  online softmax            (T.reduce_max / T.reduce_sum on the register fragments, exp2)
  O = O * rescale + P V     (P = S cast to 16 bits, a register fragment fed straight to
                             T.gemm as its A operand: tl::gemm_rs / wgmma with A in registers)
Both GEMMs use policy FullRow (every warp along M) so that S and P share one fragment layout.
Any key and query lengths work: partial key blocks are masked (their out-of-range rows of K and
V are loaded as zeros), partial query blocks are guarded. On sm_90a the loop is warp-specialized
(a TMA producer warpgroup, wgmma consumers): the mask is a fill of S, which does not read the
pipelined K/V tiles, so it keeps the loop in the form that pass takes.
Run: python examples/flash_attention.py            (checks against torch on a GPU)
     python examples/flash_attention.py --compile-only
"""
import math

import _harness
import tilec.language as T

LOG2E = 1.44269504088896340736


def flash_attention(batch, heads, seq_len, dim, is_causal=False, block_M=128, block_N=None, dtype="float16",
                    num_stages=2, threads=256, heads_kv=None, seq_len_kv=None, return_lse=False):
    heads_kv = heads if heads_kv is None else heads_kv
    seq_len_kv = seq_len if seq_len_kv is None else seq_len_kv
    if heads % heads_kv != 0:
        raise ValueError(f"flash_attention: heads_kv ({heads_kv}) must divide heads ({heads})")
    if dim not in (64, 128, 256):
        raise ValueError(f"flash_attention: head dim {dim} is not supported (64, 128 or 256)")
    # Defaults without register spills on sm_80 / sm_90a (and, at head dim 256, double-buffered K and V
    # tiles within sm_80's shared memory).
    block_N = block_N or {64: 64, 128: 128, 256: 32}[dim]
    if seq_len < block_M or seq_len_kv < block_N:
        raise ValueError(f"flash_attention: seq_len ({seq_len}) and seq_len_kv ({seq_len_kv}) must be at least "
                         f"block_M ({block_M}) and block_N ({block_N}); pass smaller blocks")
    groups = heads // heads_kv
    scale = (1.0 / dim) ** 0.5 * LOG2E  # softmax in base 2
    q_shape, kv_shape = (batch, seq_len, heads, dim), (batch, seq_len_kv, heads_kv, dim)
    accum_dtype = "float32"
    ragged_kv = seq_len_kv % block_N != 0

    @T.macro
    def body(Q, K, V, Output, LSE):  # LSE is read only when return_lse
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
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
            hk = by // groups

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (T.min(T.ceildiv(seq_len_kv, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(seq_len_kv, block_N))
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, hk, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else((bx * block_M + i >= k * block_N + j) and
                                                     (k * block_N + j < seq_len_kv), 0, -T.infinity(accum_dtype))
                elif ragged_kv:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j < seq_len_kv, 0, -T.infinity(accum_dtype))
                else:
                    T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                # Online softmax: running row max, rescale of what was accumulated so far.
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
                T.copy(acc_s, acc_s_cast)  # float32 -> 16 bits, register to register
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, hk, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])
            if return_lse:  # natural log: (log2(sum) + max * scale) / log2(e)
                for i in T.Parallel(block_M):
                    logsum[i] = (T.log2(logsum[i]) + scores_max[i] * scale) / LOG2E
                T.copy(logsum, LSE[bz, by, bx * block_M:(bx + 1) * block_M])

    if not return_lse:
        @T.prim_func
        def flash_fwd(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                      Output: T.Tensor(q_shape, dtype)):
            body(Q, K, V, Output, Output)
        return flash_fwd

    @T.prim_func
    def flash_fwd_lse(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                      Output: T.Tensor(q_shape, dtype), LSE: T.Tensor((batch, heads, seq_len), accum_dtype)):
        body(Q, K, V, Output, LSE)
    return flash_fwd_lse


def reference(q, k, v, is_causal, return_lse=False):
    """softmax(Q K^T / sqrt(dim)) V (and the rows' log-sum-exp) in the input's precision (float64 from
    the harness); K and V heads repeated for GQA; causal top-left aligned."""
    import torch

    groups = q.shape[2] // k.shape[2]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k.repeat_interleave(groups, 2), v.repeat_interleave(groups, 2)))
    s = qt @ kt.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (batch, heads, seq_len, seq_len_kv)
    if is_causal:
        mask = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    out = (torch.softmax(s, dim=-1) @ vt).transpose(1, 2)
    return [out, torch.logsumexp(s, dim=-1)] if return_lse else out


CASES = [
    # (batch, heads, seq_len, dim, is_causal, dtype, heads_kv, seq_len_kv, return_lse)
    (1, 4, 256, 64, False, "float16", None, None, False),
    (2, 8, 1024, 64, False, "float16", None, None, True),
    (1, 4, 320, 64, False, "float16", None, None, False),     # a partial block of queries (320 = 2.5 x 128)
    (2, 4, 512, 128, False, "float16", None, None, False),
    (1, 8, 768, 128, False, "bfloat16", None, None, True),
    (2, 4, 512, 64, True, "float16", None, None, True),
    (1, 4, 384, 128, True, "bfloat16", None, None, False),
    (2, 8, 333, 64, False, "float16", 2, 333, True),          # GQA 4:1, ragged queries and keys
    (1, 8, 200, 128, True, "bfloat16", 8, 517, True),          # causal, more keys than queries, ragged
    (2, 6, 401, 128, True, "float16", 3, 390, True),           # GQA 2:1, causal, fewer keys than queries
    (1, 4, 1000, 64, False, "bfloat16", 1, 77, False),         # MQA, keys shorter than two blocks
    (1, 4, 300, 256, False, "bfloat16", 2, 250, True),         # head dim 256
    (1, 2, 256, 256, True, "float16", None, None, False),
]


def run_case(batch, heads, seq_len, dim, is_causal, dtype, heads_kv, seq_len_kv, return_lse):
    import torch

    tdt = getattr(torch, dtype)
    hkv, skv = heads_kv or heads, seq_len_kv or seq_len
    kernel = _harness.tilec.compile(flash_attention(batch, heads, seq_len, dim, is_causal, dtype=dtype, heads_kv=hkv,
                                                    seq_len_kv=skv, return_lse=return_lse), target="auto")
    q = torch.randn(batch, seq_len, heads, dim, dtype=tdt, device="cuda")
    k, v = (torch.randn(batch, skv, hkv, dim, dtype=tdt, device="cuda") for _ in range(2))
    outs = [_harness.poisoned((batch, seq_len, heads, dim), tdt)]
    if return_lse:
        outs.append(_harness.poisoned((batch, heads, seq_len), torch.float32))
    _harness.check(kernel, [q, k, v], outs, lambda q, k, v: reference(q, k, v, is_causal, return_lse), dtype,
                   f"flash_attention b={batch} h={heads}/{hkv} seq={seq_len}/{skv} dim={dim} causal={is_causal} "
                   f"lse={return_lse} {dtype}")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling FlashAttention for", ", ".join(_harness.COMPILE_TARGETS))
        for dim in (64, 128, 256):
            _harness.compile_only(flash_attention(1, 8, 1024, dim), out_idx=[3], show_source=args.show_source)
        _harness.compile_only(flash_attention(2, 8, 333, 128, True, heads_kv=2, seq_len_kv=517, return_lse=True),
                              out_idx=[3, 4], show_source=args.show_source)
        return
    _harness.run_cases(CASES, run_case)


if __name__ == "__main__":
    main()
