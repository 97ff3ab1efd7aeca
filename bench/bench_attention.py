"""FlashAttention forward: tilec (examples/flash_attention.py: on sm_90a warp-specialized TMA + wgmma,
elsewhere mma.sync) vs torch SDPA
(its flash / cuDNN backend, whatever torch picks on this GPU), same run, same inputs."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from _timing import bench  # noqa: E402

SHAPES = [
    # batch, heads, seq_len, dim, causal
    (4, 32, 4096, 128, False),
    (4, 32, 4096, 64, False),
    (4, 32, 4096, 128, True),
]


def run(dtype="float16"):
    import torch
    import torch.nn.functional as F
    import tilec
    from flash_attention import flash_attention

    rows = []
    tdt = getattr(torch, dtype)
    for b, h, s, d, causal in SHAPES:
        q, k, v = (torch.randn(b, s, h, d, dtype=tdt, device="cuda") for _ in range(3))
        o = torch.empty_like(q)
        # SDPA wants (batch, heads, seq, dim): transposed views, as a user would pass them.
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        kernel = tilec.compile(flash_attention(b, h, s, d, is_causal=causal, dtype=dtype), target="auto")
        kernel(q, k, v, o)
        ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
        err = ((o.float() - ref.float()).abs().max()).item()
        t = bench(lambda: kernel(q, k, v, o))
        t_peer = statistics.median([bench(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal))
                                    for _ in range(3)])
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        name = f"flash attention fwd b{b} h{h} s{s} d{d}{' causal' if causal else ''} {dtype}"
        print(f"  {name}: tilec {t:.3f} ms {flops / t / 1e9:.0f} TFLOP/s, SDPA {t_peer:.3f} ms "
              f"{flops / t_peer / 1e9:.0f} TFLOP/s (max abs err {err:.1e})")
        rows.append({"bench": name, "config": "", "ours_ms": t, "peer_ms": t_peer,
                     "ours": f"{flops / t / 1e9:.0f} TFLOP/s", "peer": f"{flops / t_peer / 1e9:.0f} TFLOP/s (SDPA)",
                     "ratio": t_peer / t})
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
