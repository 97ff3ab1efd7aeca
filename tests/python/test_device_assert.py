"""T.device_assert: compiles to a check that prints the source line and traps (GPU side:
tests/gpu/test_runtime_gpu.py); on target="cpu" a failing check raises."""
import numpy as np
import pytest

import tilec
import tilec.language as T

N = T.dynamic("n")


@T.prim_func
def checked(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < N:
                T.device_assert(A[bx * 128 + i] >= 0, "A must be non-negative")
                B[bx * 128 + i] = T.sqrt(A[bx * 128 + i])


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
def test_compiles_to_a_check_naming_the_source_line():
    src = tilec.compile(checked, out_idx=[-1], target="sm_90a").get_kernel_source()
    assert 'tl::device_assert(' in src and '"A must be non-negative"' in src
    assert '"test_device_assert.py:17"' in src, src


def test_cpu_target_raises_on_a_failing_check():
    k = tilec.compile(checked, out_idx=[-1], target="cpu")
    a = np.abs(np.random.randn(300).astype(np.float32))
    np.testing.assert_allclose(k(a), np.sqrt(a), rtol=1e-6)
    a[257] = -1.0
    with pytest.raises(tilec.CompileError, match=r"device assertion failed in kernel .* at test_device_assert.py:17: "
                                                 r"A must be non-negative"):
        k(a)


def test_message_must_be_a_string():
    with pytest.raises(tilec.CompileError, match="msg must be a string"):
        @T.prim_func
        def bad(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                for i in T.Parallel(128):
                    T.device_assert(A[i] > 0, 42)


def test_print_of_a_whole_buffer_prints_every_element_with_its_indices(capfd):
    @T.prim_func
    def show(A: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((4, 8), "float32")
            F = T.alloc_fragment((4, 8), "float32")
            T.copy(A, S)
            T.copy(S, F)
            T.print(S, msg="after load")
            T.print(F)

    k = tilec.compile(show, target="cpu")
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    k(a)
    out = capfd.readouterr().out.splitlines()
    shared = [line for line in out if "after load S[i, j]" in line]
    frag = [line for line in out if " F[i, j]" in line]
    assert len(shared) == 32 and len(frag) == 32
    assert any(line.endswith("after load S[i, j] 2 5 = 21") for line in shared), shared[:3]
    if tilec._tilec.nvrtc_available()[0]:
        src = tilec.compile(show, target="sm_80").get_kernel_source()
        # One printf per element with a literal format: a thread's line is never split.
        assert src.count('printf("block (%d, %d, %d) thread (%d, %d, %d):') == 2, src
        assert ' after load S[i, j] %d %d = %g\\n"' in src and ' F[i, j] %d %d = %g\\n"' in src, src


def test_print_formats_each_scalar_by_its_type():
    if not tilec._tilec.nvrtc_available()[0]:
        pytest.skip("NVRTC not found")

    @T.prim_func
    def show(n: T.int32, m: T.int64, x: T.float32):
        with T.Kernel(1, threads=32) as bx:
            T.print(n, m, x, n > 3, msg="100% of them")

    src = tilec.compile(show, target="sm_80").get_kernel_source()
    line = next(ln.strip() for ln in src.splitlines() if "printf(" in ln)
    assert line.startswith('printf("block (%d, %d, %d) thread (%d, %d, %d): %d %lld %g %s 100%% of them\\n", '
                           '(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y, '
                           '(int)threadIdx.z, (int)(n), (long long)(m), (double)static_cast<float>(x), '
                           '(n > 3) ? "True" : "False");'), line


def test_print_refuses_barriers():
    with pytest.raises(tilec.CompileError, match="T.print cannot print the barriers"):
        @T.prim_func
        def bad(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                bars = T.alloc_barrier([1])
                T.print(bars)
