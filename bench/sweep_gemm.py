"""Sweeps GEMM tile configurations (block sizes, stages, threads, rasterization panel) for one
shape and prints them next to cuBLAS measured in the same run (median of three timings)."""
import itertools
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from _timing import bench  # noqa: E402


def main(n=4096, dtype="bfloat16"):
    import torch
    import tilec
    from gemm import matmul

    tdt = getattr(torch, dtype)
    a = torch.randn(n, n, dtype=tdt, device="cuda")
    b = torch.randn(n, n, dtype=tdt, device="cuda")
    c = torch.empty(n, n, dtype=tdt, device="cuda")
    ref = torch.matmul(a, b).float()
    flops = 2.0 * n ** 3
    peer = statistics.median(bench(lambda: torch.matmul(a, b)) for _ in range(3))
    print(f"cuBLAS {n}^3 {dtype}: {flops / peer / 1e9:.0f} TFLOP/s")
    rows = []
    for (bm, bn), bk, stages, threads in itertools.product(
            [(128, 128), (128, 256), (256, 128)], [32, 64], [2, 3, 4], [128, 256]):
        if bm * bn == 128 * 128 and threads == 256 and bk == 64:
            continue
        name = f"{bm}x{bn}x{bk} s{stages} t{threads}"
        try:
            k = tilec.compile(matmul(n, n, n, bm, bn, bk, dtype=dtype, num_stages=stages, threads=threads),
                              target="auto")
            k(a, b, c)
            torch.cuda.synchronize()
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            t = bench(lambda: k(a, b, c))
        except Exception as e:
            print(f"  {name}: {str(e).splitlines()[0][:100]}")
            continue
        rows.append((flops / t / 1e9, name, err))
        print(f"  {name}: {flops / t / 1e9:.0f} TFLOP/s = {peer / t:.3f} of cuBLAS (err {err:.1e})", flush=True)
    peer_after = statistics.median(bench(lambda: torch.matmul(a, b)) for _ in range(3))
    best = max(rows)
    print(f"best: {best[1]} {best[0]:.0f} TFLOP/s; cuBLAS before/after {flops / peer / 1e9:.0f}/{flops / peer_after / 1e9:.0f}"
          f" -> ratio {best[0] / (flops / max(peer, peer_after) / 1e9):.3f}..{best[0] / (flops / min(peer, peer_after) / 1e9):.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)
