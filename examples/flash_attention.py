"""FlashAttention forward: O = softmax(Q K^T * scale) V per (batch, head), MHA or GQA, causal or not.

Q and O are (batch, seq_len, heads, dim); K and V are (batch, seq_len_kv, heads_kv, dim), with
heads_kv dividing heads (GQA); fp16 or bf16; float32 accumulation; with return_lse=True also the
rows' log-sum-exp (batch, heads, seq_len), float32. Causal masking is top-left aligned, as torch's
scaled_dot_product_attention(is_causal=True). The program (`flash_attention`) lives in
python/tilec/ops/attention_kernels.py, shared with `tilec.ops.flash_attn` (docs/OPS.md); its
docstring describes the algorithm (online softmax, P fed to P V from registers, warp-specialized
TMA + wgmma on sm_90a). This file checks it against torch at several shapes, ragged ones included.
Run: python examples/flash_attention.py            (checks against torch on a GPU)
     python examples/flash_attention.py --compile-only
"""
import math

import _harness
from tilec.ops.attention_kernels import LOG2E, PASS_CONFIGS, flash_attention  # noqa: F401  (LOG2E for users)


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
    # (batch, heads, seq_len, dim, is_causal, dtype, heads_kv, seq_len_kv, return_lse[, block_N])
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
    # causal head dim 256 on sm_90: the output leaves through two 128 x 64 shared blocks (its
    # whole tile does not fit), ragged queries: TMA drops the rows past 200
    (2, 4, 200, 256, True, "bfloat16", 2, None, True),
    # head dim 64 from 2048 queries on sm_90 (causal from 8192): 192-row blocks, three consumer warpgroups
    (1, 4, 2100, 64, False, "bfloat16", 2, 2050, True),       # GQA, ragged queries (2100 = 10.9 x 192) and keys
    (1, 2, 8200, 64, True, "float16", None, None, True),      # causal, ragged
    # head dim 256 with 80-key blocks (two stages; sm_90's default is 128 keys in one stage): the
    # output goes over V's two stages (nothing else fits beside them, and the loop is short: 13
    # steps of 80 keys); persistent blocks take several tiles each, the producer loads a tile's
    # first V after the last tile's O left
    (8, 8, 1000, 256, False, "bfloat16", 4, None, True, 80),   # GQA 2:1, ragged keys (1000 = 12.5 x 80)
    (2, 8, 2000, 128, False, "float16", 2, 4100, True),        # GQA 4:1, ragged keys
    # head dim 256 on sm_90: 128-key blocks in one stage, the step serial (not rotated), the output
    # in column blocks; ragged keys, causal with more keys than queries
    (2, 4, 700, 256, True, "bfloat16", 2, 900, True),
]


def run_case(batch, heads, seq_len, dim, is_causal, dtype, heads_kv, seq_len_kv, return_lse, block_N=None):
    import torch

    tdt = getattr(torch, dtype)
    hkv, skv = heads_kv or heads, seq_len_kv or seq_len
    kernel = _harness.tilec.compile(flash_attention(batch, heads, seq_len, dim, is_causal, dtype=dtype, heads_kv=hkv,
                                                    seq_len_kv=skv, return_lse=return_lse, block_N=block_N,
                                                    target="auto"),
                                    target="auto", pass_configs=PASS_CONFIGS)  # blocks measured best on this GPU
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
