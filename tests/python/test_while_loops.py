"""`while cond:` in a kernel body (issue 9): a loop of unknown trip count, the condition evaluated
before every iteration. Run on the CPU target against Python, and compiled for sm_90a / sm_80
(the CUDA text and, on sm_90a, the barriers and the pipeline inside)."""
import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError

rng = np.random.default_rng(11)


def _per_thread_sum(N):
    """Each thread sums 0..A[t]-1 with its own trip count (a divergent condition, no barriers)."""

    @T.prim_func
    def tri(A: T.Tensor((N,), T.int32), B: T.Tensor((N,), T.int32)):
        with T.Kernel(1, threads=N) as bx:
            tx = T.get_thread_binding()
            i = T.alloc_var(T.int32)
            acc = T.alloc_var(T.int32)
            i = 0
            acc = 0
            while i < A[tx]:
                acc = acc + i
                i = i + 1
            B[tx] = acc

    return tri


def _per_block_sum(N):
    """Each block sums 0..A[b]-1: a trip count read from memory, the same for the block's threads."""

    @T.prim_func
    def tri(A: T.Tensor((N,), T.int32), B: T.Tensor((N,), T.int32)):
        with T.Kernel(N, threads=32) as bx:
            i = T.alloc_var(T.int32)
            acc = T.alloc_var(T.int32)
            i = 0
            acc = 0
            while i < A[bx]:
                acc = acc + i
                i = i + 1
            B[bx] = acc

    return tri


