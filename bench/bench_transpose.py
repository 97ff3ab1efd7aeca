"""Issue 13's transpose through shared memory: the same program with the bank-aware shared layout
(tilec's default: a word XOR swizzle for the 32 x 32 tile) and with row-major
(tilec.bank_aware_layouts=False, 32-way conflicts on the column reads), against torch's
x.t().contiguous() and a device-to-device copy of the same bytes, in alternating rounds.

    python bench/bench_transpose.py [--n 16384] [--dtype float32] [--json out.json]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)


def transpose(T, n, dtype, tile=32, threads=256):
    @T.prim_func
    def tr(A: T.Tensor((n, n), dtype), B: T.Tensor((n, n), dtype)):
        with T.Kernel(n // tile, n // tile, threads=threads) as (bx, by):
            s = T.alloc_shared((tile, tile), dtype)
            for i, j in T.Parallel(tile, tile):
                s[i, j] = A[by * tile + i, bx * tile + j]
            for i, j in T.Parallel(tile, tile):
                B[bx * tile + i, by * tile + j] = s[j, i]

    return tr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    import torch

    import tilec
    import tilec.language as T
    from _timing import bench_rounds

    n, tdt = args.n, getattr(torch, args.dtype)
    a = torch.randn(n, n, device="cuda").to(tdt)
    b = torch.empty_like(a)
    bank = tilec.compile(transpose(T, n, args.dtype), target="auto")
    row = tilec.compile(transpose(T, n, args.dtype), target="auto", pass_configs={"tilec.bank_aware_layouts": False})
    for k in (bank, row):
        b.fill_(float("nan"))
        k(a, b)
        torch.cuda.synchronize()
        assert torch.equal(b, a.t()), "wrong transpose"
    c = torch.empty_like(a)
    med = bench_rounds({"bank_aware": lambda: bank(a, b), "row_major": lambda: row(a, b),
                        "torch_t_contiguous": lambda: a.t().contiguous(), "d2d_copy": lambda: c.copy_(a)})
    moved = 2.0 * a.numel() * a.element_size()
    rows = {k: {"ms": v, "gbps": moved / v / 1e6} for k, v in med.items()}
    for k, r in rows.items():
        print(f"  transpose {n}x{n} {args.dtype} {k}: {r['ms']:.3f} ms, {r['gbps']:.0f} GB/s "
              f"({med['d2d_copy'] / r['ms']:.2f} x the copy's bandwidth)")
    print(f"bank-aware / row-major speed-up: {med['row_major'] / med['bank_aware']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
