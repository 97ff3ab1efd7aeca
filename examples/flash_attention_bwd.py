"""FlashAttention backward (MHA, causal or not): dQ, dK, dV from Q, K, V, O, dO and the forward's LSE.

Layout (batch, seq_len, heads, dim), fp16 or bf16; LSE (batch, heads, seq_len) float32, natural
log, as examples/flash_attention.py writes it with return_lse=True. Three kernels:
  preprocess   Delta = rowsum(dO * O)                          (batch, heads, seq_len) float32
  main         one block per `block_M` keys of one head; K, V stay in shared memory while a
               pipelined loop walks the queries `block_N` at a time and recomputes
                 P^T  = exp(K Q^T * scale - LSE)       (0 where masked: causal, rows past the end)
                 dP^T = V dO^T
                 dS^T = P^T * (dP^T - Delta) * scale
                 dV += P^T dO,  dK += dS^T Q           (P^T, dS^T straight from registers)
                 dQ += dS K                            (float32, T.atomic_add: blocks share rows)
  postprocess  dQ float32 -> dtype
Any sequence length works: partial blocks are masked (P = 0) and their stores guarded.
Run: python examples/flash_attention_bwd.py            (checks against torch autograd in float64)
     python examples/flash_attention_bwd.py --compile-only
"""
import _harness
import flash_attention as fwd
import tilec.language as T

LOG2E = fwd.LOG2E


