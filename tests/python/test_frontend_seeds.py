"""The programs quoted in seeds/000 sections 1 and 3 parse into the expected IR: GEMM,
GEMM+ReLU, the warp-specialized GEMM, and the TMEM GEMM (which stops with a clear
"sm_100 not supported yet" error at T.tcgen05_gemm)."""

import pytest

import tilec
import tilec.language as T
from tilec import _tilec


def stmts_of(stmt, kind=None):
    """Every statement in pre-order (optionally only those of one kind)."""
    out = []

    def walk(s):
        if s is None:
            return
        out.append(s)
        if s.kind == "Seq":
            for c in s.stmts:
                walk(c)
        for field in ("body", "then_case", "else_case"):
            try:
                walk(s.field(field))
            except AttributeError:
                pass

    walk(stmt)
    return [s for s in out if kind is None or s.kind == kind]


def tile_ops(func):
    return [s for s in stmts_of(func.body, "TileOp")]


def region_shape(region):
    return [ext.as_int() for _, ext in region.region]


def gemm_relu(M, N, K, block_M, block_N, block_K, in_dtype="float16", accum_dtype="float", threads=128, relu=True):
    # seeds/000 section 1 (quickstart GEMM), with the ReLU epilogue
    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((K, N), in_dtype), C: T.Tensor((M, N), in_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_K, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if relu:
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_gemm_parses_to_the_expected_ops():
    f = gemm_relu(1024, 1024, 1024, 128, 128, 32, relu=False)
    ops = [s.op for s in tile_ops(f)]
    assert ops == ["fill", "copy", "copy", "gemm", "copy"]
    kernel = stmts_of(f.body, "KernelLaunch")[0]
    assert [g.as_int() for g in kernel.grid] == [8, 8]  # ceildiv folded at parse time
    assert kernel.threads == [128]
    loop = [s for s in stmts_of(f.body, "For") if s.for_kind == "Pipelined"][0]
    assert loop.num_stages == 3 and loop.extent.as_int() == 32
    copy_a = tile_ops(f)[1]
    # the all-index source A[by * 128, ko * 32] takes the shape of A_shared
    assert region_shape(copy_a.args[0]) == [128, 32]
    assert copy_a.args[0].buffer.name == "A"
    # the accumulator dtype "float" is float32
    c_local = [s.buffer for s in stmts_of(f.body, "Allocate") if s.buffer.name == "C_local"][0]
    assert str(c_local.dtype) == "float32" and c_local.scope == "local.fragment"


def test_gemm_relu_adds_a_parallel_epilogue():
    f = gemm_relu(1024, 1024, 1024, 128, 128, 32)
    par = [s for s in stmts_of(f.body, "For") if s.for_kind == "Parallel"]
    assert len(par) == 2  # the (i, j) nest
    store = stmts_of(par[0], "BufferStore")[0]
    assert store.buffer.name == "C_local"
    assert store.value.kind == "Max"
    assert store.value.b.kind == "FloatImm"  # 0 took the accumulator's type


def ws_gemm(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    # seeds/000 section 3.3 (warp-specialized GEMM)
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            data_is_ready = T.alloc_barrier(arrive_count=128)
            compute_is_done = T.alloc_barrier(arrive_count=128)

            with T.ws(1):
                T.clear(C_local)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                with T.ws(0):
                    T.barrier_wait(compute_is_done, (ko + 1) % 2)
                    T.tma_copy(A[by * block_M, ko * block_K], A_shared, barrier=data_is_ready)
                    T.tma_copy(B[ko * block_K, bx * block_N], B_shared, barrier=data_is_ready)
                    T.barrier_arrive(data_is_ready)
                with T.ws(1):
                    T.barrier_wait(data_is_ready, ko % 2)
                    T.gemm(A_shared, B_shared, C_local)
                    T.barrier_arrive(compute_is_done)

            with T.ws(1):
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_warp_specialized_gemm_parses():
    f = ws_gemm(1024, 1024, 1024, 128, 128, 64)
    ops = [s.op for s in tile_ops(f)]
    assert ops == ["barrier_init", "barrier_init", "fill", "tma_copy", "tma_copy", "gemm", "copy"]
    roles = [s.value for s in stmts_of(f.body, "Annotate") if s.key == "ws"]
    assert roles == [[1], [0], [1], [1]]
    barriers = [s.buffer for s in stmts_of(f.body, "Allocate") if s.buffer.scope == "shared.barrier"]
    assert [b.name for b in barriers] == ["data_is_ready", "compute_is_done"]
    init = tile_ops(f)[0]
    assert init.attrs["arrive_count"] == [128]
    tma = tile_ops(f)[3]
    assert tma.attrs["barrier"].kind == "BufferLoad"
    assert tma.attrs["barrier"].buffer.name == "data_is_ready"
    waits = [s.value for s in stmts_of(f.body, "Evaluate") if s.value.kind == "Call"]
    assert [w.op for w in waits] == ["barrier_wait", "barrier_arrive", "barrier_wait", "barrier_arrive"]
    assert waits[0].args[1].kind == "FloorMod"  # (ko + 1) % 2


def tmem_gemm(M, N, K, block_M, block_N, block_K, num_stages=2, dtype="bfloat16", accum_dtype="float",
              trans_A=False, trans_B=True):
    # seeds/000 section 3.4 (Blackwell TMEM GEMM)
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_tmem = T.alloc_tmem([block_M, block_N], accum_dtype)
            mbar = T.alloc_barrier(1)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.tcgen05_gemm(A_shared, B_shared, C_tmem, trans_A, trans_B, mbar=mbar, clear_accum=k == 0)
                T.mbarrier_wait_parity(mbar, k % 2)
            T.copy(C_tmem, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_tmem_gemm_stops_with_sm100_not_supported():
    with pytest.raises(tilec.CompileError) as info:
        tmem_gemm(1024, 1024, 1024, 128, 256, 64)
    err = info.value
    assert "sm_100" in err.message and "not support" in err.message
    assert err.file == __file__
    lines = open(__file__).read().splitlines()
    assert "T.tcgen05_gemm(" in lines[err.line - 1]
    assert "T.alloc_fragment" in err.hint
