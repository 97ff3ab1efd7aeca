"""GPU cases of the Hopper path (wgmma, TMA, mbarriers, warp specialization), one process each.

    python tests/gpu/hopper_cases.py CASE      -> prints one line "RESULT {json}"
    python tests/gpu/hopper_cases.py --list

Run through tests/gpu/test_hopper_gpu.py (pytest, each case in its own process under a
time limit, so that a hang or a trap cannot take the others down) or
tests/gpu/hopper_check.py (all cases in parallel, a summary table). Every case runs on fresh
random inputs with the output poisoned (NaN) first and compares against a float32 (or
float64) torch reference; the tolerance is relative to the reference's largest value.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def _tol(dtype):
    return {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-3}.get(dtype, 2e-2)


def _rel_err(out, ref):
    import torch

    out = out.double()
    ref = ref.double()
    if torch.isnan(out).any():
        return float("inf")
    return ((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def _ab_gemm_error(k, M, N, K, dtype):
    """Runs a kernel C = A @ B (out_idx=[2]) on random A (M x K), B (K x N); its relative error."""
    import torch

    tdt = getattr(torch, dtype)
    a = torch.randn(M, K, dtype=tdt, device="cuda")
    b = torch.randn(K, N, dtype=tdt, device="cuda")
    c = k(a, b)
    torch.cuda.synchronize()
    return _rel_err(c, a.float() @ b.float())


def gemm_case(M, N, K, dtype="bfloat16", block_M=128, block_N=128, block_K=32, num_stages=3, threads=128,
              trans_A=False, trans_B=False, pass_configs=None, expect=("wgmma", "tma_load"), absent=(),
              symbolic_N=False):
    """`expect` / `absent`: text the kernel source must / must not contain. symbolic_N compiles N as
    T.dynamic (strides known only at launch, so TMA is decided there)."""
    import torch
    import tilec
    import tilec.language as T
    from gemm import matmul

    f = matmul(M, T.dynamic("N") if symbolic_N else N, K, block_M, block_N, block_K, dtype=dtype, trans_A=trans_A,
               trans_B=trans_B, num_stages=num_stages, threads=threads)
    k = tilec.compile(f, target="auto", out_idx=[2], pass_configs=pass_configs or {})
    src = k.get_kernel_source()
    missing = [e for e in expect if e not in src] + [f"no {e}" for e in absent if e in src]
    tdt = getattr(torch, dtype)
    a = torch.randn((K, M) if trans_A else (M, K), dtype=tdt, device="cuda")
    b = torch.randn((N, K) if trans_B else (K, N), dtype=tdt, device="cuda")
    c = torch.full((M, N), float("nan"), dtype=tdt, device="cuda")
    k(a, b, c)
    torch.cuda.synchronize()
    ref = (a.float().T if trans_A else a.float()) @ (b.float().T if trans_B else b.float())
    err = _rel_err(c, ref)
    # A second launch on new inputs with the same tensors reuses the cached tensor maps.
    a.normal_()
    c.fill_(float("nan"))
    k(a, b, c)
    torch.cuda.synchronize()
    ref = (a.float().T if trans_A else a.float()) @ (b.float().T if trans_B else b.float())
    err = max(err, _rel_err(c, ref))
    return {"ok": err < _tol(dtype) and not missing, "err": err, "missing": missing,
            "regs": k.ptxas_info["registers"], "spills": k.ptxas_info["spill_stores_bytes"]}


def lowp_case(dtype, M=512, N=384, K=256, block_K=64):
    """fp8 / int8 / tf32 GEMM, K-major operands (B stored N x K)."""
    import torch
    import tilec
    import tilec.language as T

    acc = "int32" if dtype == "int8" else "float32"

    @T.prim_func
    def g(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), acc)):
        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=128) as (bx, by):
            As = T.alloc_shared((128, block_K), dtype)
            Bs = T.alloc_shared((128, block_K), dtype)
            Cl = T.alloc_fragment((128, 128), acc)
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * 128, ko * block_K], As)
                T.copy(B[bx * 128, ko * block_K], Bs)
                T.gemm(As, Bs, Cl, transpose_B=True)
            T.copy(Cl, C[by * 128, bx * 128])

    k = tilec.compile(g, target="auto", out_idx=[2])
    src = k.get_kernel_source()
    if dtype == "int8":
        a = torch.randint(-8, 8, (M, K), dtype=torch.int8, device="cuda")
        b = torch.randint(-8, 8, (N, K), dtype=torch.int8, device="cuda")
        ref = a.double() @ b.double().T
    elif dtype == "float32":
        a = torch.randn(M, K, device="cuda")
        b = torch.randn(N, K, device="cuda")
        ref = a.double() @ b.double().T
    else:
        tdt = {"float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[dtype]
        a = torch.randn(M, K, device="cuda").to(tdt)
        b = torch.randn(N, K, device="cuda").to(tdt)
        ref = a.double() @ b.double().T
    c = k(a, b)
    torch.cuda.synchronize()
    err = _rel_err(c, ref)
    tol = 0 if dtype == "int8" else (5e-3 if dtype == "float32" else 1e-3)
    return {"ok": err <= tol and "wgmma" in src, "err": err, "regs": k.ptxas_info["registers"]}


def flash_case(dim=128, causal=False, dtype="bfloat16", seq=1024):
    import torch
    import tilec
    from flash_attention import flash_attention

    f = flash_attention(2, 4, seq, dim, is_causal=causal, dtype=dtype)
    k = tilec.compile(f, target="auto", out_idx=[3])
    src = k.get_kernel_source()
    tdt = getattr(torch, dtype)
    q, kk, v = (torch.randn(2, seq, 4, dim, dtype=tdt, device="cuda") for _ in range(3))
    o = k(q, kk, v)
    torch.cuda.synchronize()
    qd, kd, vd = (x.double().transpose(1, 2) for x in (q, kk, v))
    s = qd @ kd.transpose(-1, -2) / dim ** 0.5
    if causal:
        s = s.masked_fill(torch.ones(seq, seq, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
    ref = (s.softmax(-1) @ vd).transpose(1, 2)
    err = _rel_err(o, ref)
    return {"ok": err < _tol(dtype) and "wgmma_gemm_rs" in src, "err": err, "regs": k.ptxas_info["registers"],
            "spills": k.ptxas_info["spill_stores_bytes"]}


def hang_case():
    """A wait on a phase nobody completes: with TILEC_DEBUG_SYNC=1 the kernel traps with a
    message instead of hanging. The case succeeds when the launch fails (the process
    output, checked by the driver, names the barrier)."""
    import torch
    import tilec
    import tilec.language as T

    @T.prim_func
    def stuck(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            mbar = T.alloc_barrier(arrive_count=128)
            T.barrier_wait(mbar[0], 0)  # nobody arrives: phase 0 never completes
            for i in T.Parallel(128):
                A[i] = 1.0

    k = tilec.compile(stuck, target="auto")
    a = torch.zeros(128, device="cuda")
    try:
        k(a)
        torch.cuda.synchronize()
    except Exception as e:  # the trap surfaces as a launch / sync error
        return {"ok": True, "error": str(e).splitlines()[0]}
    return {"ok": False, "error": "the wait returned"}


def tma_fallback_case():
    """A tensor TMA cannot address (rows of 2060 bytes, not a multiple of 16) passed where the
    strides were not known at compile time runs the kernel compiled without TMA, with a warning
    that says why; the result is right."""
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = gemm_case(384, 1030, 256, "bfloat16", symbolic_N=True)
    msgs = [str(x.message) for x in w if "without TMA" in str(x.message)]
    r["ok"] = r["ok"] and len(msgs) == 1
    r["warning"] = msgs[0][:300] if msgs else ""
    return r


def manual_ws_case():
    """The T.ws example (producer warp group with T.tma_copy, consumer with wgmma)."""
    import warp_specialized_gemm as ex

    for case in ex.CASES:
        ex.run_case(*case)  # raises on a mismatch
    return {"ok": True}


def cluster_case(cluster=(2, 1, 1), M=1024, N=1024, K=1024, dtype="bfloat16", swizzle=0, multicasts=1):
    """A GEMM launched in clusters of 2 along N: the A tile is split into one band per CTA,
    each multicast to both (TMA multicast, remote mbarrier arrivals, cluster barriers). It is
    persistent over cluster tiles (each block of a cluster the tile of its rank); with
    T.use_swizzle a pair along N shares B's column instead, which is multicast."""
    import tilec
    import tilec.language as T

    bm, bn, bk = 128, 256, 64

    @T.prim_func
    def g(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256, cluster_dims=cluster) as (bx, by):
            As = T.alloc_shared((bm, bk), dtype)
            Bs = T.alloc_shared((bk, bn), dtype)
            Cl = T.alloc_fragment((bm, bn), "float32")
            if swizzle:
                T.use_swizzle(swizzle)
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, ko * bk], As)
                T.copy(B[ko * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bm, bx * bn])

    k = tilec.compile(g, target="auto", out_idx=[2])
    src = k.get_kernel_source()
    err = _ab_gemm_error(k, M, N, K, dtype)
    size = cluster[0] * cluster[1] * cluster[2]
    persistent = f"tile_start / {size}" in src
    # one multicast call per band box: count the loads (A or B) that are multicast
    multicast = ("tl::tma_load_multicast(&As" in src) + ("tl::tma_load_multicast(&Bs" in src)
    return {"ok": err < _tol(dtype) and multicast == multicasts and "cluster_sync" in src and persistent, "err": err,
            "persistent": persistent, "multicast_loads": multicast}


