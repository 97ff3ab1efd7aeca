"""FP8 (e4m3) GEMM with per-tensor scales: tilec (examples/gemm_fp8.py) vs torch._scaled_mm
(cuBLASLt) in the same process, in alternating rounds (5 x 20 runs, medians), bf16 output.
    python bench/bench_gemm_fp8.py [--quick] [--json out.json] [--pass-configs JSON] [--tile M,N,K,STAGES]"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 16384), (16384, 8192, 1024), (4096, 28672, 8192),
          (8192, 1024, 8192)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument("--pass-configs", default="", help="JSON dict of pass configs (tilec variants)")
    ap.add_argument("--tile", default="128,256,128,3", help="block_M,block_N,block_K,num_stages")
    args = ap.parse_args()
    bm, bn, bk, stages = (int(x) for x in args.tile.split(","))
    kw = {"pass_configs": json.loads(args.pass_configs)} if args.pass_configs else {}
    import torch
    import tilec
    from _timing import bench_rounds
    from gemm_fp8 import fp8_gemm

    rows = []
    for M, N, K in SHAPES[:2] if args.quick else SHAPES:
        a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
        sa = torch.tensor([0.5], device="cuda")
        sb = torch.tensor([0.25], device="cuda")
        kernel = tilec.compile(fp8_gemm(M, N, K, block_M=bm, block_N=bn, block_K=bk, num_stages=stages), target="auto",
                               out_idx=[4], **kw)
        c = kernel(a, b, sa, sb)
        ref = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        torch.cuda.synchronize()
        err = ((c.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        med = bench_rounds({"ours": lambda: kernel(a, b, sa, sb),
                            "ref": lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)})
        t, t_ref = med["ours"], med["ref"]
        flops = 2.0 * M * N * K
        rows.append({"shape": f"{M}x{N}x{K}", "tilec_tflops": flops / t / 1e9, "scaled_mm_tflops": flops / t_ref / 1e9,
                     "ratio": t_ref / t, "err": err})
        print(f"  fp8 {M}x{N}x{K}: tilec {flops / t / 1e9:.0f} TFLOP/s, torch._scaled_mm {flops / t_ref / 1e9:.0f}, "
              f"ratio {t_ref / t:.3f}, max rel diff {err:.1e}", flush=True)
    print("| shape | tilec TFLOP/s | torch._scaled_mm TFLOP/s | tilec / _scaled_mm |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['tilec_tflops']:.0f} | {r['scaled_mm_tflops']:.0f} | {r['ratio']:.3f} |")
    print(f"geomean tilec / torch._scaled_mm: {statistics.geometric_mean([r['ratio'] for r in rows]):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
