"""The same TileLang GEMM program text, timed under tilec or under upstream TileLang.

    python bench/peer_gemm.py --impl tilec    --json out_tilec.json [--quick] [--dtype bfloat16]
    PYTHONPATH=/tmp/tlsite python bench/peer_gemm.py --impl tilelang --json out_tl.json
    python bench/peer_gemm.py --table out_tilec.json out_tl.json

The program is the one ../shared/tools/tilelang-peer/README.md measured: bf16 GEMM NN,
128x256x64 tile, 3 stages, 256 threads, T.use_swizzle(10), C through shared memory; plus the
quickstart tile (128x128x32, 3 stages, 128 threads). Each process times cuBLAS
(torch.matmul) next to its kernels (CUDA events, median), so the two implementations are
compared through the same-run cuBLAS and directly (--table).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 16384), (16384, 8192, 1024), (4096, 28672, 8192),
          (8192, 1024, 8192)]
CONFIGS = {"team": (128, 256, 64, 3, 256), "team_s4": (128, 256, 64, 4, 256), "quickstart": (128, 128, 32, 3, 128),
           # other tiles a per-shape choice may take (issue 8 allows the tile config per shape)
           "team_256x128": (256, 128, 64, 3, 256), "team_256x128_s4": (256, 128, 64, 4, 256),
           "team_128x256x32_s5": (128, 256, 32, 5, 256), "team_128x128x64_s4": (128, 128, 64, 4, 256)}
# tilec-only variants of the team config (experiments, not the peer comparison): the tile order
# without T.use_swizzle, 2-CTA clusters along N (the A tile multicast to both CTAs) and along M
# (the B tile multicast), and along N with the swizzle (B multicast). `_direct`: C written straight from the accumulator fragment, as the
# quickstart of seeds/000 section 1 writes it (no C_shared in the program text).
VARIANTS = {f"{base}_{what}": (base, kw) for base in ("team", "team_s4")
            for what, kw in (("noswizzle", {"swizzle": False}), ("cluster2", {"swizzle": False, "cluster": (2, 1, 1)}),
                             ("cluster2m", {"swizzle": False, "cluster": (1, 2, 1)}),
                             # swizzled: a pair along N shares B's column (multicast), persistent
                             # with 3 stages (4 leave no room for C_shared beside them)
                             ("cluster2sw", {"cluster": (2, 1, 1)}))}
VARIANTS.update({f"{base}_direct": (base, {"direct": True}) for base in ("team", "team_s4", "quickstart")})
# Larger tiles with the warpgroups side by side along N (T.GemmWarpPolicy.FullCol: each of the two
# consumer warpgroups takes all rows of half the columns), as cuBLAS's own kernels on this GPU are
# 256x128, 320x128 and 192x192 (seventeenth session, torch profiler); all compile for sm_90a without
# spills. Candidates, not yet timed.
CONFIGS.update({"wide_320x128": (320, 128, 64, 3, 256), "wide_320x128_s2": (320, 128, 64, 2, 256),
                "wide_256x128": (256, 128, 64, 3, 256), "wide_192x192": (192, 192, 64, 3, 256)})
VARIANTS.update({f"team_{n}": (n, {"policy": "FullCol"}) for n in ("wide_320x128", "wide_320x128_s2", "wide_256x128",
                                                                   "wide_192x192")})
# cuBLAS is column-major: its 320x128 tile computing C^T = B^T A^T is our 128 rows x 320 columns,
# and its 256x128 our 128x256 (the team tile). 128x320 with two consumer warpgroups (m64n160
# atoms, 160 accumulator registers each) and 192x192 with three (m64n192, 384 threads); with C
# through shared memory only where it fits beside the stages, else written from registers
# (`_direct`). All compile for sm_90a without spills (eighteenth session).
CONFIGS.update({"team_128x320_s2": (128, 320, 64, 2, 256), "team_128x320_s3": (128, 320, 64, 3, 256),
                "team_128x320_s4": (128, 320, 64, 4, 256), "team_192x192": (192, 192, 64, 3, 384),
                "team_192x192_s4": (192, 192, 64, 4, 384)})
VARIANTS.update({f"{n}_direct": (n, {"direct": True}) for n in ("team_128x320_s3", "team_128x320_s4", "team_192x192_s4")})
VARIANTS.update({f"{b}_chunk{w}": (b, {"chunk": w}) for b in ("team", "team_s4") for w in (32, 64)})


def program(T, M, N, K, block_M, block_N, block_K, num_stages, threads, dtype, accum_dtype="float32",
            swizzle=True, cluster=None, direct=False, policy=None, chunk=0):
    extra = {"cluster_dims": cluster} if cluster else {}
    gemm_kw = {"policy": getattr(T.GemmWarpPolicy, policy)} if policy else {}

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads, **extra) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            if swizzle:
                T.use_swizzle(10)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, **gemm_kw)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    # The quickstart's text: C written from the fragment (tilec stages it through shared
    # memory itself on sm_90: stage_output_tiles). With `chunk`, C leaves through two shared
    # buffers of `chunk` columns, one TMA store per column block, written by the program (the
    # eighteenth session's experiment; stage_output_tiles now makes the same blocks itself).
    @T.prim_func
    def main_direct(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads, **extra) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            if chunk:
                C_chunks = T.alloc_shared((2, block_M, chunk), dtype)
            if swizzle:
                T.use_swizzle(10)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, **gemm_kw)
            if chunk:
                for c in T.unroll(block_N // chunk):  # unrolled: fragment columns are constants
                    T.copy(C_local[:, c * chunk:(c + 1) * chunk], C_chunks[c % 2, :, :])
                    T.copy(C_chunks[c % 2, :, :], C[by * block_M, bx * block_N + c * chunk])
            else:
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main_direct if direct or chunk else main


def run(impl, dtype, quick, configs, pass_configs=None, label=None):
    import torch

    sys.path.insert(0, HERE)
    from _timing import bench_rounds

    if impl == "tilec":
        sys.path.insert(0, os.path.join(HERE, "..", "python"))
        import tilec.compat  # noqa: F401  (makes `tilelang` resolve to tilec)
    import tilelang
    import tilelang.language as T

    tdt = getattr(torch, dtype)
    rows = []
    for (M, N, K) in SHAPES[:2] if quick else SHAPES:
        a = torch.randn(M, K, dtype=tdt, device="cuda")
        b = torch.randn(K, N, dtype=tdt, device="cuda")
        ref = (a @ b).float()
        flops = 2.0 * M * N * K
        for name in configs:
            if name.startswith("quickstart") and (M, N, K) not in SHAPES[:2]:
                continue
            base, variant = VARIANTS.get(name, (name, {}))
            bm, bn, bk, st, th = CONFIGS[base]
            t0 = time.time()
            try:
                kw = {"pass_configs": pass_configs} if pass_configs else {}
                kernel = tilelang.compile(program(T, M, N, K, bm, bn, bk, st, th, dtype, **variant), out_idx=[2], **kw)
                compile_s = time.time() - t0
                c = kernel(a, b)
                torch.cuda.synchronize()
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                # The GPU's clocks drift during a run: ours and cuBLAS alternate in rounds and
                # each takes the median of its rounds, so both see the same conditions.
                med = bench_rounds({"ours": lambda: kernel(a, b), "cublas": lambda: torch.matmul(a, b)})
                t, t_cublas = med["ours"], med["cublas"]
            except Exception as e:  # reported in the table, not fatal
                print(f"  {impl} {M}x{N}x{K} {name}: failed: {str(e).splitlines()[0][:300]}", flush=True)
                continue
            row = {"impl": label or impl, "shape": f"{M}x{N}x{K}", "config": name, "dtype": dtype, "ms": t,
                   "tflops": flops / t / 1e9, "cublas_ms": t_cublas, "cublas_tflops": flops / t_cublas / 1e9,
                   "vs_cublas": t_cublas / t, "err": err, "compile_s": compile_s}
            rows.append(row)
            print(f"  {impl} {M}x{N}x{K} {name}: {row['tflops']:.0f} TFLOP/s ({row['vs_cublas']:.3f}x cuBLAS "
                  f"{row['cublas_tflops']:.0f}), err {err:.1e}, compile {compile_s:.2f} s", flush=True)
    return rows


def table(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += json.load(f)
    print("| shape | dtype | config | tilec TFLOP/s | upstream TileLang TFLOP/s | cuBLAS TFLOP/s | tilec / cuBLAS | "
          "TileLang / cuBLAS | tilec / TileLang | cold compile tilec / TileLang (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shapes = []
    for r in rows:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    geo = {"tilec": [], "tilelang": [], "tt": []}

    def best(impl, shape, prefix, exact=False):
        cands = [r for r in rows if (r["impl"] == impl if exact else r["impl"].startswith(impl)) and
                 r["shape"] == shape and r["config"].startswith(prefix) and r["err"] < 2e-2]
        return min(cands, key=lambda r: r["ms"]) if cands else None

    # Each tilec variant on its own (pass configs), then the best of them against upstream.
    variants = sorted({r["impl"] for r in rows if r["impl"].startswith("tilec")})
    for v in variants:
        rs = [best(v, sh, "team", True) for sh in shapes]
        rs = [r for r in rs if r]
        if rs:
            print(f"variant {v}: geomean vs cuBLAS {statistics.geometric_mean([r['vs_cublas'] for r in rs]):.3f} "
                  f"(min {min(r['vs_cublas'] for r in rs):.3f}) over {len(rs)} shapes")

    for shape in shapes:
        for prefix in ("team", "quickstart"):
            ours, peer = best("tilec", shape, prefix), best("tilelang", shape, prefix)
            if not ours and not peer:
                continue
            f = lambda r, k, fmt="{:.0f}": fmt.format(r[k]) if r else "-"  # noqa: E731
            tt = peer["ms"] / ours["ms"] if ours and peer else None
            cfg = (ours or peer)["config"] + (f" / {peer['config']}" if ours and peer and peer["config"] != ours["config"]
                                              else "")
            if ours and ours["impl"] != "tilec":
                cfg += f" ({ours['impl']})"
            print(f"| {shape} | {(ours or peer)['dtype']} | {cfg} | {f(ours, 'tflops')} | {f(peer, 'tflops')} | "
                  f"{f(ours or peer, 'cublas_tflops')} | {f(ours, 'vs_cublas', '{:.3f}')} | "
                  f"{f(peer, 'vs_cublas', '{:.3f}')} | {'%.3f' % tt if tt else '-'} | "
                  f"{f(ours, 'compile_s', '{:.2f}')} / {f(peer, 'compile_s', '{:.2f}')} |")
            if prefix == "team":
                if ours:
                    geo["tilec"].append(ours["vs_cublas"])
                if peer:
                    geo["tilelang"].append(peer["vs_cublas"])
                if tt:
                    geo["tt"].append(tt)
    for k, label in (("tilec", "tilec / cuBLAS"), ("tilelang", "TileLang / cuBLAS"), ("tt", "tilec / TileLang")):
        if geo[k]:
            print(f"geomean {label} (best 128x256x64 config per shape): {statistics.geometric_mean(geo[k]):.3f} "
                  f"(min {min(geo[k]):.3f}) over {len(geo[k])} shapes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=["tilec", "tilelang"])
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--configs", default="team,team_s4,quickstart")
    ap.add_argument("--json", default="")
    ap.add_argument("--table", nargs="*")
    ap.add_argument("--pass-configs", default="", help="JSON dict of pass configs (tilec variants)")
    ap.add_argument("--label", default="", help="the implementation's name in the JSON (default: --impl)")
    args = ap.parse_args()
    if args.table:
        table(args.table)
        return
    rows = run(args.impl, args.dtype, args.quick, args.configs.split(","),
               json.loads(args.pass_configs) if args.pass_configs else None, args.label or None)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
