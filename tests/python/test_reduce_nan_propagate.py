"""T.reduce_max / reduce_min / reduce_absmax(..., nan_propagate=True) (TileLang's option): a NaN
element makes its row's result NaN; without it NaNs are ignored (fmaxf semantics) on every
target. Also TileLang's `batch=` hint (checked, no effect on results) and the errors."""
import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError

M, N = 64, 128


def prog(op, dtype="float32", threads=128, dim=1, **kw):
    out_shape = (M,) if dim == 1 else (N,)

    @T.prim_func
    def k(A: T.Tensor((M, N), dtype), B: T.Tensor(out_shape, dtype)):
        with T.Kernel(1, threads=threads) as _:
            a = T.alloc_fragment((M, N), dtype)
            b = T.alloc_fragment(out_shape, dtype)
            T.copy(A, a)
            getattr(T, op)(a, b, dim=dim, **kw)
            T.copy(b, B)

    return k


def with_nans(dtype=np.float32):
    a = np.random.default_rng(0).standard_normal((M, N)).astype(dtype)
    a[3, 7] = np.nan
    a[10, 0] = np.nan
    a[10, N - 1] = np.nan
    return a


REF = {"reduce_max": np.max, "reduce_min": np.min, "reduce_absmax": lambda x, axis: np.max(np.abs(x), axis=axis)}
IGNORING = {"reduce_max": np.nanmax, "reduce_min": np.nanmin,
            "reduce_absmax": lambda x, axis: np.nanmax(np.abs(x), axis=axis)}


@pytest.mark.parametrize("op", sorted(REF))
@pytest.mark.parametrize("dim", [0, 1])
def test_cpu_target_propagates_only_when_asked(op, dim):
    a = with_nans()
    for flag, ref in ((True, REF[op]), (False, IGNORING[op])):
        k = tilec.compile(prog(op, dim=dim, nan_propagate=flag), target="cpu")
        b = np.zeros(M if dim == 1 else N, np.float32)
        k(a, b)
        np.testing.assert_array_equal(np.isnan(b), np.isnan(ref(a, axis=dim)))
        np.testing.assert_allclose(b, ref(a, axis=dim), equal_nan=True)


def test_clear_false_combines_with_nan_propagation():
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_fragment((M, N), "float32")
            b = T.alloc_fragment((M,), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.reduce_max(a, b, dim=1, clear=False, nan_propagate=True)
            T.copy(b, B)

    a = np.random.default_rng(1).standard_normal((M, N)).astype(np.float32)
    b = np.zeros(M, np.float32)
    b[5] = np.nan  # the old value is NaN: the result is NaN too
    want = np.maximum(np.max(a, axis=1), b)
    tilec.compile(k, target="cpu")(a, b)
    assert np.isnan(b[5]) and np.isnan(b).sum() == 1
    np.testing.assert_allclose(b, want, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_cuda_uses_the_nan_propagating_combine(dtype, target):
    src = tilec.compile(prog("reduce_max", dtype=dtype, nan_propagate=True), target=target).get_kernel_source()
    assert "tl::max_nan(" in src
    plain = tilec.compile(prog("reduce_max", dtype=dtype), target=target).get_kernel_source()
    assert "max_nan" not in plain
    src = tilec.compile(prog("reduce_min", dtype=dtype, nan_propagate=True), target=target).get_kernel_source()
    assert "tl::min_nan(" in src


def test_batch_hint_and_positional_form():
    a = with_nans()
    for kw in ({"batch": 4, "nan_propagate": True}, {"annotations": {"enable_fadd2": False}, "nan_propagate": True}):
        b = np.zeros(M, np.float32)
        tilec.compile(prog("reduce_max", **kw), target="cpu")(a, b)
        np.testing.assert_allclose(b, np.max(a, axis=1), equal_nan=True)

    @T.prim_func
    def positional(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as _:
            x = T.alloc_fragment((M, N), "float32")
            y = T.alloc_fragment((M,), "float32")
            T.copy(A, x)
            T.reduce_max(x, y, 1, True, 2, True)  # dim, clear, batch, nan_propagate
            T.copy(y, B)

    b = np.zeros(M, np.float32)
    tilec.compile(positional, target="cpu")(a, b)
    np.testing.assert_allclose(b, np.max(a, axis=1), equal_nan=True)
    b = np.zeros(M, np.float32)

    @T.prim_func
    def generic(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as _:
            x = T.alloc_fragment((M, N), "float32")
            y = T.alloc_fragment((M,), "float32")
            T.copy(A, x)
            T.reduce(x, y, "max", dim=1, nan_propagate=True)
            T.copy(y, B)

    tilec.compile(generic, target="cpu")(a, b)
    np.testing.assert_allclose(b, np.max(a, axis=1), equal_nan=True)


def test_errors():
    with pytest.raises(CompileError, match="T.reduce_sum takes no nan_propagate"):
        tilec.compile(prog("reduce_sum", nan_propagate=True), target="cpu")
    with pytest.raises(CompileError, match="batch must be a positive integer"):
        tilec.compile(prog("reduce_max", batch=0), target="cpu")
    with pytest.raises(CompileError, match="nan_propagate=True\\) into 'b' of type float8_e4m3 is not supported"):
        tilec.compile(prog("reduce_max", dtype="float8_e4m3", nan_propagate=True), target="sm_90a")


def test_generic_reduce_refuses_nan_propagate_on_a_sum():
    with pytest.raises(CompileError, match="T.reduce: reduce_type 'sum' takes no nan_propagate"):
        @T.prim_func
        def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
            with T.Kernel(1, threads=128) as _:
                x = T.alloc_fragment((M, N), "float32")
                y = T.alloc_fragment((M,), "float32")
                T.copy(A, x)
                T.reduce(x, y, "sum", dim=1, nan_propagate=True)
                T.copy(y, B)
