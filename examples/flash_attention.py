"""FlashAttention forward (non-causal or causal): O = softmax(Q K^T * scale) V per (batch, head).

Q, K, V, O are (batch, seq, heads, dim), fp16 or bf16; scores and the output accumulate in
float32. One block of 256 threads owns `block_M` query rows of one head: Q is staged in shared
memory once, then a software-pipelined loop walks the keys `block_N` at a time:
  S = Q K^T                 (T.gemm, both operands in shared memory, S in registers)
  online softmax            (T.reduce_max / T.reduce_sum on the register fragments, exp2)
  O = O * rescale + P V     (P = S cast to 16 bits, a register fragment fed straight to
                             T.gemm as its A operand: tl::gemm_rs, no trip through shared)
Both GEMMs use policy FullRow (every warp along M) so that S and P share one fragment
layout, which is also the layout of the mma.sync A registers.
The key length must be a multiple of block_N (keys past the end would need masking before
the softmax); the query length may be anything (partial query blocks are guarded).
Run: python examples/flash_attention.py            (checks against torch on a GPU)
     python examples/flash_attention.py --compile-only
"""
import math

import _harness
import tilec.language as T


def flash_attention(batch, heads, seq_len, dim, is_causal=False, block_M=128, block_N=None, dtype="float16",
                    num_stages=2, threads=256):
    if block_N is None:
        block_N = 64 if dim <= 64 else 128  # (with 256 threads: no register spills on sm_80 / sm_90a)
    if seq_len % block_N != 0:
        raise ValueError(f"flash_attention: seq_len ({seq_len}) must be a multiple of block_N ({block_N}); "
                         f"keys past the end are not masked")
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e): softmax in base 2
    shape = (batch, seq_len, heads, dim)
    accum_dtype = "float32"

    @T.prim_func
    def flash_fwd(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                  Output: T.Tensor(shape, dtype)):
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

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(seq_len, block_N))
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                                     -T.infinity(accum_dtype))
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
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return flash_fwd


def reference(q, k, v, is_causal):
    """softmax(Q K^T / sqrt(dim)) V in the input's precision (float64 from the harness)."""
    import torch

    dim = q.shape[-1]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # (batch, heads, seq, dim)
    s = qt @ kt.transpose(-1, -2) / math.sqrt(dim)
    if is_causal:
        n = s.shape[-1]
        mask = torch.ones(n, n, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    return (torch.softmax(s, dim=-1) @ vt).transpose(1, 2)


CASES = [
    # (batch, heads, seq_len, dim, is_causal, dtype)
    (1, 4, 256, 64, False, "float16"),
    (2, 8, 1024, 64, False, "float16"),
    (1, 4, 320, 64, False, "float16"),     # a partial block of queries (320 = 2.5 x 128)
    (2, 4, 512, 128, False, "float16"),
    (1, 8, 768, 128, False, "bfloat16"),
    (2, 4, 512, 64, True, "float16"),
    (1, 4, 384, 128, True, "bfloat16"),
]


def run_case(batch, heads, seq_len, dim, is_causal, dtype):
    import torch

    tdt = getattr(torch, dtype)
    kernel = _harness.tilec.compile(flash_attention(batch, heads, seq_len, dim, is_causal, dtype=dtype),
                                    target="auto")
    q, k, v = (torch.randn(batch, seq_len, heads, dim, dtype=tdt, device="cuda") for _ in range(3))
    out = _harness.poisoned((batch, seq_len, heads, dim), tdt)
    _harness.check(kernel, [q, k, v], [out], lambda q, k, v: reference(q, k, v, is_causal), dtype,
                   f"flash_attention b={batch} h={heads} seq={seq_len} dim={dim} causal={is_causal} {dtype}")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling FlashAttention for", ", ".join(_harness.COMPILE_TARGETS))
        for dim in (64, 128):
            _harness.compile_only(flash_attention(1, 8, 1024, dim), out_idx=[3], show_source=args.show_source)
        return
    for case in _harness.cases(CASES):
        run_case(*case)


if __name__ == "__main__":
    main()