def flash_attention_bwd(batch, heads, seq_len, dim, is_causal=False, dtype="float16", block_M=64, block_N=None,
                        threads=128, num_stages=2):
    """The three kernels (preprocess, main, postprocess) of the backward pass. The default blocks do
    not spill registers on sm_90a (on sm_80 head dim 128 spills a few bytes: a PerformanceWarning)."""
    block_N = block_N or 32
    if seq_len < max(block_M, block_N):
        raise ValueError(f"flash_attention_bwd: seq_len ({seq_len}) must be at least block_M ({block_M}) "
                         f"and block_N ({block_N})")
    sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * LOG2E  # exponentials in base 2
    shape, row_shape = (batch, seq_len, heads, dim), (batch, heads, seq_len)
    accum_dtype = "float32"
    blk = 32

    @T.prim_func
    def preprocess(O: T.Tensor(shape, dtype), dO: T.Tensor(shape, dtype), Delta: T.Tensor(row_shape, accum_dtype)):
        with T.Kernel(heads, T.ceildiv(seq_len, blk), batch, threads=128) as (bx, by, bz):
            o = T.alloc_fragment((blk, dim), dtype)
            do = T.alloc_fragment((blk, dim), dtype)
            prod = T.alloc_fragment((blk, dim), accum_dtype)
            delta = T.alloc_fragment((blk,), accum_dtype)
            T.copy(O[bz, by * blk:(by + 1) * blk, bx, :], o)
            T.copy(dO[bz, by * blk:(by + 1) * blk, bx, :], do)
            for i, j in T.Parallel(blk, dim):
                prod[i, j] = T.cast(o[i, j], accum_dtype) * T.cast(do[i, j], accum_dtype)
            T.reduce_sum(prod, delta, dim=1)
            T.copy(delta, Delta[bz, bx, by * blk:(by + 1) * blk])

    @T.prim_func
    def flash_bwd(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                  dO: T.Tensor(shape, dtype), LSE: T.Tensor(row_shape, accum_dtype),
                  Delta: T.Tensor(row_shape, accum_dtype), dQ: T.Tensor(shape, accum_dtype),
                  dK: T.Tensor(shape, dtype), dV: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            K_shared = T.alloc_shared((block_M, dim), dtype)
            V_shared = T.alloc_shared((block_M, dim), dtype)
            q = T.alloc_shared((block_N, dim), dtype)
            do = T.alloc_shared((block_N, dim), dtype)
            dsT_shared = T.alloc_shared((block_M, block_N), dtype)
            qkT = T.alloc_fragment((block_M, block_N), accum_dtype)
            dpT = T.alloc_fragment((block_M, block_N), accum_dtype)
            pT_cast = T.alloc_fragment((block_M, block_N), dtype)
            dsT_cast = T.alloc_fragment((block_M, block_N), dtype)
            dv = T.alloc_fragment((block_M, dim), accum_dtype)
            dk = T.alloc_fragment((block_M, dim), accum_dtype)
            dq = T.alloc_fragment((block_N, dim), accum_dtype)

            T.copy(K[bz, bx * block_M:(bx + 1) * block_M, by, :], K_shared)
            T.copy(V[bz, bx * block_M:(bx + 1) * block_M, by, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            loop_st = T.floordiv(bx * block_M, block_N) if is_causal else 0
            for k in T.Pipelined(loop_st, T.ceildiv(seq_len, block_N), num_stages=num_stages):
                T.copy(Q[bz, k * block_N:(k + 1) * block_N, by, :], q)
                T.copy(dO[bz, k * block_N:(k + 1) * block_N, by, :], do)
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.clear(dpT)
                T.gemm(V_shared, do, dpT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                # P^T[i, j] for key bx*block_M + i, query k*block_N + j; LSE and Delta read in place
                # (clamped index: masked entries read a valid row they then ignore).
                for i, j in T.Parallel(block_M, block_N):
                    key, query = bx * block_M + i, k * block_N + j
                    row = T.min(query, seq_len - 1)
                    live = (key < seq_len) and (query < seq_len) and ((key <= query) if is_causal else True)
                    qkT[i, j] = T.if_then_else(live, T.exp2(qkT[i, j] * scale - LSE[bz, by, row] * LOG2E), 0)
                    dpT[i, j] = qkT[i, j] * (dpT[i, j] - Delta[bz, by, row]) * sm_scale
                T.copy(qkT, pT_cast)
                T.gemm(pT_cast, do, dv, policy=T.GemmWarpPolicy.FullRow)
                T.copy(dpT, dsT_cast)
                T.gemm(dsT_cast, q, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(dsT_cast, dsT_shared)
                T.clear(dq)
                T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
                for i, j in T.Parallel(block_N, dim):
                    if k * block_N + i < seq_len:
                        T.atomic_add(dQ[bz, k * block_N + i, by, j], dq[i, j])
            T.copy(dv, dV[bz, bx * block_M:(bx + 1) * block_M, by, :])
            T.copy(dk, dK[bz, bx * block_M:(bx + 1) * block_M, by, :])

    @T.prim_func
    def postprocess(dQ: T.Tensor(shape, accum_dtype), dQ_out: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, 64), heads, batch, threads=128) as (bx, by, bz):
            dq = T.alloc_fragment((64, dim), accum_dtype)
            T.copy(dQ[bz, bx * 64:(bx + 1) * 64, by, :], dq)
            T.copy(dq, dQ_out[bz, bx * 64:(bx + 1) * 64, by, :])

    return preprocess, flash_bwd, postprocess


def reference(q, k, v, do, is_causal):
    """dQ, dK, dV of softmax(Q K^T / sqrt(dim)) V (causal top-left) by torch autograd, in the inputs'
    precision (float64 here)."""
    import torch

    q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
    out = fwd.reference(q, k, v, is_causal)
    return torch.autograd.grad(out, (q, k, v), do)


# Gradients grow with the sequence length; they are compared relative to their largest element.
GRAD_TOLERANCE = {"float16": 1e-2, "bfloat16": 3e-2}

CASES = [
    # (batch, heads, seq_len, dim, is_causal, dtype)
    (1, 4, 256, 64, False, "float16"),
    (2, 4, 512, 64, True, "float16"),
    (1, 4, 300, 64, False, "float16"),      # partial key and query blocks
    (2, 2, 333, 128, True, "float16"),
    (1, 4, 256, 128, False, "bfloat16"),
    (1, 2, 197, 64, True, "bfloat16"),
]


def run_case(batch, heads, seq_len, dim, is_causal, dtype):
    import torch

    tdt = getattr(torch, dtype)
    compile_ = _harness.tilec.compile
    forward = compile_(fwd.flash_attention(batch, heads, seq_len, dim, is_causal, dtype=dtype, return_lse=True))
    prep, bwd, post = (compile_(f) for f in flash_attention_bwd(batch, heads, seq_len, dim, is_causal, dtype))
    shape = (batch, seq_len, heads, dim)
    q, k, v, do = (torch.randn(shape, dtype=tdt, device="cuda") for _ in range(4))
    o, lse = _harness.poisoned(shape, tdt), _harness.poisoned((batch, heads, seq_len), torch.float32)
    forward(q, k, v, o, lse)
    delta = _harness.poisoned((batch, heads, seq_len), torch.float32)
    prep(o, do, delta)
    dq_acc = torch.zeros(shape, dtype=torch.float32, device="cuda")  # accumulated by atomics: starts at 0
    dq, dk, dv = (_harness.poisoned(shape, tdt) for _ in range(3))
    bwd(q, k, v, do, lse, delta, dq_acc, dk, dv)
    post(dq_acc, dq)
    torch.cuda.synchronize()
    refs = reference(*(x.double() for x in (q, k, v, do)), is_causal)
    delta_ref = (o.double() * do.double()).sum(-1).transpose(1, 2)
    label = f"flash_attention_bwd b={batch} h={heads} seq={seq_len} dim={dim} causal={is_causal} {dtype}"
    tol = GRAD_TOLERANCE[dtype]
    for name, got, want in [("Delta", delta, delta_ref)] + list(zip(("dQ", "dK", "dV"), (dq, dk, dv), refs)):
        if not torch.isfinite(got).all():
            raise AssertionError(f"{label}: {name} has non-finite values (poison not overwritten?)")
        err = (got.double() - want).abs().max().item() / max(want.abs().max().item(), 1e-6)
        if err > tol:
            raise AssertionError(f"{label}: {name} max error {err:.2e} of its largest element (tolerance {tol})")
    print(f"  {label}: ok")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling the FlashAttention backward for",
              ", ".join(_harness.COMPILE_TARGETS))
        for dim, causal in ((64, False), (128, True)):
            for f, out_idx in zip(flash_attention_bwd(2, 4, 333, dim, causal), ([2], None, [1])):
                _harness.compile_only(f, out_idx=out_idx, show_source=args.show_source)
        return
    _harness.run_cases(CASES, run_case)


if __name__ == "__main__":
    main()
