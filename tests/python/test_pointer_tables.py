"""Pointer tables (`T.Tensor([n], T.ptr)`) and `T.make_tensor(address, shape, dtype)`: a global
tensor at an address the kernel reads (TileLang's grouped GEMM over per-group tensors). The
address is bound once; the buffer is a typed pointer in CUDA C; copies never use TMA (no tensor
map exists for it). No NVRTC needed: the source is generated, not compiled."""
import pytest

import tilec
import tilec.language as T


def _grouped_gemm(groups=3, M=128, N=128, K=256, bm=64, bn=64, bk=64, stages=2):
    @T.prim_func
    def k(A_ptrs: T.Tensor([groups], T.ptr), B_ptrs: T.Tensor([groups], T.ptr),
          C_ptrs: T.Tensor([groups], T.ptr)):
        with T.Kernel(groups * (M // bm), N // bn, threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            g = bx // (M // bm)
            m0 = (bx % (M // bm)) * bm
            A = T.make_tensor(A_ptrs[g], (M, K), T.float16)
            B = T.make_tensor(B_ptrs[g], (K, N), T.float16)
            C = T.make_tensor(C_ptrs[g], (M, N), T.float16)
            T.clear(acc)
            for ko in T.Pipelined(K // bk, num_stages=stages):
                T.copy(A[m0, ko * bk], A_s)
                T.copy(B[ko * bk, by * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[m0, by * bn])

    return k


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_a_pointer_table_gemm_reads_through_typed_pointers(target):
    kernel = tilec.compile(_grouped_gemm(), target=target)
    src = kernel.get_kernel_source()
    assert "const long long* __restrict__ A_ptrs" in src, src
    for name in "ABC":
        assert f"half* __restrict__ {name} = reinterpret_cast<half*>({name}_ptr);" in src, src
    assert "tma_load" not in src and "tma_store" not in src, src
    assert [(p["name"], p["dtype"], p["shape"]) for p in kernel.params()] == [
        ("A_ptrs", "int64", [3]), ("B_ptrs", "int64", [3]), ("C_ptrs", "int64", [3])]


def test_pointer_table_is_int64_storage():
    text = _grouped_gemm().script()
    assert 'A_ptrs: T.Tensor((3,), "int64")' in text, text
    assert 'A = T.make_tensor(A_ptr, (128, 256), "float16")' in text, text


def test_the_address_is_read_where_make_tensor_is_written():
    @T.prim_func
    def k(ptrs: T.Tensor((2,), T.ptr), idx: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            i = T.alloc_var("int32")
            i = idx[0]
            A = T.make_tensor(ptrs[i], (32,), "float32")
            i = 1 - i  # does not move A
            for t in T.Parallel(32):
                A[t] = 1.0

    text = k.script()
    assert text.index("A_ptr = ptrs[i[0]]") < text.index("i[0] = 1 - i[0]"), text


def _error(func, target="sm_90a"):
    with pytest.raises(tilec.CompileError) as info:
        tilec.compile(func, target=target)
    return str(info.value)


def test_an_address_that_is_not_64_bits_is_refused():
    with pytest.raises(tilec.CompileError) as info:
        @T.prim_func
        def k(offsets: T.Tensor((2,), "int32")):
            with T.Kernel(1, threads=32) as bx:
                A = T.make_tensor(offsets[0], (32,), "float32")
                A[0] = 1.0
    msg = str(info.value)
    assert "T.make_tensor('A'): the address is int32, not a pointer or a 64-bit integer" in msg, msg
    assert "T.Tensor([n], T.ptr)" in msg


def test_tma_copy_of_a_pointer_tensor_says_why():
    @T.prim_func
    def k(ptrs: T.Tensor((1,), T.ptr)):
        with T.Kernel(1, threads=128) as bx:
            A = T.make_tensor(ptrs[0], (64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            mbar = T.alloc_barrier(arrive_count=1)
            T.tma_copy(A, S, barrier=mbar[0])
            T.barrier_wait(mbar[0], 0)

    msg = _error(k)
    assert "T.tma_copy cannot use TMA: a T.make_tensor buffer has no tensor map" in msg, msg


def test_ptr_as_a_variable_is_refused_with_the_table_form():
    # T.ptr(dtype) is an annotation (a pointer parameter: test_pointer_params.py), not an address.
    assert repr(T.ptr("float16")) == "T.ptr(float16)"
    with pytest.raises(tilec.CompileError) as info:
        @T.prim_func
        def k(x: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                p = T.ptr("float32")
                A = T.make_tensor(p, (32,), "float32")
                for i in T.Parallel(32):
                    x[i] = A[i]
    assert "is a parameter annotation" in str(info.value) and "T.Tensor([n], T.ptr)" in str(info.value)


def test_make_tensor_outside_a_kernel_is_refused():
    with pytest.raises(tilec.CompileError) as info:
        @T.prim_func
        def k(ptrs: T.Tensor((1,), T.ptr)):
            A = T.make_tensor(ptrs[0], (32,), "float32")
            with T.Kernel(1, threads=32) as bx:
                A[0] = 1.0
    assert "T.make_tensor before `with T.Kernel` takes a pointer parameter" in str(info.value)


def test_the_cpu_target_has_no_device_addresses():
    np = pytest.importorskip("numpy")
    kernel = tilec.compile(_grouped_gemm(groups=1), target="cpu")
    ptrs = np.zeros((1,), dtype=np.int64)
    with pytest.raises(tilec.CompileError) as info:
        kernel(ptrs, ptrs, ptrs)
    assert "T.make_tensor at an address read by the kernel ('A') is not supported on target=cpu" in str(info.value)
    assert "give the address as a pointer parameter" in info.value.hint
