"""T.transpose(src, dst) (TileLang's tile-op transpose): dst[..., j, i] = src[..., i, j] as a
T.Parallel loop; shared and fragment tiles, regions, a leading batch dimension; the errors."""
import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError


def prog(M, N, dtype="float32", src_scope="shared", threads=128):
    @T.prim_func
    def k(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(1, threads=threads) as _:
            s = T.alloc_shared((M, N), dtype) if src_scope == "shared" else T.alloc_fragment((M, N), dtype)
            d = T.alloc_shared((N, M), dtype)
            T.copy(A, s)
            T.transpose(s, d)
            T.copy(d, B)
    return k


@pytest.mark.parametrize("M,N", [(64, 32), (128, 128), (16, 48)])
@pytest.mark.parametrize("src_scope", ["shared", "fragment"])
def test_cpu_target(M, N, src_scope):
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    b = np.full((N, M), np.nan, np.float32)
    tilec.compile(prog(M, N, src_scope=src_scope), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a.T)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_compiles_for_cuda(target):
    src = tilec.compile(prog(64, 64, "float16"), target=target).get_kernel_source()
    assert "__global__" in src


def test_regions_and_batch_dimension():
    @T.prim_func
    def k(A: T.Tensor((2, 32, 16), "float32"), B: T.Tensor((2, 16, 32), "float32")):
        with T.Kernel(1, threads=64) as _:
            s = T.alloc_shared((2, 32, 16), "float32")
            d = T.alloc_shared((2, 16, 32), "float32")
            T.copy(A, s)
            T.transpose(s, d)
            T.copy(d, B)

    a = np.random.default_rng(1).standard_normal((2, 32, 16)).astype(np.float32)
    b = np.zeros((2, 16, 32), np.float32)
    tilec.compile(k, target="cpu")(a, b)
    np.testing.assert_array_equal(b, a.transpose(0, 2, 1))

    @T.prim_func
    def part(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((64, 64), "float32")
            d = T.alloc_shared((64, 64), "float32")
            T.copy(A, s)
            T.fill(d, 0)
            T.transpose(s[0:32, 16:64], d[8:56, 0:32])  # (32, 48) into (48, 32)
            T.copy(d, B)

    a = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    b = np.full((64, 64), np.nan, np.float32)
    tilec.compile(part, target="cpu")(a, b)
    want = np.zeros((64, 64), np.float32)
    want[8:56, 0:32] = a[0:32, 16:64].T
    np.testing.assert_array_equal(b, want)


def test_errors():
    with pytest.raises(CompileError, match="the destination must be the source with its last two dimensions swapped"):
        @T.prim_func
        def wrong(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
            with T.Kernel(1, threads=128) as _:
                s = T.alloc_shared((64, 32), "float32")
                d = T.alloc_shared((64, 32), "float32")
                T.copy(A, s)
                T.transpose(s, d)
                T.copy(d, B)

    with pytest.raises(CompileError, match="2-D"):
        @T.prim_func
        def one_d(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64) as _:
                s = T.alloc_shared((64,), "float32")
                d = T.alloc_shared((64,), "float32")
                T.copy(A, s)
                T.transpose(s, d)


def test_argument_errors():
    with pytest.raises(CompileError, match="T.transpose: the source must be a buffer or a region of one, got int"):
        @T.prim_func
        def not_a_buffer(A: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=64) as _:
                d = T.alloc_shared((64, 64), "float32")
                T.transpose(3, d)

    with pytest.raises(CompileError, match="T.transpose needs constant extents \\(the source 'A'\\)"):
        n = T.dynamic("n")

        @T.prim_func
        def symbolic(A: T.Tensor((n, 64), "float32")):
            with T.Kernel(1, threads=64) as _:
                d = T.alloc_shared((64, 64), "float32")
                T.transpose(A, d)
