"""Pointer parameters: `a_ptr: T.ptr` (also `T.ptr(dtype)` and TIR's `T.handle`) is one address
passed by value — a CUDA tensor (its data pointer) or an integer — and `T.make_tensor(a_ptr, shape,
dtype)` / `T.match_buffer(a, shape, dtype)` views the memory there as a global tensor, written
before `with T.Kernel` as upstream TileLang's tests write it (declared at the top of the kernel),
or inside it. No GPU: NVRTC compiles, the argument checks run up to the driver."""
import pytest

import tilec
import tilec.language as T

np = pytest.importorskip("numpy")
needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _matmul_ptr(M=1024, N=1024, block_M=128, block_N=128, block_K=32, dtype=T.float16, accum_dtype=T.float32):
    """upstream testing/python/language/test_tilelang_language_ptr.py's program, with B declared
    (n, k) as its copies read it (upstream declares (k, n) and runs only square sizes)."""
    @T.prim_func
    def main(a_ptr: T.ptr, b_ptr: T.ptr, c_ptr: T.ptr, m: T.int32, n: T.int32, k: T.int32):
        A = T.make_tensor(a_ptr, (m, k), dtype)
        B = T.make_tensor(b_ptr, (n, k), dtype)
        C = T.make_tensor(c_ptr, (m, n), accum_dtype)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def _scale_tir_style(n=256):
    @T.prim_func
    def scale(x: T.handle, y: T.handle):
        X = T.match_buffer(x, (n,), "float32")
        Y = T.match_buffer(y, (n,), "float32")
        with T.Kernel(n // 128, threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = X[bx * 128 + i] * 2.0

    return scale


@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_pointer_parameters_become_typed_pointers(target):
    kernel = tilec.compile(_matmul_ptr(), target=target)
    src = kernel.get_kernel_source()
    assert "(void* a_ptr, void* b_ptr, void* c_ptr, int m, int n, int k)" in src, src
    assert "half* __restrict__ A = reinterpret_cast<half*>(a_ptr);" in src
    assert "float* __restrict__ C = reinterpret_cast<float*>(c_ptr);" in src
    assert "tma_load" not in src  # no tensor map exists for a raw address
    assert [(p["name"], p["dtype"]) for p in kernel.params()] == [
        ("a_ptr", "handle"), ("b_ptr", "handle"), ("c_ptr", "handle"), ("m", "int32"), ("n", "int32"), ("k", "int32")]


def test_tensors_made_before_the_kernel_are_declared_in_it():
    text = _matmul_ptr().script()
    assert "def main(a_ptr: T.handle," in text
    kernel_at = text.index("with T.Kernel")
    assert text.index('A = T.make_tensor(a_ptr, (m, k), "float16")') > kernel_at, text


@needs_nvrtc
def test_match_buffer_over_handles():
    kernel = tilec.compile(_scale_tir_style(), target="sm_90a")
    src = kernel.get_kernel_source()
    assert "(void* x, void* y)" in src and "float* __restrict__ X = reinterpret_cast<float*>(x);" in src


@needs_nvrtc
def test_a_pointer_argument_is_an_address_or_a_cuda_tensor():
    kernel = tilec.compile(_matmul_ptr(), target="sm_90a")
    # integers are addresses: validation passes and the call stops at the stream or the driver
    # (no GPU here; torch, when some other test imported it, fails first at its stream lookup)
    try:
        kernel._dry_run(0x10000, 0x20000, 0x30000, 1024, 1024, 1024)
    except tilec.kernel.KernelArgumentError:
        raise
    except Exception:
        pass
    for args, message in [
        ((np.zeros(4, np.float16), 0, 0, 1, 1, 1), "a pointer parameter takes a CUDA tensor or an integer address, "
                                                   "got a tensor on cpu"),
        ((1.5, 0, 0, 1, 1, 1), "expected a tensor or an integer address, got a float"),
        (("x", 0, 0, 1, 1, 1), "expected a tensor or an integer address, got str"),
        ((-8, 0, 0, 1, 1, 1), "the address -8 is negative"),
    ]:
        with pytest.raises(tilec.kernel.KernelArgumentError, match="argument 'a_ptr'") as info:
            kernel._dry_run(*args)
        assert message in str(info.value)


def test_make_tensor_before_the_kernel_needs_a_pointer_parameter():
    with pytest.raises(tilec.CompileError, match=r"T.make_tensor before `with T.Kernel` takes a pointer parameter"):
        @T.prim_func
        def bad(ptrs: T.Tensor((2,), T.ptr)):
            A = T.make_tensor(ptrs[0], (8,), "float32")
            with T.Kernel(1, threads=32) as bx:
                A[0] = 1.0


@pytest.mark.parametrize("m,n,k", [(128, 128, 128), (100, 128, 96)])
def test_the_cpu_target_runs_the_pointer_gemm(m, n, k):
    # target=cpu takes the arrays themselves for pointer parameters (the views must fit in them)
    rng = np.random.default_rng(0)
    kernel = tilec.compile(_matmul_ptr(M=m, N=n), target="cpu")
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    kernel(a, b, c, m, n, k)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-3, atol=1e-3)


