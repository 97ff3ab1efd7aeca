"""FlashAttention forward: the same TileLang program text timed under tilec or under upstream
TileLang, next to torch SDPA's cuDNN and flash back ends in the same process.

    python bench/peer_attention.py --impl tilec --json out_tilec.json [--quick] [--dtype bfloat16]
    PYTHONPATH=/tmp/tlsite python bench/peer_attention.py --impl tilelang --json out_tl.json
    python bench/peer_attention.py --table out_tilec.json out_tl.json

The program is examples/flash_attention.py's (128x128 blocks, 2 stages, 256 threads, policy
FullRow, exp2 online softmax, P fed from registers), written against whichever `T` module is
active. The shapes are the FlashAttention-3 paper's grid: batch x seqlen = 16k, hidden 2048
(heads = 2048 / dim), seqlen 512-16k, causal and not. Q, K, V are (batch, seq, heads, dim) for
the T program; SDPA gets contiguous (batch, heads, seq, dim) copies (its own layout, its best
case). Ours and each SDPA back end alternate in rounds (the GPU's clocks drift within a run) and
each takes the median of its rounds.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
DIMS = [64, 128]
QUICK = [(4096, 128, False), (4096, 64, False), (4096, 128, True)]


def program(T, batch, heads, seq_len, dim, is_causal, dtype, block_M=128, block_N=128, num_stages=2, threads=256):
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
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return flash_fwd


def shapes(quick):
    if quick:
        return [(16384 // s, 2048 // d, s, d, c) for s, d, c in QUICK]
    return [(16384 // s, 2048 // d, s, d, c) for d in DIMS for c in (False, True) for s in SEQLENS]


def run(impl, dtype, quick, pass_configs=None, label=None, block_n=128, block_m=128, threads=256, dims=None):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sys.path.insert(0, HERE)
    from _timing import bench_rounds

    if impl == "tilec":
        sys.path.insert(0, os.path.join(HERE, "..", "python"))
        import tilec.compat  # noqa: F401  (makes `tilelang` resolve to tilec)
    import tilelang
    import tilelang.language as T

    tdt = getattr(torch, dtype)
    rows = []
    for b, h, s, d, causal in shapes(quick):
        if dims and d not in dims:
            continue
        q, k, v = (torch.randn(b, s, h, d, dtype=tdt, device="cuda") for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        name = f"b{b} h{h} s{s} d{d}{' causal' if causal else ''}"
        t0 = time.time()
        try:
            kw = {"pass_configs": pass_configs} if pass_configs else {}
            kernel = tilelang.compile(program(T, b, h, s, d, causal, dtype, block_M=block_m, block_N=block_n,
                                                    threads=threads), out_idx=[3], **kw)
            compile_s = time.time() - t0
            o = kernel(q, k, v)
            ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
            err = (o.float() - ref.float()).abs().max().item()
            peers = {}
            for backend, key in ((SDPBackend.CUDNN_ATTENTION, "cudnn"), (SDPBackend.FLASH_ATTENTION, "fa2")):
                def sdpa(backend=backend):
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                try:
                    sdpa()
                    peers[key] = sdpa
                except RuntimeError as e:
                    print(f"  SDPA {key} unavailable: {str(e).splitlines()[0][:120]}")
            med = bench_rounds({"ours": lambda: kernel(q, k, v), **peers})
        except Exception as e:  # reported in the table, not fatal
            print(f"  {impl} {name}: failed: {str(e).splitlines()[0][:300]}", flush=True)
            continue
        t = med["ours"]
        row = {"impl": label or impl, "shape": name, "dtype": dtype, "ms": t, "tflops": flops / t / 1e9,
               "err": err, "compile_s": compile_s}
        for key in peers:
            row[f"{key}_tflops"] = flops / med[key] / 1e9
            row[f"vs_{key}"] = med[key] / t
        rows.append(row)
        peer_txt = ", ".join(f"{k} {row[f'{k}_tflops']:.0f} ({row[f'vs_{k}']:.3f}x)" for k in peers)
        print(f"  {impl} {name} {dtype}: {row['tflops']:.0f} TFLOP/s; {peer_txt}; err {err:.1e}, "
              f"compile {compile_s:.2f} s", flush=True)
    return rows


def table(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += json.load(f)
    print("| shape | dtype | tilec TFLOP/s | upstream TileLang TFLOP/s | cuDNN TFLOP/s | FA2 TFLOP/s | "
          "tilec / cuDNN | TileLang / cuDNN | tilec / TileLang | cold compile tilec / TileLang (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shapes_seen = []
    for r in rows:
        if r["shape"] not in shapes_seen:
            shapes_seen.append(r["shape"])
    ratios = {"cudnn": [], "tt": []}
    for sh in shapes_seen:
        ours = next((r for r in rows if r["impl"] == "tilec" and r["shape"] == sh), None)
        peer = next((r for r in rows if r["impl"] == "tilelang" and r["shape"] == sh), None)
        any_r = ours or peer
        f = lambda r, k, fmt="{:.0f}": fmt.format(r[k]) if r and k in r else "-"  # noqa: E731
        tt = peer["ms"] / ours["ms"] if ours and peer else None
        print(f"| {sh} | {any_r['dtype']} | {f(ours, 'tflops')} | {f(peer, 'tflops')} | {f(any_r, 'cudnn_tflops')} | "
              f"{f(any_r, 'fa2_tflops')} | {f(ours, 'vs_cudnn', '{:.3f}')} | {f(peer, 'vs_cudnn', '{:.3f}')} | "
              f"{'%.3f' % tt if tt else '-'} | {f(ours, 'compile_s', '{:.2f}')} / {f(peer, 'compile_s', '{:.2f}')} |")
        if ours and "vs_cudnn" in ours:
            ratios["cudnn"].append(ours["vs_cudnn"])
        if tt:
            ratios["tt"].append(tt)
    for k, lab in (("cudnn", "tilec / cuDNN"), ("tt", "tilec / TileLang")):
        if ratios[k]:
            print(f"geomean {lab}: {statistics.geometric_mean(ratios[k]):.3f} (min {min(ratios[k]):.3f}) "
                  f"over {len(ratios[k])} shapes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=["tilec", "tilelang"])
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--block-n", type=int, default=128)
    ap.add_argument("--block-m", type=int, default=128)
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--dims", default="", help="head dims to run, e.g. 64 (default: all)")
    ap.add_argument("--json", default="")
    ap.add_argument("--table", nargs="*")
    ap.add_argument("--pass-configs", default="", help="JSON dict of pass configs (tilec variants)")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    if args.table:
        table(args.table)
        return
    rows = run(args.impl, args.dtype, args.quick, json.loads(args.pass_configs) if args.pass_configs else None,
               args.label or None, args.block_n, args.block_m, args.threads,
               [int(x) for x in args.dims.split(",")] if args.dims else None)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