def tma_store_case(M=1024, N=768, K=512, dtype="bfloat16", pass_configs=None, stages=3, expect="tma_store"):
    """The peer benchmark's program: C through shared memory, stored with TMA. With 4 stages
    its C_shared does not fit beside them: the compiler stores C in column blocks through two
    smaller shared buffers (C_shared_staged), persistent."""
    import tilec
    import tilec.language as T

    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
    from peer_gemm import program

    k = tilec.compile(program(T, M, N, K, 128, 256, 64, stages, 256, dtype), target="auto", out_idx=[2],
                      pass_configs=pass_configs or {})
    src = k.get_kernel_source()
    err = _ab_gemm_error(k, M, N, K, dtype)
    return {"ok": err < _tol(dtype) and "tma_store" in src and expect in src, "err": err}


def tma_reduce_add_case(dtype="float32", rows=200, cols=128):
    """T.atomic_add of a shared tile into global memory (TMA reduce-add): two blocks add the
    same rows; rows past the tensor's end (200 = 3 whole tiles + 8 rows) are dropped."""
    import torch
    import tilec
    import tilec.language as T

    @T.prim_func
    def f(A: T.Tensor((rows, cols), dtype), Acc: T.Tensor((rows, cols), dtype)):
        with T.Kernel(T.ceildiv(rows, 64), 2, threads=128) as (bx, by):
            S = T.alloc_shared((64, cols), dtype)
            T.copy(A[bx * 64, 0], S)
            T.atomic_add(Acc[bx * 64:(bx + 1) * 64, :], S)

    k = tilec.compile(f, target="auto")
    tdt = getattr(torch, dtype)
    a = torch.randn(rows, cols, dtype=tdt, device="cuda")
    acc = torch.randn(rows, cols, dtype=tdt, device="cuda")
    want = acc.double() + 2 * a.double()
    k(a, acc)
    torch.cuda.synchronize()
    err = _rel_err(acc, want)
    return {"ok": err < _tol(dtype) and "tma_reduce_add" in k.get_kernel_source(), "err": err}