def test_the_cpu_target_runs_match_buffer_and_checks_the_arrays():
    kernel = tilec.compile(_scale_tir_style(256), target="cpu")
    x = np.arange(256, dtype=np.float32)
    y = np.full(256, np.nan, np.float32)
    kernel(x, y)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(tilec.CompileError, match=r"T.make_tensor\('Y'\) of shape \(256,\) float32 reaches 1024 bytes "
                                                 r"past the address, but the array passed for it has 512"):
        kernel(x, np.zeros(128, np.float32))
    with pytest.raises(tilec.kernel.KernelArgumentError, match="is a pointer: target=cpu takes the array itself"):
        kernel(x.ctypes.data, y)


@needs_nvrtc
def test_eager_pointer_parameters_and_par_compile():
    # upstream test_tilelang_language_eager_jit.py's gemm_ptr: addresses in the signature,
    # sizes and dtypes as compile-time arguments, T.ptr() placeholders in par_compile.
    @tilec.jit(target="sm_90a")
    def gemm_ptr(A: T.ptr, B: T.ptr, C: T.ptr, M: int, N: int, K: int, dtype: T.dtype, out_dtype: T.dtype,
                 block_M: int = 64, block_N: int = 64, block_K: int = 32):
        A = T.make_tensor(A, (M, K), dtype)
        B = T.make_tensor(B, (K, N), dtype)
        C = T.make_tensor(C, (M, N), out_dtype)
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), out_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[bx * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, by * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[bx * block_M, by * block_N])

    kernels = gemm_ptr.par_compile([
        {"A": T.ptr(), "B": T.ptr(), "C": T.ptr(), "M": 1024, "N": 1024, "K": 1024, "dtype": d, "out_dtype": T.float32}
        for d in (T.float16, T.bfloat16)])
    assert len(kernels) == 2
    assert "half* __restrict__ A" in kernels[0].get_kernel_source()
    assert "nv_bfloat16* __restrict__ A" in kernels[1].get_kernel_source()
    assert [p["dtype"] for p in kernels[0].params()] == ["handle", "handle", "handle"]
    # a compile error of one set is raised, or None with ignore_error
    bad = {"A": T.ptr(), "B": T.ptr(), "C": T.ptr(), "M": 1024, "N": 1024, "K": 1024, "dtype": T.float16,
           "out_dtype": T.float32, "block_K": 1000}  # more shared memory than a block has
    assert gemm_ptr.par_compile([bad], ignore_error=True) == [None]
    with pytest.raises(tilec.CompileError):
        gemm_ptr.par_compile([bad])


def test_pointers_into_on_chip_memory_are_refused():
    with pytest.raises(tilec.CompileError, match="T.ptr\\(storage_scope='shared'\\): tilec's pointer parameters "
                                                 "address global memory"):
        T.ptr("float16", storage_scope="shared")


def test_the_cpu_target_refuses_a_negative_stride_view():
    @T.prim_func
    def backwards(x: T.handle, y: T.Tensor((8,), "float32")):
        X = T.match_buffer(x, (8,), "float32", strides=(-1,))
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                y[i] = X[i]

    with pytest.raises(tilec.CompileError, match=r"T.make_tensor with a negative stride \('X'\) is not supported "
                                                 "on target=cpu"):
        tilec.compile(backwards, target="cpu")(np.zeros(8, np.float32), np.zeros(8, np.float32))
