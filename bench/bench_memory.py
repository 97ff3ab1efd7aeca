"""Memory-bound kernels on >= 1 GiB tensors vs the device-to-device copy bandwidth
measured in the same run (bytes read + written per second)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from _timing import bench  # noqa: E402


def run():
    import torch
    import tilec
    from elementwise_add import elementwise_add
    from rmsnorm import rmsnorm
    from softmax import softmax

    rows = []
    n = 1 << 28  # 256 Mi float32 = 1 GiB per tensor
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    t_copy = bench(lambda: dst.copy_(src))
    copy_bw = 2 * src.numel() * 4 / t_copy / 1e6  # GB/s
    print(f"  d2d copy: {t_copy:.3f} ms, {copy_bw:.0f} GB/s")

    def row(name, t, nbytes, peer_name, t_peer):
        bw = nbytes / t / 1e6
        rows.append({"bench": name, "ours_ms": t, "peer_ms": t_peer, "ours": f"{bw:.0f} GB/s",
                     "peer": f"{copy_bw:.0f} GB/s ({peer_name})", "ratio": bw / copy_bw,
                     "torch_ms": None})
        print(f"  {name}: {t:.3f} ms {bw:.0f} GB/s = {bw / copy_bw:.2f} of copy")

    # elementwise add: 3 x 1 GiB
    a, b, c = src, torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    try:
        k = tilec.compile(elementwise_add(), target="auto")
        k(a, b, c)
        torch.testing.assert_close(c, a + b)
        t = bench(lambda: k(a, b, c))
        row("add fp32 256Mi", t, 3 * n * 4, "d2d copy", t_copy)
        rows[-1]["torch_ms"] = bench(lambda: torch.add(a, b, out=c))
    except Exception as e:
        print("  add failed:", str(e).splitlines()[0])
    del b, c

    M, N = 1 << 17, 4096  # fp16: 1 GiB
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    for name, build, args, ref in (
        ("softmax fp16 131072x4096", lambda: softmax(N, "float16"), (x, y), lambda: torch.softmax(x, dim=1)),
        ("rmsnorm fp16 131072x4096", lambda: rmsnorm(N, "float16"), (x, w, y),
         lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6)),
    ):
        try:
            k = tilec.compile(build(), target="auto")
            k(*args)
            torch.testing.assert_close(y.float(), ref().float(), rtol=2e-2, atol=2e-2)
            t = bench(lambda: k(*args))
            row(name, t, 2 * M * N * 2, "d2d copy", t_copy)
            rows[-1]["torch_ms"] = bench(ref)
        except Exception as e:
            print(f"  {name} failed:", str(e).splitlines()[0])
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