def weighted_rowsum_program(M=1000, N=1000, D=64, block_M=128, block_N=64, num_stages=2, dtype="float16"):
    """O[i] = sum_j (Q K^T)[i, j] * w[j]: each step loads a 1-D tile of w (T.alloc_shared([block_N]))
    beside K's tile, and the result leaves through a 1-D shared tile. On sm_90a both 1-D copies are
    TMA (the loop warp-specialized); M and N are not multiples of the blocks (TMA fills and drops)."""
    import tilec.language as T

    @T.prim_func
    def f(Q: T.Tensor((M, D), dtype), K: T.Tensor((N, D), dtype), W: T.Tensor((N,), "float32"),
          O: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=256) as bx:
            Q_shared = T.alloc_shared((block_M, D), dtype)
            K_shared = T.alloc_shared((block_N, D), dtype)
            w_shared = T.alloc_shared([block_N], "float32")
            o_shared = T.alloc_shared([block_M], "float32")
            s = T.alloc_fragment((block_M, block_N), "float32")
            part = T.alloc_fragment((block_M,), "float32")
            acc = T.alloc_fragment((block_M,), "float32")
            T.copy(Q[bx * block_M, 0], Q_shared)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(K[k * block_N, 0], K_shared)
                T.copy(W[k * block_N:(k + 1) * block_N], w_shared)
                T.clear(s)
                T.gemm(Q_shared, K_shared, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.if_then_else(k * block_N + j < N, s[i, j] * w_shared[j], 0)
                T.reduce_sum(s, part, dim=1)
                for i in T.Parallel(block_M):
                    acc[i] += part[i]
            T.copy(acc, o_shared)
            T.copy(o_shared, O[bx * block_M:(bx + 1) * block_M])

    return f


def one_dim_tma_case():
    import torch
    import tilec

    M, N, D = 1000, 1000, 64
    k = tilec.compile(weighted_rowsum_program(M, N, D), target="auto")
    q = torch.randn(M, D, dtype=torch.float16, device="cuda")
    kk = torch.randn(N, D, dtype=torch.float16, device="cuda")
    w = torch.randn(N, dtype=torch.float32, device="cuda")
    o = torch.full((M,), float("nan"), dtype=torch.float32, device="cuda")
    k(q, kk, w, o)
    torch.cuda.synchronize()
    err = _rel_err(o, (q.double() @ kk.double().T) @ w.double())
    src = k.get_kernel_source()
    return {"ok": err < 1e-3 and "tma_load" in src and "tma_store" in src, "err": err}


def one_dim_store_boxes_case(n=1000, tile=1024):
    """A 1-D shared tile of 1024 halves stored by TMA in four 256-element boxes; the tensor's
    1000 elements end inside the last box (TMA drops the rest)."""
    import torch
    import tilec
    import tilec.language as T

    @T.prim_func
    def f(A: T.Tensor((n,), "float16"), D: T.Tensor((n,), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((tile,), "float16")
            T.copy(A[0:tile], S)
            T.copy(S, D[0:tile])

    k = tilec.compile(f, target="auto")
    a = torch.randn(n, dtype=torch.float16, device="cuda")
    d = torch.full((n,), float("nan"), dtype=torch.float16, device="cuda")
    k(a, d)
    torch.cuda.synchronize()
    err = _rel_err(d, a)
    return {"ok": err == 0 and k.get_kernel_source().count("tl::tma_store(") == 4, "err": err}


CASES = {
    "team_bf16_4096": lambda: gemm_case(4096, 4096, 4096, "bfloat16", 128, 256, 64, 3, 256),
    "team_bf16_1024": lambda: gemm_case(1024, 1024, 1024, "bfloat16", 128, 256, 64, 3, 256),
    "quickstart_f16_1024": lambda: gemm_case(1024, 1024, 1024, "float16"),
    # partial tiles in M, N and K (TMA fills out-of-bounds with zeros; rows of 2064 B are TMA-able)
    "quickstart_bf16_partial": lambda: gemm_case(1000, 1032, 520, "bfloat16"),
    # rows of 2060 B known at compile time: no TMA for B and C, cp.async + wgmma instead
    "bf16_unaligned_rows": lambda: gemm_case(1000, 1030, 520, "bfloat16", expect=("wgmma",), absent=("tma_load",)),
    "f16_trans_B": lambda: gemm_case(512, 768, 256, "float16", trans_B=True),
    "bf16_trans_A": lambda: gemm_case(512, 768, 256, "bfloat16", trans_A=True),
    "f16_trans_AB": lambda: gemm_case(512, 768, 320, "float16", trans_A=True, trans_B=True),
    "f16_k64_s4": lambda: gemm_case(768, 512, 1024, "float16", 128, 128, 64, 4, 128),
    "bf16_256x128_t256": lambda: gemm_case(1024, 768, 512, "bfloat16", 256, 128, 64, 3, 256),
    "bf16_no_ws": lambda: gemm_case(1024, 1024, 1024, "bfloat16", 128, 256, 64, 3, 256,
                                     pass_configs={"tl.disable_warp_specialized": True}, expect=("wgmma",)),
    "bf16_no_wgmma": lambda: gemm_case(1024, 1024, 1024, "bfloat16", 128, 256, 64, 3, 256,
                                        pass_configs={"tl.disable_wgmma": True}, expect=("gemm_ss",)),
    "fp8_e4m3": lambda: lowp_case("float8_e4m3"),
    "fp8_e5m2": lambda: lowp_case("float8_e5m2"),
    "int8": lambda: lowp_case("int8"),
    "tf32": lambda: lowp_case("float32", block_K=32),
    "flash_d128": lambda: flash_case(128),
    "flash_d64_causal": lambda: flash_case(64, True),
    "flash_d128_causal_f16": lambda: flash_case(128, True, "float16"),
    "persistent_team_4096": lambda: gemm_case(4096, 4096, 4096, "bfloat16", 128, 256, 64, 3, 256,
                                              pass_configs={"tilec.persistent": True}),
    "persistent_quickstart_partial": lambda: gemm_case(1000, 1024, 520, "float16",
                                                       pass_configs={"tilec.persistent": True}),
    "persistent_fullrow_2048": lambda: gemm_case(2048, 1792, 1024, "bfloat16", 128, 256, 64, 3, 256,
                                                 pass_configs={"tilec.persistent": True,
                                                               "tilec.wgmma_partition": "FullRow"}),
    "persistent_tma_store": lambda: tma_store_case(pass_configs={"tilec.persistent": True}),
    "manual_ws": manual_ws_case,
    "cluster_multicast_2x1": cluster_case,
    "cluster_multicast_4x1_partial": lambda: cluster_case((4, 1, 1), 1000, 2048, 520),
    # persistent over more tiles than the device holds clusters; swizzled: B multicast
    "cluster_persistent_swizzled_4096": lambda: cluster_case((2, 1, 1), 4096, 4096, 1024, swizzle=10),
    "cluster_persistent_1x2_4096": lambda: cluster_case((1, 2, 1), 4096, 4096, 1024),
    # two cluster tiles per cluster, few steps: small enough for the sanitizers
    "cluster_persistent_swizzled_small": lambda: cluster_case((2, 1, 1), 4096, 2048, 256, swizzle=10),
    "tma_store_epilogue": tma_store_case,
    # partial tiles in M, N and K; 4 stages: C in four 64-column blocks, two buffers alternating
    "tma_store_column_blocks": lambda: tma_store_case(1000, 1280, 520, stages=4, expect="C_shared_staged"),
    "tma_reduce_add_f32": tma_reduce_add_case,
    "tma_reduce_add_bf16": lambda: tma_reduce_add_case("bfloat16"),
    "one_dim_tma": one_dim_tma_case,
    "one_dim_store_boxes": one_dim_store_boxes_case,
    "hang_detector": hang_case,
    "tma_fallback": tma_fallback_case,
}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--list":
        print("\n".join(CASES))
        return
    name = sys.argv[1]
    try:
        result = CASES[name]()
    except Exception as e:  # reported, not raised: the driver prints it
        result = {"ok": False, "exception": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-2000:]}
    print("RESULT " + json.dumps({"case": name, **result}), flush=True)


if __name__ == "__main__":
    main()
