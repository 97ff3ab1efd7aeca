"""Upstream TileLang constructs of the corpus (issue 9, compat11). target="cpu" checks the
meaning against numpy; sm_90a checks that the kernel compiles.

- `break` / `continue` in T.serial / range / T.unroll loops (DeepSeek v3.2 top-k selector),
  lowered to per-thread flags (frontend/loop_exits.py)."""
import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec import CompileError

rng = np.random.default_rng(11)


# ----------------------------------------------------------------------- break / continue

def _first_above(N=16, R=8):
    """Per row: the index of the first element above the threshold (R when none), with a
    running sum of the elements before it; `continue` skips negative elements in the sum."""

    @T.prim_func
    def first_above(A: T.Tensor((N, R), T.float32), Th: T.Tensor((N,), T.float32),
                    Idx: T.Tensor((N,), T.int32), Sum: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            found = T.alloc_var(T.int32)
            total = T.alloc_var(T.float32)
            for row in T.serial(N):
                found = R
                total = 0.0
                for r in T.serial(R):
                    if A[row, r] > Th[row]:
                        found = r
                        break
                    if A[row, r] < 0:
                        continue
                    total = total + A[row, r]
                Idx[row] = found
                Sum[row] = total

    return first_above


def _first_above_ref(a, th):
    idx = np.full(a.shape[0], a.shape[1], np.int32)
    tot = np.zeros(a.shape[0], np.float64)
    for i in range(a.shape[0]):
        for r in range(a.shape[1]):
            if a[i, r] > th[i]:
                idx[i] = r
                break
            if a[i, r] < 0:
                continue
            tot[i] += a[i, r]
    return idx, tot


def test_break_and_continue_in_a_serial_loop_match_python():
    N, R = 16, 8
    kernel = tilec.compile(_first_above(N, R), target="cpu")
    a = rng.standard_normal((N, R)).astype(np.float32)
    th = (rng.standard_normal(N) + 1.0).astype(np.float32)
    th[0] = 100.0  # a row that never breaks
    idx = np.zeros(N, np.int32)
    tot = np.zeros(N, np.float32)
    kernel(a, th, idx, tot)
    ref_idx, ref_tot = _first_above_ref(a, th)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(tot, ref_tot, rtol=1e-5, atol=1e-5)
    src = tilec.compile(_first_above(N, R), target="sm_90a").get_kernel_source()
    assert "loop_broke" in src and "loop_skipped" in src, src


def test_break_in_a_uniform_loop_around_barriers():
    """The top-k shape: a loop of rounds with barriers, left when a shared count runs out."""
    N = 64

    @T.prim_func
    def rounds(Need: T.Tensor((1,), T.int32), Out: T.Tensor((N,), T.int32), Done: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=N) as bx:
            s_left = T.alloc_shared([1], T.int32)
            left = T.alloc_var(T.int32)
            acc = T.alloc_var(T.int32)
            acc = 0
            s_left[0] = Need[0]
            T.sync_threads()
            for rnd in range(4):
                left = s_left[0]
                if left <= 0:
                    break
                acc = acc + 1
                T.sync_threads()
                s_left[0] = left - 1
                T.sync_threads()
            for i in T.Parallel(N):
                Out[i] = acc
            Done[0] = s_left[0]

    kernel = tilec.compile(rounds, target="cpu")
    for need in (0, 2, 9):
        out = np.zeros(N, np.int32)
        done = np.zeros(1, np.int32)
        kernel(np.array([need], np.int32), out, done)
        np.testing.assert_array_equal(out, np.full(N, min(need, 4), np.int32))
        assert done[0] == max(need - 4, 0)
    tilec.compile(rounds, target="sm_90a")


def test_break_leaves_only_its_own_loop():
    @T.prim_func
    def nested(A: T.Tensor((4, 4), T.int32), Out: T.Tensor((4,), T.int32)):
        with T.Kernel(1, threads=32) as bx:
            count = T.alloc_var(T.int32)
            for t in T.serial(4):
                count = 0
                for i in T.serial(4):
                    for j in T.serial(4):
                        if A[i, j] == t:
                            break
                        count = count + 1
                Out[t] = count

    a = rng.integers(0, 5, size=(4, 4)).astype(np.int32)
    out = np.zeros(4, np.int32)
    tilec.compile(nested, target="cpu")(a, out)
    ref = []
    for t in range(4):
        c = 0
        for i in range(4):
            for j in range(4):
                if a[i, j] == t:
                    break
                c += 1
        ref.append(c)
    np.testing.assert_array_equal(out, ref)


def test_break_in_parallel_or_outside_a_loop_is_a_clear_error():
    with pytest.raises(CompileError, match="`break` in a T.Parallel loop"):
        @T.prim_func
        def par(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=8) as bx:
                for i in T.Parallel(8):
                    if A[i] > 0:
                        break
                    A[i] = 0.0

    with pytest.raises(CompileError, match="`continue` in a T.Pipelined loop"):
        @T.prim_func
        def piped(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=8) as bx:
                for k in T.Pipelined(4, num_stages=2):
                    if A[k] > 0:
                        continue
                    A[k] = 0.0

    with pytest.raises(CompileError, match="loop over a Python sequence"):
        @T.prim_func
        def listed(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=8) as bx:
                for k in [0, 1, 2]:
                    if A[k] > 0:
                        break


# ------------------------------------------------- a tensor dimension `seq_len * heads`

def _scaled_rows(H=4, D=8):
    n = T.dynamic("n")

    @T.prim_func
    def scaled(Q: T.Tensor((n * H, D), T.float32), W: T.Tensor((n, H), T.float32), O: T.Tensor((n,), T.float32)):
        with T.Kernel(n, threads=32) as bx:
            acc = T.alloc_var(T.float32)
            acc = 0.0
            for h in T.serial(H):
                for d in T.serial(D):
                    acc = acc + Q[bx * H + h, d] * W[bx, h]
            O[bx] = acc

    return scaled


def test_a_dimension_that_is_a_constant_times_a_symbol():
    """Upstream's DeepSeek v3.2 indexer declares IndexQ as [seq_len * heads, dim]: the launch
    plan binds seq_len from it (size / heads) and checks it against the other tensors."""
    H, D, N = 4, 8, 5
    q = rng.standard_normal((N * H, D)).astype(np.float32)
    w = rng.standard_normal((N, H)).astype(np.float32)
    o = np.zeros(N, np.float32)
    tilec.compile(_scaled_rows(H, D), target="cpu")(q, w, o)
    ref = (q.reshape(N, H, D).astype(np.float64).sum(-1) * w).sum(-1)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)

    from tilec.kernel import dim_value, param_shapes, split_dim

    kernel = tilec.compile(_scaled_rows(H, D), target="sm_90a")
    assert [p["shape"] for p in kernel.params()] == [["4*n", 8], ["n", 4], ["n"]]
    assert param_shapes(kernel, {"n": 3}) == [(12, 8), (3, 4), (3,)]
    assert split_dim("4*n") == (4, "n") and split_dim("n") == (1, "n") and dim_value("4*n", {"n": 2}) == 8

    with pytest.raises(CompileError, match="constant multiples of them"):
        m = T.dynamic("m")

        @T.prim_func
        def shifted(Q: T.Tensor((m + 1,), T.float32)):
            with T.Kernel(1, threads=32) as bx:
                Q[0] = 0.0

        tilec.compile(shifted, target="sm_90a")
