"""kernel.explain(): the instruction chosen for each copy and gemm, and the rule behind every
faster choice not made; the kernel-level forms (warp specialization, persistence, bank
conflicts). Every reason's own case is in test_explain_reasons.py. No GPU needed."""
import os
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from explain_text import entry  # noqa: E402

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _gemm(threads=256, stages=3, dtype="float16", target="sm_90a", **cfg):
    M = N = K = 512

    @T.prim_func
    def g(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=threads) as (bx, by):
            As = T.alloc_shared((128, 32), dtype)
            Bs = T.alloc_shared((32, 128), dtype)
            Cl = T.alloc_fragment((128, 128), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, 32), num_stages=stages):
                T.copy(A[by * 128, ko * 32], As)
                T.copy(B[ko * 32, bx * 128], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * 128, bx * 128])

    return tilec.compile(g, target=target, pass_configs=cfg).explain(show=False)


def test_hopper_gemm_is_warp_specialized_tma_and_wgmma():
    text = _gemm()
    assert "warp-specialized: a producer warpgroup issues TMA loads" in entry(text, "T.Pipelined loop")
    assert "TMA load (cp.async.bulk.tensor) by the producer warpgroup" in entry(text, "T.tma_copy(A, As)")
    assert "chosen: wgmma (A from shared memory, B from shared memory)" in entry(text, "T.gemm(As, Bs, Cl)")
    assert "registers: " in text and "shared memory: " in text and "spills: " in text


@pytest.mark.filterwarnings("ignore::tilec.kernel.PerformanceWarning")  # 64 threads hold a 128x128 tile
def test_wgmma_needs_whole_warpgroups():
    text = _gemm(threads=64)
    gemm = entry(text, "T.gemm(As, Bs, Cl)")
    assert "chosen: mma.sync" in gemm
    assert "no wgmma: wgmma runs on whole warpgroups (128 threads), the block has 64" in gemm
    loop = entry(text, "T.Pipelined loop")
    assert "not warp-specialized (TMA producer + wgmma consumers): the block has 64 threads" in loop


def test_wgmma_needs_sm90a_and_can_be_disabled():
    assert "no wgmma: wgmma needs sm_90a, the target is sm_80" in _gemm(target="sm_80")
    text = _gemm(**{"tl.disable_wgmma": True})
    assert "no wgmma: disabled by the pass config tl.disable_wgmma" in entry(text, "T.gemm(As, Bs, Cl)")
    assert "does not use wgmma" in entry(text, "T.Pipelined loop")
    assert "chosen: cp.async" in entry(text, "T.async_copy(A, As)")


def test_a_single_stage_loop_gets_no_async_copies():
    # On sm_80 a num_stages=1 loop is serial (on sm_90a its copies go to the producer warpgroup).
    copy = entry(_gemm(stages=1, target="sm_80"), "T.copy(A, As)")
    assert "no cp.async: asynchronous copies are used in T.Pipelined loops (num_stages >= 2)" in copy
    assert "TMA load (cp.async.bulk.tensor) by the producer warpgroup" in entry(_gemm(stages=1), "T.tma_copy(A, As)")


def test_tma_store_and_why_a_store_is_not_tma():
    @T.prim_func
    def store(A: T.Tensor((256, 128), "float16"), B: T.Tensor((256, 128), "float16"),
              C: T.Tensor((256, 4), "float16"), D: T.Tensor((256, 4), "float16")):
        with T.Kernel(2, threads=128) as bx:
            S = T.alloc_shared((128, 128), "float16")
            N = T.alloc_shared((128, 4), "float16")
            T.copy(A[bx * 128, 0], S)
            T.copy(S, B[bx * 128, 0])
            T.copy(S, B[bx * 128, 0], disable_tma=True)
            T.copy(C[bx * 128, 0], N)
            T.copy(N, D[bx * 128, 0])

    text = tilec.compile(store, target="sm_90a").explain(show=False)
    entries = [e for e in text.split("\nline ") if "T.copy(S, B)" in e]
    assert "chosen: TMA store" in entries[0]
    assert "no TMA store: the copy has disable_tma=True" in entries[1]
    assert "no TMA store: a TMA box row must be a multiple of 16 bytes" in entry(text, "T.copy(N, D)")
    assert "no TMA: loads use TMA in a warp-specialized T.Pipelined loop" in entry(text, "T.copy(A, S)")


