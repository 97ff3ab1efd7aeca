"""FlashAttention backward: dQ, dK, dV from Q, K, V, O, dO and the forward's LSE.

Layout (batch, seq_len, heads, dim), fp16 or bf16; LSE (batch, heads, seq_len) float32, natural
log, as examples/flash_attention.py writes it with return_lse=True. Three programs
(`flash_attention_bwd`, in python/tilec/ops/attention_kernels.py, shared with
`tilec.ops.flash_attn`): preprocess (Delta = rowsum(dO * O)), main (dK, dV per key block, dQ
accumulated in float32 with atomics), postprocess (dQ to dtype). Partial blocks are masked.
Run: python examples/flash_attention_bwd.py            (checks against torch autograd in float64)
     python examples/flash_attention_bwd.py --compile-only
"""
import _harness
import flash_attention as fwd
from tilec.ops.attention_kernels import (BACKWARD_PASS_CONFIGS, LOG2E, PASS_CONFIGS,  # noqa: F401  (the programs)
                                         flash_attention_bwd)


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
    # (..., heads_kv, seq_len_kv): GQA/MQA and key lengths other than the query length (dK, dV come
    # per query head and are summed over each group here, as tilec.ops.flash_attn does)
    (2, 8, 333, 64, False, "float16", 2, 333),
    (1, 6, 401, 128, True, "float16", 3, 390),
    (1, 4, 200, 64, True, "bfloat16", 1, 517),      # causal, keys past the last query get no gradient
    # (..., blocks): the small blocks (64 keys x 32 queries on 128 threads, the default for head
    # dim 256 and short sequences) where the default would be 128 x 64 x 256
    (2, 4, 512, 64, True, "bfloat16", None, None, (64, 32, 128)),
    (1, 6, 401, 128, True, "float16", 3, 390, (64, 32, 128)),
    (1, 4, 300, 128, False, "bfloat16", None, None, (64, 32, 128)),
    # (..., options): flash_attention_bwd's options switched off one at a time (both on is the
    # default: LSE / Delta rows through shared memory, read by the consumer threads from the
    # producer's tiles; P computed while dP^T runs)
    (1, 4, 300, 64, False, "float16", None, None, None, {"rows_in_shared": False, "overlap_softmax": False}),
    (2, 4, 512, 128, True, "bfloat16", None, None, None, {"rows_in_shared": False}),
    (1, 6, 400, 128, True, "float16", 3, 390, None, {"overlap_softmax": False}),
    (1, 2, 197, 64, True, "bfloat16", None, None, None, {"rows_in_shared": False}),
    # dQ by per-element atomics from registers (the default off sm_90; on sm_90 TMA reduce-adds)
    (2, 4, 333, 128, True, "bfloat16", None, None, None, {"dq_by_tma": False}),
    # head dim 64 takes 128 keys x 128 queries on sm_90 (the cases above); 128 x 64, the default
    # elsewhere, on sm_90 too
    (1, 4, 300, 64, True, "bfloat16", 2, 300, (128, 64, 256)),
]


def run_case(batch, heads, seq_len, dim, is_causal, dtype, heads_kv=None, seq_len_kv=None, blocks=None, options=None,
             configs=None):
    """One case against the reference; `configs`: the backward's pass configs (None: BACKWARD_PASS_CONFIGS)."""
    import torch

    tdt = getattr(torch, dtype)
    hkv, skv = heads_kv or heads, seq_len_kv or seq_len
    def compile_(prog, configs=configs or BACKWARD_PASS_CONFIGS):
        return _harness.tilec.compile(prog, pass_configs=configs)
    forward = compile_(fwd.flash_attention(batch, heads, seq_len, dim, is_causal, dtype=dtype, return_lse=True,
                                           heads_kv=hkv, seq_len_kv=skv), PASS_CONFIGS)
    sizes = dict(zip(("block_M", "block_N", "threads"), blocks)) if blocks else {}  # else the defaults
    prep, bwd, post = (compile_(f) for f in flash_attention_bwd(batch, heads, seq_len, dim, is_causal, dtype,
                                                                  heads_kv=hkv, seq_len_kv=skv, **sizes,
                                                                  **(options or {})))
    shape, kv_shape = (batch, seq_len, heads, dim), (batch, skv, hkv, dim)
    q, do = (torch.randn(shape, dtype=tdt, device="cuda") for _ in range(2))
    k, v = (torch.randn(kv_shape, dtype=tdt, device="cuda") for _ in range(2))
    o, lse = _harness.poisoned(shape, tdt), _harness.poisoned((batch, heads, seq_len), torch.float32)
    forward(q, k, v, o, lse)
    delta = _harness.poisoned((batch, heads, seq_len), torch.float32)
    prep(o, do, delta)
    dq_acc = torch.zeros(shape, dtype=torch.float32, device="cuda")  # accumulated by atomics: starts at 0
    dq = _harness.poisoned(shape, tdt)
    dk, dv = (_harness.poisoned((batch, skv, heads, dim), tdt) for _ in range(2))  # per query head
    bwd(q, k, v, do, lse, delta, dq_acc, dk, dv)
    post(dq_acc, dq)
    torch.cuda.synchronize()
    dk, dv = (t.double().view(batch, skv, hkv, heads // hkv, dim).sum(3) for t in (dk, dv))
    refs = reference(*(x.double() for x in (q, k, v, do)), is_causal)
    delta_ref = (o.double() * do.double()).sum(-1).transpose(1, 2)
    label = (f"flash_attention_bwd b={batch} h={heads}/{hkv} seq={seq_len}/{skv} dim={dim} causal={is_causal} "
             f"{dtype}{' ' + ','.join(options) if options else ''}")
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