def test_trip_counts_read_from_memory_match_python():
    N = 64
    a = rng.integers(0, 20, N).astype(np.int32)
    a[3] = 0  # a loop that runs no iteration
    b = np.full(N, -7, np.int32)
    tilec.compile(_per_block_sum(N), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a * (a - 1) // 2)


def test_cuda_text_is_a_while_loop():
    for func in (_per_block_sum(64), _per_thread_sum(64)):
        for target in ("sm_90a", "sm_80"):
            src = tilec.compile(func, target=target).get_kernel_source()
            assert "while (" in src, src


def test_printed_ir_shows_the_loop():
    text = _per_thread_sum(8).script()
    assert "while i[0] < A[tx]:" in text, text


def _stream_chunks(N, CH):
    """A uniform loop over chunks of work handed out in a shared counter, with barriers inside
    (the stream-K shape: each iteration takes a range, works on it in shared memory)."""

    @T.prim_func
    def chunks(A: T.Tensor((N,), T.float32), Lens: T.Tensor((N // CH,), T.int32), Out: T.Tensor((N // CH,), T.float32)):
        with T.Kernel(1, threads=CH) as bx:
            s = T.alloc_shared((CH,), T.float32)
            start = T.alloc_var(T.int32)
            c = T.alloc_var(T.int32)
            total = T.alloc_var(T.float32)
            start = 0
            c = 0
            while start < N:
                for i in T.Parallel(CH):
                    s[i] = T.if_then_else(i < Lens[c], A[start + i], T.float32(0))
                total = 0
                for j in T.serial(CH):
                    total = total + s[j]
                Out[c] = total
                start = start + CH
                c = c + 1

    return chunks


def test_uniform_loop_with_shared_memory_gets_its_barriers():
    N, CH = 256, 32
    a = rng.standard_normal(N).astype(np.float32)
    lens = rng.integers(1, CH + 1, N // CH).astype(np.int32)
    out = np.full(N // CH, np.nan, np.float32)
    tilec.compile(_stream_chunks(N, CH), target="cpu")(a, lens, out)
    ref = [a[k * CH:k * CH + lens[k]].sum() for k in range(N // CH)]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    src = tilec.compile(_stream_chunks(N, CH), target="sm_90a").get_kernel_source()
    body = src[src.index("while ("):]
    # every thread reads all of s after the T.Parallel writes, and the next iteration's writes
    # wait for those reads: two barriers in the loop
    assert body.count("__syncthreads()") == 2, body


def test_break_and_continue_in_a_while_loop():
    N = 32

    @T.prim_func
    def walk(A: T.Tensor((N, 16), T.int32), First: T.Tensor((N,), T.int32), Odd: T.Tensor((N,), T.int32)):
        with T.Kernel(N, threads=32) as tx:
            j = T.alloc_var(T.int32)
            odd = T.alloc_var(T.int32)
            j = 0
            odd = 0
            First[tx] = -1
            while j < 16:
                j = j + 1
                if A[tx, j - 1] % 2 == 0:
                    continue
                odd = odd + 1
                if A[tx, j - 1] > 90:
                    First[tx] = j - 1
                    break
            Odd[tx] = odd

    a = rng.integers(0, 100, (N, 16)).astype(np.int32)
    first = np.zeros(N, np.int32)
    odd = np.zeros(N, np.int32)
    tilec.compile(walk, target="cpu")(a, first, odd)
    for t in range(N):
        f, o = -1, 0
        for j in range(16):
            if a[t, j] % 2 == 0:
                continue
            o += 1
            if a[t, j] > 90:
                f = j
                break
        assert (first[t], odd[t]) == (f, o), t


def test_while_over_python_values_unrolls():
    @T.prim_func
    def unrolled(A: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=1) as bx:
            k = 0
            while k < 4:
                A[k] = k * 10
                k += 1

    a = np.full(8, -1, np.int32)
    tilec.compile(unrolled, target="cpu")(a)
    np.testing.assert_array_equal(a, [0, 10, 20, 30, -1, -1, -1, -1])
    assert "while" not in unrolled.script()


def test_errors_are_clear():
    with pytest.raises(CompileError, match="while-condition has type int32, expected bool"):
        @T.prim_func
        def not_bool(A: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=1) as bx:
                while A[0]:
                    A[0] = A[0] - 1

    with pytest.raises(CompileError, match="`while ... else` is not supported"):
        @T.prim_func
        def with_else(A: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=1) as bx:
                while A[0] > 0:
                    A[0] = A[0] - 1
                else:
                    A[1] = 1

    with pytest.raises(CompileError, match="ran 4096 times while parsing"):
        @T.prim_func
        def forever(A: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=1) as bx:
                while True:
                    A[0] = 1

    with pytest.raises(CompileError, match="a while loop inside a T.Parallel loop"):
        @T.prim_func
        def in_parallel(A: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=8) as bx:
                for i in T.Parallel(8):
                    while A[i] > 0:
                        A[i] = A[i] - 1

        tilec.compile(in_parallel, target="cpu")


def _stream_k(M, N, K, bm, bn, bk, stages, threads, grid):
    """Stream-K GEMM: each block walks its share of the (tile, k-step) iterations with a while loop,
    a T.Pipelined loop per tile piece inside, partial tiles summed with atomics."""
    iters_per_tile = K // bk
    total = (M // bm) * (N // bn) * iters_per_tile
    per = (total + grid - 1) // grid

    @T.prim_func
    def sk(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(grid, threads=threads) as pid:
            As = T.alloc_shared((bm, bk), T.float16)
            Bs = T.alloc_shared((bk, bn), T.float16)
            acc = T.alloc_fragment((bm, bn), T.float32)
            it = T.alloc_var(T.int32)
            end = T.alloc_var(T.int32)
            it = pid * per
            last = T.min((pid + 1) * per, total)
            while it < last:
                end = T.min(it + (iters_per_tile - it % iters_per_tile), last)
                tile = it // iters_per_tile
                tm = tile // (N // bn)
                tn = tile % (N // bn)
                T.clear(acc)
                for k in T.Pipelined(end - it, num_stages=stages):
                    T.copy(A[tm * bm, (k + it % iters_per_tile) * bk], As)
                    T.copy(B[(k + it % iters_per_tile) * bk, tn * bn], Bs)
                    T.gemm(As, Bs, acc)
                for i, j in T.Parallel(bm, bn):
                    T.atomic_add(C[tm * bm + i, tn * bn + j], acc[i, j])
                it = end  # another T.alloc_var: its value is stored

    return sk


def test_stream_k_gemm_with_a_pipelined_loop_inside():
    f = _stream_k(64, 64, 64, 32, 32, 16, 2, 128, 3)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    tilec.compile(f, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    assert "it[0] = end[0]" in f.script()
    big = _stream_k(256, 256, 256, 128, 128, 32, 3, 128, 3)
    k = tilec.compile(big, target="sm_90a")
    assert "not inside another loop or a condition" in k.explain(show=False)  # software pipeline, not WS
    src = k.get_kernel_source()
    assert "while (" in src and "cp_async" in src and "wgmma" in src, src
    assert "while (" in tilec.compile(big, target="sm_80").get_kernel_source()


def test_a_barrier_needed_under_a_divergent_condition_is_an_error():
    @T.prim_func
    def bad(A: T.Tensor((64,), T.float32), Out: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), T.float32)
            i = T.alloc_var(T.int32)
            i = 0
            while i < tx:
                s[tx] = A[i]
                Out[tx] = s[63 - tx]
                i = i + 1

    with pytest.raises(CompileError, match="its condition may differ between the threads"):
        tilec.compile(bad, target="sm_90a")


def test_more_while_errors_are_clear():
    with pytest.raises(CompileError, match="`break` in a `while` over Python values"):
        @T.prim_func
        def py_break(A: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=1) as bx:
                k = 0
                while k < 4:
                    A[k] = k
                    k += 1
                    break

    with pytest.raises(CompileError, match="was a Python value on entry and became a kernel value"):
        @T.prim_func
        def turns_ir(A: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=1) as bx:
                k = 0
                while k < 4:
                    k = A[0]

    @T.prim_func
    def in_branch(A: T.Tensor((64,), T.float32), Out: T.Tensor((64,), T.float32), N: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), T.float32)
            if tx < 32:
                while N[0] > 0:  # uniform (N is only read); compiled, never run
                    s[tx] = A[tx]
                    Out[tx] = s[31 - tx]

    with pytest.raises(CompileError, match="a while loop whose body needs __syncthreads, inside a branch that not "
                                           "every thread takes"):
        tilec.compile(in_branch, target="sm_90a")
