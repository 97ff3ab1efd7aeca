"""explain()'s reasons, one case per kind (issue 14): for every rule of TMA eligibility
(ops/copy_tma.cc tma_shape, and explain's target / config checks), of gemm instruction
selection (target/cuda/gemm_isel.cc, gemm_isel_sm90.cc) and of TMA multicast, a program that
trips it and the line explain prints; then the pipeline depth, the SIMT copies' vector widths
and TMA decided at launch. Reasons no compiled kernel can show are in NOT_IN_EXPLAIN with why;
test_every_reason_in_the_sources_has_a_case keeps the tables in step with the sources."""
import os
import re

import pytest

import tilec
import tilec.language as T

from explain_text import entry

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

pytestmark = [pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found"),
              pytest.mark.filterwarnings("ignore::tilec.kernel.PerformanceWarning")]


def explain(func, target="sm_90a", **cfg):
    return tilec.compile(func, target=target, pass_configs=cfg).explain(show=False)


# ---------------------------------------------------------------- gemm instruction selection

def gemm_tile(m=128, n=128, k=32, threads=128, dtype="float16", accum="float32", trans_B=False, a_scope="shared",
              b_scope="shared"):
    """One block multiplying whole tensors: A (m, k), B (k, n) or (n, k), C (m, n)."""
    b_shape = (n, k) if trans_B else (k, n)
    alloc = {"shared": T.alloc_shared, "fragment": T.alloc_fragment, "local": T.alloc_local}
    alloc_a, alloc_b = alloc[a_scope], alloc[b_scope]

    @T.prim_func
    def g(A: T.Tensor((m, k), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((m, n), accum)):
        with T.Kernel(1, threads=threads) as bx:
            As = alloc_a((m, k), dtype)
            Bs = alloc_b(b_shape, dtype)
            Cl = T.alloc_fragment((m, n), accum)
            T.clear(Cl)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cl, transpose_B=trans_B)
            T.copy(Cl, C)

    return g


# (case, gemm_tile arguments, target, pass configs, what explain says about the T.gemm)
GEMM_REASONS = [
    ("wgmma_needs_sm90a", {}, "sm_90", {}, ["chosen: mma.sync", "no wgmma: wgmma needs sm_90a, the target is sm_90"]),
    ("wgmma_disabled", {}, "sm_90a", {"tl.disable_wgmma": True},
     ["chosen: mma.sync", "no wgmma: disabled by the pass config tl.disable_wgmma"]),
    ("wgmma_dtypes", {"dtype": "float64", "accum": "float64"}, "sm_90a", {},
     ["chosen: FMA", "no wgmma: wgmma supports float16 x float16, bfloat16 x bfloat16, float32 (as tf32) and float8",
      "not A float64, B float64, C float64"]),
    ("wgmma_k_major", {"dtype": "float32"}, "sm_90a", {},
     ["chosen: mma.sync", "no wgmma: wgmma reads float32 operands K-major only: store A as M x K and B as N x K"]),
    ("wgmma_warpgroups", {"m": 16, "n": 48, "threads": 48}, "sm_90a", {},
     ["no wgmma: wgmma runs on whole warpgroups (128 threads), the block has 48"]),
    ("wgmma_shape", {"m": 32}, "sm_90a", {},
     ["chosen: mma.sync", "no wgmma: wgmma needs M % 64 == 0, N % 8 == 0 and K % 16 == 0, the tile is M=32 N=128 K=32"]),
    ("wgmma_split", {"m": 64, "n": 8, "threads": 256}, "sm_90a", {},
     ["no wgmma: the 64x8 C tile cannot be split over 2 warpgroups (each needs a multiple of 64 rows and of 8 "
      "columns that a wgmma N divides)"]),
    ("mma_dtypes", {"dtype": "float64", "accum": "float64"}, "sm_80", {},
     ["chosen: FMA", "no mma.sync: mma.sync supports float16/bfloat16 -> float32, float32 (as tf32) -> float32 and "
      "int8/uint8 -> int32, not A float64, B float64, C float64"]),
    ("mma_f16_accumulator", {"accum": "float16"}, "sm_80", {},
     ["chosen: FMA", "no mma.sync: mma.sync supports", "not A float16, B float16, C float16"]),
    ("mma_shape", {"m": 8, "n": 64}, "sm_80", {},
     ["chosen: FMA", "no mma.sync: mma.sync needs M % 16 == 0, N % 8 == 0 and K % 16 == 0 for float16, the tile is "
      "M=8 N=64 K=32"]),
    ("mma_whole_warps", {"m": 16, "n": 48, "threads": 48}, "sm_80", {},
     ["chosen: FMA", "no mma.sync: mma.sync needs whole warps, the block has 48 threads"]),
    ("mma_split", {"m": 64, "n": 8, "threads": 256}, "sm_80", {},
     ["chosen: FMA", "no mma.sync: the 64x8 C tile cannot be split over 8 warps with policy Square (each warp needs "
      "a multiple of 16 rows and 8 columns)"]),
]


