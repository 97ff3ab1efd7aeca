"""T.sync_grid() (a barrier over every block of the grid, issue 9: upstream's persistent MLA decode)
and T.sync_warp(): the IR and its round trip, the placement errors, the CPU target's barrier
semantics, the CUDA lowering (cooperative groups, a cooperative launch plan, compiled by NVRTC for
sm_80 and sm_90a) and what passes leave alone (warp specialization, persistent grids)."""
import os

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec import CompileError

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
UPSTREAM_EXAMPLE = os.path.normpath(os.path.join(
    ROOT, "..", "shared", "upstream", "tilelang", "examples", "deepseek_mla", "example_mla_decode_persistent.py"))

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

BLOCKS, THREADS = 4, 64
N = BLOCKS * THREADS


def _two_phase(with_barrier=True):
    """Phase 1: block bx writes its slice of A and keeps a copy in a fragment; phase 2: it reads
    the mirrored block's slice of A (another block's phase 1) plus its own fragment."""

    @T.prim_func
    def two_phase(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            mine = T.alloc_fragment((THREADS,), "float32")
            count = T.alloc_var("int32")
            count = bx * 100
            for i in T.Parallel(THREADS):
                A[bx * THREADS + i] = bx * THREADS + i
                mine[i] = A[bx * THREADS + i] * 10
            if with_barrier:
                T.sync_grid()
            for i in T.Parallel(THREADS):
                B[bx * THREADS + i] = A[(BLOCKS - 1 - bx) * THREADS + i] + mine[i] + count

    return two_phase


def _two_phase_ref():
    j = np.arange(N)
    other = (BLOCKS - 1 - j // THREADS) * THREADS + j % THREADS
    return (other + 10 * j + 100 * (j // THREADS)).astype(np.float32)


# ------------------------------------------------------------------------------ front end


def test_sync_grid_and_sync_warp_are_intrinsics_that_round_trip():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            T.sync_warp()
            T.sync_warp(0x0000FFFF)
            T.sync_grid()
            A[bx] = 1.0

    text = k.script()
    assert 'T.call_intrin("void", "tl.sync_grid")' in text, text
    assert 'T.call_intrin("void", "tl.syncwarp")' in text, text
    assert 'T.call_intrin("void", "tl.syncwarp_mask", T.uint32(65535))' in text, text
    assert tilec.script.from_script(text).script() == text


def test_sync_grid_outside_a_kernel_is_an_error():
    with pytest.raises(CompileError, match=r"inside `with T.Kernel"):
        @T.prim_func
        def k(A: T.Tensor((N,), "float32")):
            T.sync_grid()
            with T.Kernel(BLOCKS, threads=THREADS) as bx:
                A[bx] = 1.0


def test_sync_warp_mask_must_be_32_bits():
    with pytest.raises(CompileError, match="32-bit"):
        @T.prim_func
        def k(A: T.Tensor((N,), "float32")):
            with T.Kernel(BLOCKS, threads=THREADS) as bx:
                T.sync_warp(1 << 33)
                A[bx] = 1.0


# ------------------------------------------------------------------------------ placement errors


def _compile_error(kernel_body, target="cpu"):
    with pytest.raises(CompileError) as e:
        tilec.compile(kernel_body(), target=target)(np.zeros(N, np.float32)) if target == "cpu" else \
            tilec.compile(kernel_body(), target=target)
    return str(e.value)


def _in_parallel():
    # Not at the top level of the loop body (there it splits the loop: tests below).
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            for i in T.Parallel(THREADS):
                A[bx * THREADS + i] = 1.0
                if i < 4:
                    T.sync_grid()

    return k


def _under_block_condition():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            if bx < 2:
                T.sync_grid()
            A[bx] = 1.0

    return k


def _in_block_dependent_loop():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tiles = bx + 1
            for w in T.serial(tiles):
                T.sync_grid()
            A[bx] = 1.0

    return k


def _in_pipelined_loop():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            for w in T.Pipelined(4, num_stages=2):
                T.sync_grid()
            A[bx] = 1.0

    return k


def _in_warp_group_role():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=256) as bx:
            with T.ws(0):
                T.sync_grid()
            A[bx] = 1.0

    return k


@pytest.mark.parametrize("target", ["cpu", "sm_80"])
def test_placement_errors_name_the_line_and_say_what_to_do(target):
    e = _compile_error(_in_parallel, target)
    assert "test_sync_grid.py:" in e and "T.sync_grid() inside a T.Parallel loop" in e, e
    assert "split the T.Parallel loop in two" in e, e
    e = _compile_error(_under_block_condition, target)
    assert "inside a branch whose condition depends on the block or thread index" in e, e
    assert "call T.sync_grid() unconditionally" in e, e
    e = _compile_error(_in_block_dependent_loop, target)
    assert "inside a loop whose bounds depend on the block or thread index" in e, e
    e = _compile_error(_in_pipelined_loop, target)
    assert "inside a T.Pipelined loop" in e and "write the loop as T.serial" in e, e
    if target != "cpu":  # T.ws is thread-level: the CPU target refuses it anyway
        e = _compile_error(_in_warp_group_role, target)
        assert "inside a T.ws warp-group role" in e, e


def test_uniform_loops_and_conditions_may_hold_the_barrier():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), Steps: T.Tensor((1,), "int32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            for w in T.serial(Steps[0]):  # a global the kernel never writes: the same everywhere
                if w > 0:
                    T.sync_grid()
                for i in T.Parallel(THREADS):
                    A[bx * THREADS + i] = A[bx * THREADS + i] + A[((bx + 1) % BLOCKS) * THREADS + i] * 0 + 1

    a = np.zeros(N, np.float32)
    tilec.compile(k, target="cpu")(a, np.array([3], np.int32))
    np.testing.assert_array_equal(a, np.full(N, 3, np.float32))


# ------------------------------------------------------------------------------ CPU target


def test_cpu_phase_two_reads_what_other_blocks_wrote_in_phase_one():
    a, b = np.full(N, -1, np.float32), np.zeros(N, np.float32)
    tilec.compile(_two_phase(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, _two_phase_ref())
    # Without the barrier's meaning (blocks one after another), block 0 reads A before block 3
    # wrote it: the reference differs.
    a, b = np.full(N, -1, np.float32), np.zeros(N, np.float32)
    tilec.compile(_two_phase(with_barrier=False), target="cpu")(a, b)
    assert not np.array_equal(b, _two_phase_ref())


# ------------------------------------------------------------------------------ CUDA


@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_cuda_grid_barrier_and_cooperative_plan(target):
    kernel = tilec.compile(_two_phase(), target=target)
    src, ptx = kernel.get_kernel_source(), kernel.get_ptx()
    assert '#include "tilec/grid_sync.cuh"' in src and "tl::sync_grid();" in src, src
    assert "%envreg" in ptx and "atom.add.release.gpu" in ptx, "the cooperative-groups barrier"
    assert "\ncooperative 1\n" in kernel.launch_plan_text
    assert "cooperative" not in tilec.compile(_two_phase(with_barrier=False), target=target).launch_plan_text


@needs_nvrtc
def test_sync_warp_is_syncwarp():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            T.sync_warp()
            T.sync_warp(0x0000FFFF)
            A[bx] = 1.0

    src = tilec.compile(k, target="sm_80").get_kernel_source()
    assert "__syncwarp();" in src and "__syncwarp(65535u)" in src.replace("(uint)", ""), src
    a = np.zeros(N, np.float32)
    tilec.compile(k, target="cpu")(a)  # no-ops on the CPU target
    assert a[:BLOCKS].tolist() == [1.0] * BLOCKS


def _gemm_then_grid_sync(with_barrier):
    M = Nn = K = 256

    @T.prim_func
    def g(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, Nn), "float16"), C: T.Tensor((M, Nn), "float32"),
          D: T.Tensor((M, Nn), "float32")):
        with T.Kernel(T.ceildiv(Nn, 128), T.ceildiv(M, 128), threads=256) as (bx, by):
            As = T.alloc_shared((128, 64), "float16")
            Bs = T.alloc_shared((64, 128), "float16")
            Cl = T.alloc_fragment((128, 128), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                T.copy(A[by * 128, ko * 64], As)
                T.copy(B[ko * 64, bx * 128], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * 128, bx * 128])
            if with_barrier:
                T.sync_grid()
            for i, j in T.Parallel(128, 128):  # the transposed tile: another block's result
                D[by * 128 + i, bx * 128 + j] = C[bx * 128 + j, by * 128 + i]

    return g


@needs_nvrtc
def test_no_warp_specialization_or_persistent_grid_for_a_grid_sync_kernel():
    plain = tilec.compile(_gemm_then_grid_sync(False), target="sm_90a")
    assert "\npersistent " in plain.launch_plan_text and "mbarrier" in plain.get_kernel_source()
    synced = tilec.compile(_gemm_then_grid_sync(True), target="sm_90a")
    text, src = synced.launch_plan_text, synced.get_kernel_source()
    assert "\npersistent " not in text and "\ncooperative 1\n" in text, text
    assert "block 256 1 1" in text, text  # no producer warpgroup added
    assert "tl::sync_grid();" in src and "setmaxnreg" not in src, src
    # And the meaning on the CPU target: D is C transposed, across blocks.
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c, d = np.zeros((256, 256), np.float32), np.zeros((256, 256), np.float32)
    tilec.compile(_gemm_then_grid_sync(True), target="cpu")(a, b, c, d)
    np.testing.assert_allclose(d, c.T)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------------------------ upstream's example


def _load_upstream_example(monkeypatch, sms):
    """The example's `flashattn` as written, without torch / einops (only its reference uses them):
    those import lines become `pass`, so line numbers (and so error locations) stay the file's."""
    import tilec.compat  # noqa: F401  (`import tilelang` resolves to tilec)
    import tilec.carver.arch.driver as driver

    monkeypatch.setattr(driver, "get_num_sms", lambda device_id=0: sms)
    with open(UPSTREAM_EXAMPLE) as f:
        lines = f.read().split("\n")
    lines = ["pass" if ln.startswith(("import torch", "from einops")) else ln for ln in lines]
    namespace = {"__name__": "upstream_mla_decode_persistent"}
    exec(compile("\n".join(lines), UPSTREAM_EXAMPLE, "exec"), namespace)
    return namespace["flashattn"]


def _mla_reference(q, q_pe, kv, k_pe):
    """softmax([q, q_pe] . [kv, k_pe]^T / sqrt(dim + pe_dim)) . kv, one KV head."""
    query = np.concatenate([q, q_pe], axis=-1).astype(np.float64)          # b h d'
    key = np.concatenate([kv[:, :, 0], k_pe[:, :, 0]], axis=-1).astype(np.float64)  # b s d'
    scores = np.einsum("bhd,bsd->bhs", query, key) / np.sqrt(query.shape[-1])
    scores -= scores.max(-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhs,bsd->bhd", p, kv[:, :, 0].astype(np.float64))


@pytest.mark.skipif(not os.path.exists(UPSTREAM_EXAMPLE), reason="no upstream snapshot at ../shared/upstream")
def test_upstream_persistent_mla_decode_runs_on_the_cpu_target(monkeypatch):
    # 3 "SMs": phase 1 takes two waves of split tiles, phase 2 eleven waves of (batch, head)
    # combines that read other blocks' partials.
    flashattn = _load_upstream_example(monkeypatch, sms=3)
    batch, heads, seqlen, dim, pe_dim = 2, 16, 128, 32, 16
    func = flashattn.get_tir(batch, heads, 1, seqlen, dim, pe_dim, 32, 16, 2)
    kernel = tilec.compile(func, out_idx=[6], target="cpu")
    rng = np.random.default_rng(9)
    q = rng.standard_normal((batch, heads, dim)).astype(np.float16)
    q_pe = rng.standard_normal((batch, heads, pe_dim)).astype(np.float16)
    kv = rng.standard_normal((batch, seqlen, 1, dim)).astype(np.float16)
    k_pe = rng.standard_normal((batch, seqlen, 1, pe_dim)).astype(np.float16)
    glse = np.zeros((batch, heads, 2), np.float16)
    partial = np.zeros((batch, heads, 2, dim), np.float16)
    out = kernel(q, q_pe, kv, k_pe, glse, partial)
    np.testing.assert_allclose(out.astype(np.float64), _mla_reference(q, q_pe, kv, k_pe), rtol=2e-2, atol=2e-2)


@needs_nvrtc
@pytest.mark.skipif(not os.path.exists(UPSTREAM_EXAMPLE), reason="no upstream snapshot at ../shared/upstream")
def test_upstream_persistent_mla_decode_compiles_for_sm90a_as_a_cooperative_kernel(monkeypatch):
    flashattn = _load_upstream_example(monkeypatch, sms=132)
    # The example's own configuration (its main()).
    kernel = tilec.compile(flashattn.get_tir(128, 128, 1, 8192, 512, 64, 64, 64, 2), out_idx=[6], target="sm_90a")
    text = kernel.launch_plan_text
    assert "\ncooperative 1\n" in text and "\npersistent " not in text, text
    assert "\ngrid 132\n" in text, text
    assert "tl::sync_grid();" in kernel.get_kernel_source()


# ------------------------------------------------------------------------------ inside T.Parallel


def _upstream_cooperative_test(n=1024, block=64):
    """TileLang's own test of the grid barrier (testing/python/language/test_tilelang_language_
    cooperative.py): the second T.sync_grid() sits inside a T.Parallel body, between a read of
    another block's elements and the write of this block's."""

    @T.prim_func
    def kernel(A: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            A_local = T.alloc_fragment((block,), dtype=T.float32)
            n_idx = bx * block
            for i in T.Parallel(block):
                A[n_idx + i] = n_idx + i
            T.sync_grid()
            for i in T.Parallel(block):
                A_local[i] = A[n - n_idx - i - 1]
                T.sync_grid()
                A[n_idx + i] = A[n_idx + i] + A_local[i]

    return kernel


def test_a_barrier_in_a_parallel_body_splits_the_loop():
    a = np.random.default_rng(3).random(1024).astype(np.float32)
    tilec.compile(_upstream_cooperative_test(), target="cpu")(a)
    # Every element: (n_idx + i) + (n - 1 - n_idx - i): the read happened before any block wrote.
    np.testing.assert_array_equal(a, np.full(1024, 1023, np.float32))


@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_the_split_loop_compiles_with_both_barriers(target):
    k = tilec.compile(_upstream_cooperative_test(), target=target)
    assert k.get_kernel_source().count("tl::sync_grid();") == 2
    assert "\ncooperative 1\n" in k.launch_plan_text


def test_split_keeps_pure_lets_and_nested_parallel_loops():
    @T.prim_func
    def k(A: T.Tensor((4, 256), "float32")):
        with T.Kernel(4, threads=128) as bx:
            for r, c in T.Parallel(2, 64):
                j = r * 64 + c
                A[bx, j] = bx * 1000 + j
                T.sync_grid()
                A[bx, 128 + j] = A[3 - bx, j]

    a = np.zeros((4, 256), np.float32)
    tilec.compile(k, target="cpu")(a)
    want = np.zeros((4, 256), np.float32)
    for b in range(4):
        want[b, :128] = b * 1000 + np.arange(128)
    for b in range(4):
        want[b, 128:] = want[3 - b, :128]
    np.testing.assert_array_equal(a, want)


def test_a_let_that_reads_memory_is_not_split():
    @T.prim_func
    def k(A: T.Tensor((N,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            for i in T.Parallel(THREADS):
                x = A[bx * THREADS + i]  # its value would differ on the other side of the barrier
                A[bx * THREADS + i] = x + 1.0
                T.sync_grid()
                A[bx * THREADS + i] = x

    with pytest.raises(CompileError, match="inside a T.Parallel loop"):
        tilec.compile(k, target="cpu")(np.zeros(N, np.float32))
