"""Issue 10's other attention targets: the FlashAttention backward against cuDNN's SDPA backward,
and MLA decoding against the roofline (with FlashMLA's published H800 ratio as the bar).

    python bench/bench_attention_more.py [--part fwd|bwd|mla|decode|fp8|all] [--quick] [--json out.json]
    python bench/bench_attention_more.py --compile-only      (no GPU: builds every program for sm_90a)

Backward (bf16, the FlashAttention-3 paper's grid restricted to issue 10's rows: head dim 64 and
128, seqlen 2k-8k, batch x seqlen = 16k, hidden 2048, causal and not): tilec's three kernels
(examples/flash_attention_bwd.py: preprocess Delta, main dK/dV with dQ by float32 atomics,
postprocess dQ; the dQ accumulator's zeroing counted too) against torch SDPA's cuDNN back end's
backward (torch.autograd.grad of one forward, retained), timed in alternating rounds
(bench/_timing.py). FLOPs: 2.5 x the forward's 4 b h s^2 d (halved when causal), the usual
convention (five matrix products against two).

MLA decoding (examples/mla_decode.py: h_q 128, d 576 / dv 512, paged cache with 64-token pages,
bf16; batch 64 / 128, KV length 1k-32k, num_split the best of --splits): TFLOP/s = 2 b h_q s (576 +
512) / t; GB/s = (KV cache b s 576 + Q b h_q 576 + O b h_q 512) x 2 bytes / t. Roofline of this GPU:
H200 4.8 TB/s HBM3e, 989 TFLOP/s dense bf16 (ridge 206 FLOP/B; MLA with h_q 128 sits at about
240 FLOP/B, compute-bound). FlashMLA's published H800 SXM5 figures: 3000 GB/s memory-bound (of
3.35 TB/s: 0.896) and 580 TFLOP/s compute-bound (of 989: 0.586); issue 10's target is 0.9 x that
fraction of the bound that applies.

Paged Flash-Decoding (examples/flash_decoding.py: GQA 32 query heads / 8 KV heads, d 128, bf16,
64-token pages in a shuffled block table; split kernel + combine, num_split the best of --splits):
GB/s = (K and V cache b s h_kv d + Q + O) x 2 bytes / t against the 4.8 TB/s HBM roof (decoding
is memory-bound: 2 h/h_kv = 8 FLOP/B).

Forward (--part fwd only; the forward's peer table is bench/peer_attention.py's): the program of
examples/flash_attention.py at the block_N candidates of --fwd-block-n against cuDNN SDPA's
forward, alternating rounds, on the FlashAttention-3 grid (head dim 64 / 128 / 256, causal and not).

fp8 forward (examples/flash_attention_fp8.py: e4m3 Q, K, V^T with per-tensor scales, bf16 out;
head dim 128, 16 heads, batch x seqlen = 16k, causal and not): TFLOP/s = 4 b h s^2 d (halved when
causal) against the bf16 forward of cuDNN's SDPA on the same shape in alternating rounds (there is no
fp8 SDPA in torch; the ratio says what fp8 buys over the best bf16 kernel here).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

H200_BYTES_PER_S = 4.8e12
H200_FLOPS = 989e12
FLASHMLA_H800 = {"memory": 3000e9 / 3.35e12, "compute": 580e12 / 989e12}  # fractions of the H800's roof

BWD_SHAPES = [(16384 // s, 2048 // d, s, d, c) for d in (64, 128) for c in (False, True) for s in (2048, 4096, 8192)]
MLA_SHAPES = [(64, 1024), (64, 4096), (64, 16384), (128, 1024), (128, 8192), (128, 32768)]
FP8_SHAPES = [(16384 // s, 16, s, 128, c) for c in (False, True) for s in (2048, 4096, 8192)]
DECODE_SHAPES = [(64, 4096), (64, 16384), (8, 32768)]  # (batch, KV length); 32 / 8 heads, d 128
FWD_SHAPES = [(16384 // s, 2048 // d, s, d, c) for d in (64, 128, 256) for c in (False, True)
              for s in (512, 1024, 2048, 4096, 8192, 16384)]
FWD_QUICK = [(4, 32, 4096, 64, False), (4, 16, 4096, 128, False), (4, 16, 4096, 128, True), (8, 8, 2048, 256, False)]


def attention_pass_configs(backward=False):
    """The attention programs compile as tilec.ops.flash_attn and the examples do
    (attention_kernels.PASS_CONFIGS, BACKWARD_PASS_CONFIGS for the backward's), with
    --pass-configs over them."""
    from tilec.ops.attention_kernels import BACKWARD_PASS_CONFIGS, PASS_CONFIGS as ATTENTION

    return {**(BACKWARD_PASS_CONFIGS if backward else ATTENTION), **PASS_CONFIGS}


def bwd_flops(b, h, s, d, causal):
    return 2.5 * 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)


def mla_counts(batch, seqlen, h_q=128, dim=576, dv=512):
    flops = 2.0 * batch * h_q * seqlen * (dim + dv)
    bytes_ = 2.0 * (batch * seqlen * dim + batch * h_q * dim + batch * h_q * dv)
    return flops, bytes_


PASS_CONFIGS = {}  # --pass-configs: for every program timed (variants of tilec)
BWD_OPTIONS = {}   # --bwd-ds-first, --bwd-options: program options of the backward (candidates)
MLA_OPTIONS = {}   # --mla-options: program options of examples/mla_decode.py (candidates)


def roofline(flops, bytes_):
    """(bound, seconds at the roof): which of memory and compute limits, and its time."""
    t_mem, t_cmp = bytes_ / H200_BYTES_PER_S, flops / H200_FLOPS
    return ("memory", t_mem) if t_mem >= t_cmp else ("compute", t_cmp)


def bwd_programs(b, h, s, d, causal, dtype="bfloat16", blocks=None, options=None):
    """blocks: (block_M keys, block_N queries, threads) of the main kernel; None: its defaults.
    options: flash_attention_bwd options (None: BWD_OPTIONS)."""
    import flash_attention as fwd
    from tilec.ops.attention_kernels import flash_attention_bwd

    sizes = dict(zip(("block_M", "block_N", "threads"), blocks)) if blocks else {}  # else the defaults
    return (fwd.flash_attention(b, h, s, d, causal, dtype=dtype, return_lse=True),
            *flash_attention_bwd(b, h, s, d, causal, dtype, **sizes, **(BWD_OPTIONS if options is None else options)))


def mla_programs(batch, seqlen, num_split, dtype="bfloat16", page_size=64):
    from mla_decode import mla_decode

    max_pages = math.ceil(seqlen / page_size)
    return (mla_decode(batch, 128, batch * max_pages, max_pages, num_split, dtype=dtype, num_stages=2, **MLA_OPTIONS),
            max_pages)


def parse_blocks(text):
    """'64x32x128,128x64x256' -> [(64, 32, 128), (128, 64, 256)]; 'default' -> None."""
    out = []
    for part in text.split(","):
        out.append(None if part == "default" else tuple(int(x) for x in part.split("x")))
    return out


def parse_bwd_variants(text):
    """--bwd-variants: a JSON list of {"name", "blocks" ("128x64x256", left out: the defaults),
    "options" (flash_attention_bwd options), "pass_configs" (over the backward's)}, all timed in
    the same rounds as cuDNN."""
    out = []
    for i, v in enumerate(json.loads(text)):
        blocks = parse_blocks(v["blocks"])[0] if v.get("blocks") else None
        out.append((v.get("name", f"v{i}"), blocks, {**BWD_OPTIONS, **v.get("options", {})}, v.get("pass_configs", {})))
    return out


def run_bwd(quick, variants, dims=None):
    """One row per shape and variant (variants: [(name, blocks, options, pass configs)]; a name ""
    for a lone variant), each variant timed in the same alternating rounds as cuDNN."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import tilec
    from _timing import bench_rounds

    rows = []
    shapes = BWD_SHAPES[:1] + BWD_SHAPES[6:7] if quick else BWD_SHAPES
    for (b, h, s, d, causal) in (x for x in shapes if not dims or x[3] in dims):
        shape = (b, s, h, d)
        q, k, v, do = (torch.randn(shape, dtype=torch.bfloat16, device="cuda") for _ in range(4))
        qt, kt, vt = (x.transpose(1, 2).contiguous().requires_grad_() for x in (q, k, v))
        dot = do.transpose(1, 2).contiguous()
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        def cudnn():
            return torch.autograd.grad(out, (qt, kt, vt), dot, retain_graph=True)

        ref = cudnn()
        fns, errs = {"cudnn": cudnn}, {}
        for vname, vblocks, options, configs in variants:
            fwd_k, prep, bwd, post = (tilec.compile(p, target="auto",
                                                    pass_configs={**attention_pass_configs(backward=True), **configs})
                                      for p in bwd_programs(b, h, s, d, causal, blocks=vblocks, options=options))
            o = torch.empty_like(q)
            lse = torch.empty((b, h, s), dtype=torch.float32, device="cuda")
            fwd_k(q, k, v, o, lse)
            delta = torch.empty((b, h, s), dtype=torch.float32, device="cuda")
            dq_acc = torch.empty(shape, dtype=torch.float32, device="cuda")
            dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))

            def ours(prep=prep, bwd=bwd, post=post, o=o, lse=lse, delta=delta, dq_acc=dq_acc, dq=dq, dk=dk, dv=dv):
                prep(o, do, delta)
                dq_acc.zero_()
                bwd(q, k, v, do, lse, delta, dq_acc, dk, dv)
                post(dq_acc, dq)

            ours()
            torch.cuda.synchronize()
            errs[vname] = max(((got.float() - want.transpose(1, 2).float()).abs().max() / want.float().abs().max()).item()
                              for got, want in zip((dq, dk, dv), ref))
            fns[vname] = ours
        med = bench_rounds(fns)
        fl = bwd_flops(b, h, s, d, causal)
        for vname, vblocks, _, _ in variants:
            name = (f"b{b} h{h} s{s} d{d}{' causal' if causal else ''}" + (f" blocks {vblocks}" if vblocks else "")
                    + (f" [{vname}]" if vname else ""))
            row = {"shape": name, "tflops": fl / med[vname] / 1e9, "cudnn_tflops": fl / med["cudnn"] / 1e9,
                   "ratio": med["cudnn"] / med[vname], "max_rel_err": errs[vname]}
            rows.append(row)
            print(f"  bwd {name}: tilec {row['tflops']:.0f} TFLOP/s, cuDNN {row['cudnn_tflops']:.0f}, "
                  f"ratio {row['ratio']:.3f}, max rel diff {errs[vname]:.1e}", flush=True)
    for vname, _, _, _ in variants:
        mine = [r["ratio"] for r in rows if not vname or r["shape"].endswith(f"[{vname}]")]
        if mine:
            print(f"geomean backward tilec / cuDNN{f' [{vname}]' if vname else ''}: "
                  f"{statistics.geometric_mean(mine):.3f} (min {min(mine):.3f}) over {len(mine)} rows")
    return rows


def run_mla(quick, splits):
    import torch

    import tilec
    from _timing import bench

    rows = []
    for (batch, seqlen) in (MLA_SHAPES[:1] + MLA_SHAPES[4:5] if quick else MLA_SHAPES):
        best = None
        for ns in splits:
            programs, max_pages = mla_programs(batch, seqlen, ns)  # one kernel at split 1, else split + combine
            kernels = [tilec.compile(p, target="auto", pass_configs=attention_pass_configs()) for p in programs]
            num_pages = batch * max_pages
            q = torch.randn(batch, 128, 576, dtype=torch.bfloat16, device="cuda")
            kv = torch.randn(num_pages, 64, 576, dtype=torch.bfloat16, device="cuda")
            table = torch.randperm(num_pages, device="cuda").int().reshape(batch, max_pages)
            lens = torch.full((batch,), seqlen, dtype=torch.int32, device="cuda")
            o_part = torch.empty(batch, 128, ns, 512, dtype=torch.float32, device="cuda")
            lse_part = torch.empty(batch, 128, ns, dtype=torch.float32, device="cuda")
            out = torch.empty(batch, 128, 512, dtype=torch.bfloat16, device="cuda")

            def run(kernels=kernels, o_part=o_part, lse_part=lse_part, out=out):
                if len(kernels) == 1:
                    kernels[0](q, kv, table, lens, out)
                    return
                kernels[0](q, kv, table, lens, o_part, lse_part)
                kernels[1](o_part, lse_part, out)

            t = bench(run, warmup=5, rep=30) / 1e3
            if best is None or t < best[0]:
                best = (t, ns)
            del kv
        t, ns = best
        flops, bytes_ = mla_counts(batch, seqlen)
        bound, t_roof = roofline(flops, bytes_)
        frac = t_roof / t
        row = {"batch": batch, "seqlen": seqlen, "num_split": ns, "ms": t * 1e3, "tflops": flops / t / 1e12,
               "gbps": bytes_ / t / 1e9, "bound": bound, "fraction_of_roof": frac,
               "flashmla_h800_fraction": FLASHMLA_H800[bound], "vs_flashmla_fraction": frac / FLASHMLA_H800[bound]}
        rows.append(row)
        print(f"  mla b{batch} s{seqlen} split {ns}: {row['tflops']:.0f} TFLOP/s, {row['gbps']:.0f} GB/s, {bound}-bound, "
              f"{frac:.3f} of the roof = {row['vs_flashmla_fraction']:.3f} x FlashMLA's H800 fraction "
              f"({FLASHMLA_H800[bound]:.3f})", flush=True)
    return rows


def decode_bytes(batch, seqlen, heads=32, heads_kv=8, dim=128):
    return 2.0 * (2 * batch * seqlen * heads_kv * dim + 2 * batch * heads * dim)


def run_decode(quick, splits, heads=32, heads_kv=8, dim=128, page_size=64):
    import torch

    import tilec
    from _timing import bench
    from flash_decoding import flash_decoding

    rows = []
    for (batch, seqlen) in (DECODE_SHAPES[:1] if quick else DECODE_SHAPES):
        best = None
        max_pages = math.ceil(seqlen / page_size)
        num_pages = batch * max_pages
        q = torch.randn(batch, heads, dim, dtype=torch.bfloat16, device="cuda")
        k_cache, v_cache = (torch.randn(num_pages, page_size, heads_kv, dim, dtype=torch.bfloat16, device="cuda")
                            for _ in range(2))
        table = torch.randperm(num_pages, device="cuda").int().reshape(batch, max_pages)
        lens = torch.full((batch,), seqlen, dtype=torch.int32, device="cuda")
        out = torch.empty(batch, heads, dim, dtype=torch.bfloat16, device="cuda")
        for ns in splits:
            split, combine = (tilec.compile(p, target="auto", pass_configs=attention_pass_configs()) for p in
                              flash_decoding(batch, heads, heads_kv, dim, num_pages, max_pages, page_size, ns,
                                             dtype="bfloat16"))
            o_part = torch.empty(batch, heads, ns, dim, dtype=torch.float32, device="cuda")
            lse_part = torch.empty(batch, heads, ns, dtype=torch.float32, device="cuda")

            def run():
                split(q, k_cache, v_cache, table, lens, o_part, lse_part)
                combine(o_part, lse_part, out)

            t = bench(run, warmup=5, rep=30) / 1e3
            if best is None or t < best[0]:
                best = (t, ns)
        t, ns = best
        gbps = decode_bytes(batch, seqlen, heads, heads_kv, dim) / t / 1e9
        row = {"batch": batch, "seqlen": seqlen, "num_split": ns, "ms": t * 1e3, "gbps": gbps,
               "fraction_of_roof": gbps * 1e9 / H200_BYTES_PER_S}
        rows.append(row)
        print(f"  decode b{batch} h{heads}/{heads_kv} s{seqlen} d{dim} split {ns}: {gbps:.0f} GB/s, "
              f"{row['fraction_of_roof']:.3f} of the HBM roof", flush=True)
        del k_cache, v_cache
    return rows


def parse_block_ns(text):
    """'0,176' -> {0: ['0', '176']} (every head dim); '64:0,192x128x384;128:0,176' -> {64: ['0', '192x128x384'],
    128: ['0', '176']}. A candidate is block_N (0: the default) or block_M x block_N x threads."""
    out = {}
    for part in text.split(";"):
        dim, _, bns = part.rpartition(":")
        out[int(dim or 0)] = [x.strip() for x in bns.split(",")]
    return out


def forward_candidate(text):
    """(flash_attention keywords, extra pass configs) of one --fwd-block-n candidate ('0': the
    defaults): block_N or block_M x block_N x threads, then optional '+'-separated modifiers: sN
    (num_stages N), noiwo (tilec.intra_wg_overlap off), e.g. 128+s1+noiwo."""
    head, *mods = text.split("+")
    parts = [int(x) for x in head.split("x")]
    if len(parts) == 1:
        kw = {"block_N": parts[0] or None}
    elif len(parts) == 3:
        kw = {"block_M": parts[0], "block_N": parts[1], "threads": parts[2]}
    else:
        raise SystemExit(f"--fwd-block-n: '{text}' is neither block_N nor block_M x block_N x threads")
    configs = {}
    for m in mods:
        if m.startswith("s") and m[1:].isdigit():
            kw["num_stages"] = int(m[1:])
        elif m == "noiwo":
            configs["tilec.intra_wg_overlap"] = False
        else:
            raise SystemExit(f"--fwd-block-n: unknown modifier '{m}' in '{text}' (sN, noiwo)")
    return kw, configs


def run_fwd(quick, block_ns, dims=None, causal_only=None):
    """The forward of examples/flash_attention.py (ragged keys masked, so any block_N fits) at each
    candidate that `block_ns` lists ({head dim or 0 for any: [candidate, ...]}; a candidate is
    block_N, '0' for the program's defaults, or block_M x block_N x threads), in the same rounds as
    cuDNN SDPA."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import tilec
    from _timing import bench_rounds
    from tilec.ops.attention_kernels import flash_attention

    rows = []
    for (b, h, s, d, causal) in (FWD_QUICK if quick else FWD_SHAPES):
        if (dims and d not in dims) or (causal_only is not None and causal != causal_only):
            continue
        name = f"b{b} h{h} s{s} d{d}{' causal' if causal else ''}"
        q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2).float()
        fns, errs = {}, {}
        for bn in block_ns.get(d, block_ns.get(0, ["0"])):
            kw, configs = forward_candidate(bn)
            kernel = tilec.compile(flash_attention(b, h, s, d, causal, dtype="bfloat16", target="auto", **kw),
                                   target="auto", pass_configs={**attention_pass_configs(), **configs})
            out = torch.full_like(q, float("nan"))
            kernel(q, k, v, out)
            torch.cuda.synchronize()
            errs[bn] = ((out.float() - ref).abs().max() / ref.abs().max()).item()
            fns[f"bn{bn}"] = (lambda kernel=kernel, out=out: kernel(q, k, v, out))

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        med = bench_rounds({**fns, "cudnn": cudnn})
        fl = 4.0 * b * h * s * s * d / (2 if causal else 1)
        row = {"shape": name, "dim": d, "cudnn_tflops": fl / med["cudnn"] / 1e9}
        for bn in errs:
            row[f"bn{bn}"] = {"tflops": fl / med[f"bn{bn}"] / 1e9, "ratio": med["cudnn"] / med[f"bn{bn}"],
                              "max_rel_err": errs[bn]}
        rows.append(row)
        print(f"  fwd {name}: cuDNN {row['cudnn_tflops']:.0f} TFLOP/s; " + "; ".join(
            f"block {bn if bn != '0' else 'default'} {row[f'bn{bn}']['tflops']:.0f} ({row[f'bn{bn}']['ratio']:.3f}, "
            f"err {errs[bn]:.1e})" for bn in errs), flush=True)
    for d in sorted({r["dim"] for r in rows}):
        for key in sorted({k for r in rows if r["dim"] == d for k in r if k.startswith("bn")}):
            ratios = [r[key]["ratio"] for r in rows if r["dim"] == d and key in r]
            print(f"geomean forward d{d} block_N {key[2:]} / cuDNN: {statistics.geometric_mean(ratios):.3f} "
                  f"(min {min(ratios):.3f}) over {len(ratios)} rows")
    return rows


def run_fp8(quick):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import tilec
    from _timing import bench_rounds
    from flash_attention_fp8 import flash_attention_fp8, quantize, reference

    rows = []
    for (b, h, s, d, causal) in (FP8_SHAPES[1:2] if quick else FP8_SHAPES):
        name = f"b{b} h{h} s{s} d{d}{' causal' if causal else ''}"
        kernel = tilec.compile(flash_attention_fp8(b, h, s, d, causal), target="auto",
                               pass_configs=attention_pass_configs())
        kernel_regs = tilec.compile(flash_attention_fp8(b, h, s, d, causal, p_in_registers=True), target="auto",
                                    pass_configs=attention_pass_configs())
        q8, qs = quantize(torch.randn(b, s, h, d, device="cuda"), torch)
        k8, ks = quantize(torch.randn(b, s, h, d, device="cuda"), torch)
        vt8, vs = quantize(torch.randn(b, h, d, s, device="cuda"), torch)
        scales = torch.stack([qs, ks, vs]).float()
        out = torch.empty((b, s, h, d), dtype=torch.bfloat16, device="cuda")
        # the float64 reference of two heads of one batch element keeps the check cheap
        ref = reference(q8[:1, :, :2], k8[:1, :, :2], vt8[:1, :2], scales, causal)
        errs = []
        for k in (kernel, kernel_regs):
            out.fill_(float("nan"))
            k(q8, k8, vt8, scales, out)
            torch.cuda.synchronize()
            errs.append(((out[:1, :, :2].double() - ref).abs().max() / ref.abs().max()).item())
        err = max(errs)
        qb, kb, vb = (torch.randn(b, h, s, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qb, kb, vb, is_causal=causal)

        med = bench_rounds({"ours": lambda: kernel(q8, k8, vt8, scales, out),
                            "ours_regs": lambda: kernel_regs(q8, k8, vt8, scales, out), "cudnn": cudnn})
        fl = 4.0 * b * h * s * s * d / (2 if causal else 1)
        row = {"shape": name, "tflops": fl / med["ours"] / 1e9, "tflops_p_regs": fl / med["ours_regs"] / 1e9,
               "cudnn_bf16_tflops": fl / med["cudnn"] / 1e9, "ratio": med["cudnn"] / med["ours"],
               "ratio_p_regs": med["cudnn"] / med["ours_regs"], "max_rel_err": err}
        rows.append(row)
        print(f"  fp8 fwd {name}: tilec P in shared {row['tflops']:.0f} TFLOP/s (ratio {row['ratio']:.3f}), "
              f"P in registers {row['tflops_p_regs']:.0f} (ratio {row['ratio_p_regs']:.3f}), cuDNN bf16 "
              f"{row['cudnn_bf16_tflops']:.0f}, max rel err {err:.1e}", flush=True)
    return rows


def compile_only():
    import tilec

    n = 0
    for (b, h, s, d, causal) in BWD_SHAPES[:1] + BWD_SHAPES[-1:]:
        for p in bwd_programs(b, h, s, d, causal) + bwd_programs(b, h, s, d, causal, blocks=(64, 32, 128))[2:3]:
            tilec.compile(p, target="sm_90a")
            n += 1
    for (batch, seqlen) in MLA_SHAPES[:1]:
        for p in mla_programs(batch, seqlen, 2)[0] + mla_programs(batch, seqlen, 1)[0]:
            tilec.compile(p, target="sm_90a")
            n += 1
    from flash_decoding import flash_decoding

    batch, seqlen = DECODE_SHAPES[0]
    pages = math.ceil(seqlen / 64)
    for p in flash_decoding(batch, 32, 8, 128, batch * pages, pages, 64, 2, dtype="bfloat16"):
        tilec.compile(p, target="sm_90a")
        n += 1
    print(f"compiled {n} programs for sm_90a")
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["fwd", "bwd", "mla", "decode", "fp8", "all"], default="all")
    ap.add_argument("--fwd-block-n", default="0", help="forward candidates, e.g. 0,176 or 64:0,192x128x384;128:0,176 "
                    "(block_N, or block_M x block_N x threads; 0: the defaults)")
    ap.add_argument("--dims", default="", help="head dims to run (forward and backward), e.g. 128 (default: all)")
    ap.add_argument("--causal", choices=["0", "1"], default=None, help="forward rows: only non-causal (0) or causal (1)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--splits", default="1,2,4", help="MLA / decode num_split candidates (the best is reported)")
    ap.add_argument("--json", default="")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--pass-configs", default="", help="JSON dict of pass configs for every program timed")
    ap.add_argument("--bwd-blocks", default="default",
                    help="backward main-kernel blocks to time, e.g. default,128x64x256 (keys x queries x threads)")
    ap.add_argument("--bwd-ds-first", action="store_true",
                    help="the backward candidate ds_to_shared_first (dS to shared memory before the dK gemm)")
    ap.add_argument("--mla-options", default="",
                    help="JSON dict of mla_decode options (candidates), e.g. '{\"cluster_heads\": true}'")
    ap.add_argument("--bwd-variants", default="",
                    help='backward variants timed in the same rounds, JSON: [{"name": "a", "blocks": "128x128x256", '
                    '"options": {"dq_before_dk": true}}, ...]')
    ap.add_argument("--bwd-options", default="",
                    help="JSON dict of flash_attention_bwd options (candidates), e.g. '{\"overlap_softmax\": true}'")
    args = ap.parse_args()
    if args.bwd_options:
        BWD_OPTIONS.update(json.loads(args.bwd_options))
    if args.mla_options:
        MLA_OPTIONS.update(json.loads(args.mla_options))
    if args.bwd_ds_first:
        BWD_OPTIONS["ds_to_shared_first"] = True
    if args.pass_configs:
        PASS_CONFIGS.update(json.loads(args.pass_configs))
    if args.compile_only:
        compile_only()
        return
    out = {}
    if args.part == "fwd":  # not part of "all": the forward's peer table is bench/peer_attention.py's
        out["fwd"] = run_fwd(args.quick, parse_block_ns(args.fwd_block_n),
                             [int(x) for x in args.dims.split(",")] if args.dims else None,
                             None if args.causal is None else args.causal == "1")
    if args.part in ("bwd", "all"):
        dims = [int(x) for x in args.dims.split(",")] if args.dims else None
        if args.bwd_variants:
            out["bwd"] = run_bwd(args.quick, parse_bwd_variants(args.bwd_variants), dims)
        else:  # each of --bwd-blocks in rounds of its own
            out["bwd"] = [row for blocks in parse_blocks(args.bwd_blocks)
                          for row in run_bwd(args.quick, [("", blocks, BWD_OPTIONS, {})], dims)]
    if args.part in ("mla", "all"):
        out["mla"] = run_mla(args.quick, [int(x) for x in args.splits.split(",")])
    if args.part in ("decode", "all"):
        out["decode"] = run_decode(args.quick, [int(x) for x in args.splits.split(",")])
    if args.part in ("fp8", "all"):
        out["fp8"] = run_fp8(args.quick)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