@pytest.mark.parametrize("case, args, target, cfg, expected", GEMM_REASONS, ids=[c[0] for c in GEMM_REASONS])
def test_gemm_reason(case, args, target, cfg, expected):
    gemm = entry(explain(gemm_tile(**args), target, **cfg), "T.gemm(")
    for piece in expected:
        assert piece in gemm, gemm


def _gemm_ldmatrix_rows():
    # A_shared rows of 36 float16 (72 bytes): ldmatrix reads 16-byte chunks of a row.
    @T.prim_func
    def g(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 36), "float16")
            Bs = T.alloc_shared((32, 64), "float16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.clear(Cl)
            T.copy(A, As[0:64, 0:32])
            T.copy(B, Bs)
            T.gemm(As[0:64, 0:32], Bs, Cl)
            T.copy(Cl, C)

    return g


def test_gemm_reason_ldmatrix_rows():
    gemm = entry(explain(_gemm_ldmatrix_rows(), "sm_80"), "T.gemm(")
    assert "chosen: FMA" in gemm
    assert "no mma.sync: ldmatrix needs shared rows of whole 16-byte chunks, A_shared rows are 72 bytes" in gemm


# Operands no instruction reads: the compile error lists every candidate's reason.
GEMM_ERRORS = [
    ("a_local_hopper", {"m": 16, "n": 64, "a_scope": "local"}, "sm_90a",
     ["wgmma: wgmma reads A from shared memory or a register fragment, not local",
      "mma: mma.sync reads A from shared memory (T.alloc_shared) or from a register fragment (T.alloc_fragment), "
      "not local", "fma: the FMA path reads A and B from shared memory (T.alloc_shared)"]),
]


@pytest.mark.parametrize("case, args, target, expected", GEMM_ERRORS, ids=[c[0] for c in GEMM_ERRORS])
def test_gemm_reasons_in_the_compile_error(case, args, target, expected):
    with pytest.raises(tilec.CompileError) as e:
        tilec.compile(gemm_tile(**args), target=target)
    for piece in expected:
        assert piece in str(e.value), str(e.value)


# ---------------------------------------------------------------- TMA

def _store(g_shape=(64, 64), g_dtype="float16", s_shape=(64, 64), s_dtype="float16", **copy_kw):
    """A whole-tensor load into a shared tile and the store back: the store's reasons."""
    @T.prim_func
    def k(A: T.Tensor(g_shape, s_dtype), D: T.Tensor(g_shape, g_dtype)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared(s_shape, s_dtype)
            T.copy(A, S)
            T.copy(S, D, **copy_kw)

    return k


def _six_dims():
    @T.prim_func
    def k(A: T.Tensor((2, 2, 2, 2, 64, 64), "float16"), D: T.Tensor((2, 2, 2, 2, 64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A[0, 0, 0, 0, 0:64, 0:64], S)
            T.copy(S, D[0, 0, 0, 0, 0:64, 0:64])

    return k


def _column_block():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), D: T.Tensor((64, 8), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A, S)
            T.copy(S[0:64, 0:8], D)

    return k


def _four_rows():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), D: T.Tensor((4, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A, S)
            T.copy(S[0:4, 0:64], D)

    return k


def _row_stride_24_bytes():
    # The issue's example: rows of 12 float16 (24 bytes); the tile's 8 columns would make a
    # 16-byte box row, but the tensor map's row stride must be a multiple of 16 bytes.
    @T.prim_func
    def k(A: T.Tensor((64, 12), "float16"), D: T.Tensor((64, 12), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 8), "float16")
            T.copy(A[0:64, 0:8], S)
            T.copy(S, D[0:64, 0:8])

    return k


def _unit_last_dimension():
    @T.prim_func
    def k(A: T.Tensor((64, 64, 8), "float16"), D: T.Tensor((64, 64, 8), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A[0:64, 0:64, 0], S)
            T.copy(S, D[0:64, 0:64, 0])

    return k


def _column_major_output():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), D: T.StridedTensor((64, 64), (1, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A, S)
            T.copy(S, D)

    return k


def _made_tensor():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), P: T.Tensor([1], T.ptr)):
        with T.Kernel(1, threads=128) as bx:
            D = T.make_tensor(P[0], (64, 64), T.float16)
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A, S)
            T.copy(S, D)

    return k


def _narrow_rows():
    @T.prim_func
    def k(A: T.Tensor((128, 4), "float16"), D: T.Tensor((128, 4), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128, 4), "float16")
            T.copy(A, S)
            T.copy(S, D)

    return k


# (case, program, target, pass configs, the store's line in explain)
TMA_REASONS = [
    ("target", lambda: _store(), "sm_80", {}, "no TMA store: TMA needs sm_90, the target is sm_80"),
    ("disable_tma_lower", lambda: _store(), "sm_90a", {"tl.disable_tma_lower": True},
     "no TMA store: tl.disable_tma_lower is set"),
    ("disable_tma", lambda: _store(disable_tma=True), "sm_90a", {}, "no TMA store: the copy has disable_tma=True"),
    ("prefer_instruction", lambda: _store(prefer_instruction="cp.async"), "sm_90a", {},
     'no TMA store: the copy prefers instruction "cp.async"'),
    ("make_tensor", _made_tensor, "sm_90a", {},
     "no TMA store: a T.make_tensor buffer has no tensor map (TMA copies tensor parameters)"),
    ("converts", lambda: _store(g_dtype="float16", s_dtype="float32"), "sm_90a", {},
     "no TMA store: TMA copies without converting types"),
    ("whole_bytes", lambda: _store(g_dtype="bool", s_dtype="bool"), "sm_90a", {},
     "no TMA store: TMA copies whole bytes"),
    # a 1-D tile is one row, cut into at most 8 boxes of up to 256 elements: 1028 floats are not
    ("one_dimensional_tile", lambda: _store(g_shape=(1028,), s_shape=(1028,), g_dtype="float32", s_dtype="float32"),
     "sm_90a", {}, "no TMA store: the layout of shared tile 'S' (annotated or inferred) is not one TMA boxes can read"),
    ("six_dimensions", _six_dims, "sm_90a", {}, "no TMA store: TMA addresses tensors of at most 5 dimensions"),
    ("leading_dimensions", lambda: _store(g_shape=(2, 64, 64), s_shape=(2, 64, 64)), "sm_90a", {},
     "no TMA store: the shared side's leading dimensions must be indexed with one value"),
    ("column_block", _column_block, "sm_90a", {},
     "no TMA store: a column block of a shared tile must be whole swizzle spans (a multiple of 32 bytes wide)"),
    ("row_band", _four_rows, "sm_90a", {}, "no TMA store: a part of a shared tile must be whole 8-row groups"),
    ("contiguous", _column_major_output, "sm_90a", {},
     "no TMA store: the global tensor's last dimension must be contiguous"),
    ("row_stride", _row_stride_24_bytes, "sm_90a", {},
     "no TMA store: the stride of 'D' along dimension 0 is 24 bytes, TMA needs a multiple of 16"),
    ("last_dimension", _unit_last_dimension, "sm_90a", {},
     "no TMA store: the global region's last dimension must be the tile's columns"),
    ("box_row", _narrow_rows, "sm_90a", {}, "no TMA store: a TMA box row must be a multiple of 16 bytes"),
]


@pytest.mark.parametrize("case, program, target, cfg, expected", TMA_REASONS, ids=[c[0] for c in TMA_REASONS])
def test_tma_reason(case, program, target, cfg, expected):
    text = explain(program(), target, **cfg)
    store = entry(text, "T.copy(S, D)")
    assert "chosen: SIMT copy" in store and expected in store, text


def test_a_load_outside_a_pipelined_loop_gets_the_same_reason():
    load = entry(explain(_row_stride_24_bytes()), "T.copy(A, S)")
    assert "no TMA: the stride of 'A' along dimension 0 is 24 bytes, TMA needs a multiple of 16" in load


def test_symbolic_strides_leave_tma_to_the_launch():
    n = T.dynamic("n")

    @T.prim_func
    def k(A: T.Tensor((64, n), "float16"), D: T.Tensor((64, n), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A[0:64, 0:64], S)
            T.copy(S, D[0:64, 0:64])

    store = entry(explain(k), "T.copy(S, D)")
    assert "chosen: TMA store" in store
    assert ("TMA is decided at launch: the strides of 'D' are not known when compiling; its tensor map needs the "
            "data 16-byte aligned, the last dimension contiguous and every other stride a multiple of 16 bytes") in store
    assert "warns and runs the kernel compiled without TMA; an exported (C++) kernel refuses it" in store
    # Constant strides say nothing of the launch.
    assert "decided at launch" not in explain(_store())


# ---------------------------------------------------------------- multicast and pipeline depth

def _ws_gemm(cluster=None, stages=3, bk=64):
    M = N = K = 1024

    @T.prim_func
    def g(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"), C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=256, cluster_dims=cluster) as (bx, by):
            As = T.alloc_shared((128, bk), "bfloat16")
            Bs = T.alloc_shared((bk, 128), "bfloat16")
            Cl = T.alloc_fragment((128, 128), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * 128, ko * bk], As)
                T.copy(B[ko * bk, bx * 128], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * 128, bx * 128])

    return g


# (case, _ws_gemm arguments, pass configs, what explain says of A's load, of B's load)
MULTICAST = [
    ("no_cluster", {}, {}, "no TMA multicast: the kernel has no cluster (T.Kernel(..., cluster_dims=...)",
     "no TMA multicast: the kernel has no cluster"),
    ("cluster_along_n", {"cluster": (2, 1, 1)}, {}, "multicast to the cluster",
     "no TMA multicast: the source depends on bx, the block index the cluster spans: the blocks of a cluster "
     "load different tiles"),
    ("cluster_along_m", {"cluster": (1, 2, 1)}, {}, "no TMA multicast: the source depends on by",
     "multicast to the cluster"),
    ("config_off", {"cluster": (2, 1, 1)}, {"tilec.tma_multicast": False}, "no TMA multicast: tilec.tma_multicast is off",
     "no TMA multicast: tilec.tma_multicast is off"),
    ("two_dimensions", {"cluster": (2, 2, 1)}, {},
     "no TMA multicast: the cluster spans more than one grid dimension", "spans more than one grid dimension"),
    ("too_many_blocks", {"cluster": (32, 1, 1)}, {}, "no TMA multicast: the cluster has 32 blocks, a multicast mask "
     "holds 16", "the cluster has 32 blocks"),
    ("bands", {"cluster": (1, 8, 1), "bk": 32}, {}, "no TMA multicast: the source depends on by",
     "no TMA multicast: the tile does not split into 8 bands of whole 8-row groups, one per block of the cluster"),
]


@pytest.mark.parametrize("case, args, cfg, a_line, b_line", MULTICAST, ids=[c[0] for c in MULTICAST])
def test_multicast_reason(case, args, cfg, a_line, b_line):
    text = explain(_ws_gemm(**args), **cfg)
    a, b = entry(text, "T.tma_copy(A, As)"), entry(text, "T.tma_copy(B, Bs)")
    assert a_line in a, text
    assert b_line in b, text
    for load in (a, b):  # one of the two, never both
        assert ("multicast to the cluster" in load) != ("no TMA multicast" in load), load


def test_the_pipeline_depth_is_the_num_stages_used():
    loop = entry(explain(_ws_gemm(stages=4)), "T.Pipelined loop")
    assert "chosen: warp-specialized" in loop
    assert "depth: 4 stages (num_stages=4): each tile the loop loads has 4 shared-memory buffers" in loop
    sm80 = entry(explain(gemm_pipelined(stages=3), "sm_80"), "T.Pipelined loop")
    assert "3 stages (num_stages=3)" in sm80
    one = entry(explain(_ws_gemm(stages=1)), "T.Pipelined loop")
    assert "chosen: warp-specialized" in one
    assert "depth: 1 stage (num_stages=1): one shared-memory buffer per tile the loop loads, which the producer" in one
    serial = entry(explain(gemm_pipelined(stages=1), "sm_80"), "T.Pipelined loop")
    assert "depth: 1 stage (num_stages=1): not pipelined, a serial loop" in serial


def gemm_pipelined(stages):
    @T.prim_func
    def g(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"), C: T.Tensor((512, 512), "float16")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            As = T.alloc_shared((128, 32), "float16")
            Bs = T.alloc_shared((32, 128), "float16")
            Cl = T.alloc_fragment((128, 128), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(16, num_stages=stages):
                T.copy(A[by * 128, ko * 32], As)
                T.copy(B[ko * 32, bx * 128], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * 128, bx * 128])

    return g


@pytest.mark.filterwarnings("ignore:T.Pipelined")
def test_each_pipelined_loop_gets_its_depth_and_a_loop_with_nothing_to_pipeline_says_so():
    @T.prim_func
    def two(A: T.Tensor((128, 128), "float32"), B: T.Tensor((1024, 128), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((128,), "float32")
            S = T.alloc_shared((8, 128), "float32")
            T.clear(acc)
            for k in T.Pipelined(128, num_stages=2):
                for i in T.Parallel(128):
                    acc[i] += A[i, k]
            for t in T.Pipelined(128, num_stages=3):
                T.copy(B[t * 8, 0], S)
                for i in T.Parallel(128):
                    acc[i] += S[0, i]
            T.copy(acc, C)

    text = explain(two, "sm_80")
    loops = [e for e in text.split("\nline ") if ": T.Pipelined loop" in e.splitlines()[0]]
    assert len(loops) == 2, text
    assert "depth: 1 stage (num_stages=2): not pipelined, a serial loop: nothing in its body is a T.copy global -> " \
           "shared that could run ahead" in loops[0]
    assert "depth: 3 stages (num_stages=3)" in loops[1]


# ---------------------------------------------------------------- SIMT copy widths

def test_simt_copies_say_their_vector_width():
    @T.prim_func
    def k(A: T.Tensor((128, 128), "bfloat16"), D: T.Tensor((128, 128), "bfloat16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128, 128), "bfloat16")
            T.copy(A, S)
            for i, j in T.Parallel(128, 128):
                D[i, j] = S[i, j]

    assert "chosen: SIMT copy, 16-byte vectors (8 \u00d7 bfloat16) per thread" in entry(explain(k, "sm_80"), "T.copy(A, S)")
    epilogue = entry(explain(gemm_tile(), "sm_80"), "T.copy(Cl, C)")
    assert "chosen: each thread copies its own elements (local.fragment -> global), 8-byte vectors (2 \u00d7 float32)" \
           in epilogue
    # A column-major destination: nothing proves wider accesses.
    assert "chosen: SIMT copy, one element (2 bytes) per access" in entry(explain(_column_major_output()), "T.copy(S, D)")


# ---------------------------------------------------------------- the tables against the sources

# Reasons the sources can give that no compiled kernel's explain() shows, and why.
NOT_IN_EXPLAIN = {
    "TMA copies between global and shared memory": "explain asks only about loads and stores",
    "the shared tile and the copied part of it need constant extents": "T.copy refuses non-constant tile regions first",
    "the global region needs constant extents": "T.copy refuses non-constant tile regions first",
    "a one-row tile takes one global dimension": "T.copy pairs the extents: a one-row tile's one extent meets one",
    "the global region must be the tile's rows x columns": "T.copy's pairing and the last-dimension rule come first",
    "mma.sync needs A and B of one dtype": "T.gemm refuses A and B of different dtypes before selection (float8 "
                                           "mixes are wgmma's or an error)",
    "A in a register fragment cannot be transposed": "stage_gemm_operands moves such an A to shared memory first",
    "A in a register fragment must be float16 or bfloat16": "stage_gemm_operands moves such an A to shared memory",
    "A in a register fragment needs all ": "stage_gemm_operands moves such an A to shared memory",
    "wgmma takes A from registers only": "stage_gemm_operands moves such an A to shared memory",
    "wgmma reads B from shared memory": "stage_gemm_operands moves a register B to shared memory first",
    "mma.sync reads B from shared memory": "stage_gemm_operands moves a register B to shared memory first",
    "mma.sync needs sm_80 or newer": "tilec's targets start at sm_80",
    "A and B must have one dtype": "FMA is the last candidate: its refusal is the compile error",
    "operands must be numbers": "FMA is the last candidate: its refusal is the compile error",
    "lowering of T.gemm is not implemented yet": "tcgen05 is sm_100's; sm_100 targets are refused",
}


def _reason_heads():
    """The first string literal of every reason in tma_shape and the gemm candidates."""
    heads = []
    tma = open(os.path.join(ROOT, "src", "ops", "copy_tma.cc")).read()
    body = tma[tma.index("std::string tma_shape("):tma.index("bool tma_enabled(")]
    heads += re.findall(r'return "([^"]+)"', body)
    for name in ("gemm_isel.cc", "gemm_isel_sm90.cc"):
        src = open(os.path.join(ROOT, "src", "target", "cuda", name)).read()
        heads += re.findall(r'\*why = (?:std::string\()?"([^"]+)"', src)
        # Reasons built in a stream: the first literal after the ostringstream of the `*why = os.str()`.
        for m in re.finditer(r"std::ostringstream os;\s*os << \"([^\"]+)\"(?:(?!std::ostringstream).)*?\*why = os\.str\(\)",
                             src, re.S):
            heads.append(m.group(1))
    return heads


def test_every_reason_in_the_sources_has_a_case():
    tested = [p for c in GEMM_REASONS for p in c[4]] + [p for c in GEMM_ERRORS for p in c[3]]
    tested += [c[4] for c in TMA_REASONS] + ["ldmatrix needs shared rows of whole 16-byte chunks, "]
    heads = _reason_heads()
    assert len(heads) >= 35, heads
    # A case's text without explain's "no wgmma: " or the error's "mma: " in front.
    texts = [re.sub(r"^(no [A-Za-z. ]+|wgmma|mma|fma): ", "", t) for t in tested] + list(NOT_IN_EXPLAIN)

    def covered(head):
        return any(head[:min(len(head), len(t), 30)] == t[:min(len(head), len(t), 30)] for t in texts)

    missing = [h for h in heads if not covered(h)]
    assert not missing, f"reasons without a case in this file (add one, or say in NOT_IN_EXPLAIN why none): {missing}"


def test_a_register_b_is_staged_and_explained_as_a_shared_operand():
    # No instruction reads B from registers: stage_gemm_operands copies it to a shared tile, so
    # the gemm compiles (wgmma on sm_90a) instead of failing with the two reasons above.
    k = tilec.compile(gemm_tile(m=64, n=64, b_scope="fragment"), target="sm_90a")
    assert "Bs_stage" in k.get_kernel_source()
    assert "chosen: wgmma" in entry(explain(gemm_tile(m=64, n=64, b_scope="fragment"), "sm_90a"), "T.gemm(")
