"""T.alloc_reducer / T.finalize_reducer (language/reducer.py, frontend/reducers.py): a T.Parallel loop
that accumulates into a reducer is folded with T.reduce_* after the loop. Run on the CPU target
against numpy; the rewritten IR and the sm_90a compile checked."""
import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError

M, N, BM, BN = 256, 512, 64, 128
rng = np.random.default_rng(5)


def _gemv(op, reduce_rows=True):
    @T.prim_func
    def g(a: T.Tensor((M, N), "float32"), x: T.Tensor((N,), "float32"), o: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bm:
            red = T.alloc_reducer(BM, "float32", op=op, replication="all")
            if op == "sum":
                T.clear(red)
            else:
                T.fill(red, -T.infinity("float32") if op == "max" else T.infinity("float32"))
            for kn in T.Pipelined(T.ceildiv(N, BN), num_stages=2):
                a_s = T.alloc_shared((BM, BN), "float32")
                T.copy(a[bm * BM, kn * BN], a_s)
                x_f = T.alloc_fragment(BN, "float32")
                T.copy(x[kn * BN], x_f)
                for i, j in T.Parallel(BM, BN):
                    if op == "sum":
                        red[i] += a_s[i, j] * x_f[j]
                    elif op == "max":
                        red[i] = T.max(red[i], a_s[i, j] * x_f[j])
                    else:
                        red[i] = T.min(red[i], a_s[i, j] * x_f[j])
            T.finalize_reducer(red)
            T.copy(red, o[bm * BM])

    return g


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reducer_matches_numpy(op):
    a = rng.standard_normal((M, N)).astype(np.float32)
    x = rng.standard_normal(N).astype(np.float32)
    o = np.full(M, np.nan, np.float32)
    tilec.compile(_gemv(op), target="cpu")(a, x, o)
    ref = {"sum": np.sum, "max": np.max, "min": np.min}[op](a * x, axis=1)
    np.testing.assert_allclose(o, ref, rtol=1e-4, atol=1e-4)


def test_the_loop_accumulates_into_a_partial_tile_folded_after_it():
    text = _gemv("sum").script()
    assert "red_part = T.alloc_fragment((64, 128), \"float32\")" in text, text
    assert "red_part[i, j] = red_part[i, j] + a_s[i, j] * x_f[j]" in text
    assert "T.reduce_sum(red_part, red, dim=1, clear=False)" in text
    k = tilec.compile(_gemv("sum"), target="sm_90a")
    assert k.ptxas_info["spill_stores_bytes"] == 0 and "shfl" in k.get_kernel_source()


def test_reducer_errors():
    with pytest.raises(CompileError, match="op 'prod' is not supported"):
        @T.prim_func
        def bad_op(o: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                red = T.alloc_reducer(8, "float32", op="prod")

    with pytest.raises(CompileError, match=r"reducer 'red' indexed with j \+ 1"):
        @T.prim_func
        def bad_index(a: T.Tensor((8, 8), "float32"), o: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                red = T.alloc_reducer(8, "float32")
                T.clear(red)
                for i, j in T.Parallel(8, 8):
                    red[j + 1] += a[i, j]
                T.copy(red, o[0])


def test_a_store_that_is_not_the_reducers_update_is_an_error():
    with pytest.raises(CompileError, match="a store into the sum reducer 'red' that is not its update"):
        @T.prim_func
        def wrong_op(a: T.Tensor((8, 8), "float32"), o: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                red = T.alloc_reducer(8, "float32")
                T.clear(red)
                for i, j in T.Parallel(8, 8):
                    red[i] = T.max(red[i], a[i, j])
                T.copy(red, o[0])

    with pytest.raises(CompileError, match="write red\\[...\\] = T.max\\(red\\[...\\], value\\)"):
        @T.prim_func
        def plain_store(a: T.Tensor((8, 8), "float32"), o: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                red = T.alloc_reducer(8, "float32", op="max")
                T.fill(red, -T.infinity("float32"))
                for i, j in T.Parallel(8, 8):
                    red[i] = a[i, j]
                T.copy(red, o[0])


def test_a_one_element_reducer_over_a_one_dimensional_loop():
    @T.prim_func
    def total(x: T.Tensor((300,), "float32"), o: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128) as b:
            red = T.alloc_reducer((1,), "float32")
            T.clear(red)
            for k in T.serial(3):
                for j in T.Parallel(100):
                    red[0] += x[k * 100 + j]
            T.finalize_reducer(red)
            T.copy(red, o)

    x = rng.standard_normal(300).astype(np.float32)
    o = np.zeros(1, np.float32)
    tilec.compile(total, target="cpu")(x, o)
    np.testing.assert_allclose(o[0], x.sum(), rtol=1e-5, atol=1e-5)
    assert "T.reduce_sum(red_part, red, dim=0, clear=False)" in total.script()
    tilec.compile(total, target="sm_90a")


def test_more_reducer_errors():
    with pytest.raises(CompileError, match="T.alloc_reducer: replication 'some'"):
        @T.prim_func
        def bad_replication(o: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                red = T.alloc_reducer(8, "float32", replication="some")

    with pytest.raises(CompileError, match="T.finalize_reducer takes a buffer made by T.alloc_reducer"):
        @T.prim_func
        def not_a_reducer(o: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                frag = T.alloc_fragment((8,), "float32")
                T.finalize_reducer(frag)

    with pytest.raises(CompileError, match=r"T.alloc_reducer\(op='max'\) on int32: tilec supports max / min "
                                           "reducers of floating-point types"):
        @T.prim_func
        def int_max(a: T.Tensor((8, 8), "int32"), o: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=32) as bx:
                red = T.alloc_reducer(8, "int32", op="max")
                for i, j in T.Parallel(8, 8):
                    red[i] = T.max(red[i], a[i, j])
                T.copy(red, o[0])


# ---- TileLang's reducer v2: T.reducer_init / T.reducer_update / T.finalize_reducer(acc, dst) ----
# (upstream testing/python/language/test_tilelang_language_reducer_v2.py's programs)

def _v2_scalar_sum(seed=None, extent=8, threads=128):
    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            if seed is None:
                T.reducer_init(acc)
            else:
                T.reducer_init(acc, seed)
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    return kernel


def _v2_rows(op, Mr=32, K=512, BK=128):
    @T.prim_func
    def kernel(A: T.Tensor((Mr, K), T.float32), B: T.Tensor((Mr,), T.float32)):
        with T.Kernel(1, threads=128):
            acc = T.alloc_reducer((Mr,), T.float32, op=op)
            T.reducer_init(acc)
            a_frag = T.alloc_fragment((Mr, BK), T.float32)
            for kt in T.serial(T.ceildiv(K, BK)):
                T.copy(A[0, kt * BK], a_frag)
                for i, k in T.Parallel(Mr, BK):
                    if k >= 0:  # the update may sit under a condition
                        T.reducer_update(acc[i], a_frag[i, k])
            result = T.alloc_fragment((Mr,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    return kernel


@pytest.mark.parametrize("seed, want", [(None, 36.0), (100.0, 136.0)])
def test_v2_sum_counts_each_contribution_and_the_seed_once(seed, want):
    # upstream issue 2408: 128 threads summing 8 elements give 36, not 576; a seed is added once
    a = np.arange(1, 9, dtype=np.float32)
    b = np.full(1, np.nan, np.float32)
    tilec.compile(_v2_scalar_sum(seed), target="cpu")(a, b)
    assert b[0] == want
    assert "T.reduce_sum" in _v2_scalar_sum(seed).script()


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_v2_updates_across_serial_tiles(op):
    x = rng.standard_normal((32, 512)).astype(np.float32)
    b = np.full(32, np.nan, np.float32)
    tilec.compile(_v2_rows(op), target="cpu")(x, b)
    np.testing.assert_allclose(b, getattr(np, op)(x, axis=1), rtol=1e-5, atol=1e-5)
    tilec.compile(_v2_rows(op), target="sm_90a")


def test_v2_update_outside_a_parallel_loop_is_an_error():
    with pytest.raises(CompileError, match="T.reducer_update is used inside a T.Parallel loop"):
        @T.prim_func
        def k(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), T.float32, op="sum")
                T.reducer_init(acc)
                T.reducer_update(acc[0], A[0])


def test_v2_update_of_a_plain_fragment_is_an_error():
    with pytest.raises(CompileError, match="must be an element of a T.alloc_reducer buffer"):
        @T.prim_func
        def k(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), T.float32, op="sum")
                f = T.alloc_fragment((1,), T.float32)
                T.reducer_init(acc)
                for i in T.Parallel(8):
                    T.reducer_update(f[0], A[i])


def test_v2_misuses_are_errors():
    with pytest.raises(CompileError, match="T.reducer_init takes a buffer made by T.alloc_reducer"):
        @T.prim_func
        def not_a_reducer(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32):
                f = T.alloc_fragment((1,), T.float32)
                T.reducer_init(f)
    with pytest.raises(CompileError, match="T.finalize_reducer: batch must be >= 1, got 0"):
        @T.prim_func
        def bad_batch(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), T.float32, op="sum")
                T.reducer_init(acc)
                T.finalize_reducer(acc, batch=0)
    with pytest.raises(CompileError, match="T.reducer_update takes the reducer element and the value"):
        @T.prim_func
        def three_args(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), T.float32, op="sum")
                T.reducer_init(acc)
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], A[i], A[i])