def test_a_paged_copy_is_warp_specialized_unless_the_config_is_off():
    @T.prim_func
    def paged(K: T.Tensor((64 * 16, 64), "float16"), table: T.Tensor((16,), "int32"),
              Q: T.Tensor((128, 64), "float16"), O: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            Qs = T.alloc_shared((128, 64), "float16")
            Ks = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((128, 64), "float32")
            T.copy(Q, Qs)
            T.clear(acc)
            for p in T.Pipelined(16, num_stages=2):
                T.copy(K[table[p] * 64, 0], Ks)
                T.gemm(Qs, Ks, acc, transpose_B=True)
            T.copy(acc, O)

    off = tilec.compile(paged, target="sm_90a", pass_configs={"tilec.ws_indirect_copies": False})
    assert "is computed from memory (e.g. a block table)" in entry(off.explain(show=False), "T.Pipelined loop")
    on = tilec.compile(paged, target="sm_90a").explain(show=False)
    assert "chosen: warp-specialized" in entry(on, "T.Pipelined loop")


def test_kernels_from_cuda_source_have_nothing_to_explain():
    from test_runtime_kernel import ADD_PLAN, ADD_SOURCE

    from tilec import kernel as kernel_mod

    k = kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80")
    with pytest.raises(kernel_mod.KernelArgumentError, match="compiled from a program"):
        k.explain()


def _transpose(pad, vector_rows=False):
    @T.prim_func
    def tr(A: T.Tensor((1024, 1024), "float32"), B: T.Tensor((1024, 1024), "float32")):
        with T.Kernel(32, 32, threads=256) as (bx, by):
            tile = T.alloc_shared((32, 32 + pad), "float32")
            for i, j in T.Parallel(32, 32):
                tile[i, j] = A[by * 32 + i, bx * 32 + j]
            for i, j in T.Parallel(32, 32):
                B[bx * 32 + i, by * 32 + j] = tile[j, i]

    return tr


def test_a_transposed_shared_read_is_a_32_way_bank_conflict_and_padding_removes_it():
    # Issue 13's transpose: lanes read down a column of a 32-word-wide tile, all in one bank
    # (row-major; by default layout inference picks a conflict-free layout itself:
    # tests/python/test_bank_aware_layouts.py).
    row_major = {"tilec.bank_aware_layouts": False}
    text = tilec.compile(_transpose(0), target="sm_80", pass_configs=row_major).explain(show=False)
    read = entry(text, "shared 'tile' read")
    assert "found: 32-way bank conflict" in read and "pad the rows" in read
    assert "shared 'tile' write" not in text  # the row-wise fill is conflict-free
    padded = tilec.compile(_transpose(1), target="sm_80", pass_configs=row_major).explain(show=False)
    assert "bank conflict" not in padded


def test_library_kernels_without_conflicts_report_none():
    # ldmatrix / cp.async / TMA addresses are not thread loads; the examples' softmax and GEMM
    # have no conflicting thread accesses.
    assert "bank conflict" not in _gemm(target="sm_80")
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import softmax

    assert "bank conflict" not in tilec.compile(softmax.softmax(4096), target="sm_90a").explain(show=False)


def test_a_store_whose_shared_layout_tma_cannot_read_is_explained_as_simt():
    # TMA's rules admit the copy, but the annotated (padded) layout is not a box TMA can read:
    # lowering falls back to the SIMT copy, and explain says so (it reads the lowered IR).
    @T.prim_func
    def padded(A: T.Tensor((64, 512), T.float16), B: T.Tensor((64, 512), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 512), T.float16)
            T.annotate_layout({S: T.Layout((64, 512), lambda i, j: i * 520 + j)})
            for i, j in T.Parallel(64, 512):
                S[i, j] = A[i, j] * 2.0
            T.copy(S, B)

    kernel = tilec.compile(padded, target="sm_90a")
    text = str(kernel.explain())
    assert "tl::tma_store" not in kernel.get_kernel_source()
    assert "chosen: SIMT copy" in text, text
    assert "no TMA store: the layout of shared tile 'S' (annotated or inferred) is not one TMA boxes can read" in text
