"""Eager-style @tilec.jit (frontend/eager.py): T.const sizes, body annotations, T.empty
outputs, .compile(M=...), and T.empty / return in a T.prim_func. CPU only, no torch."""

import pytest

import tilec
import tilec.language as T
from tilec import CompileError


class FakeTensor:
    """Just what size discovery reads: .shape and .stride()."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def stride(self):
        out, acc = [], 1
        for d in reversed(self.shape):
            out.append(acc)
            acc *= d
        return tuple(reversed(out))


@tilec.jit(target="sm_90a")
def scale_add(A, B, block=64, dtype=T.float32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B: T.Tensor((M, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
        for i, j in T.Parallel(block, N):
            C[bx * block + i, j] = A[bx * block + i, j] * 2 + B[bx * block + i, j]
    return C


def test_eager_function_is_detected_and_sizes_come_from_keywords():
    assert scale_add.mode == "eager"
    f = scale_add.get_tir(M=128, N=32)
    assert [p.name for p in f.params] == ["A", "B", "C"]
    assert f.attrs["tilec.out_idx"] == [-1]
    assert "T.Tensor((128, 32)" in f.script()


def test_sizes_are_discovered_from_tensor_shapes():
    f = scale_add.get_tir(FakeTensor((256, 16)), FakeTensor((256, 16)), block=32)
    assert "T.Tensor((256, 16)" in f.script()
    assert "T.Kernel(8," in f.script()


def test_eager_compile_returns_a_kernel_with_the_output_last():
    k = scale_add.compile(M=64, N=64)
    params = k.params()
    assert [p["name"] for p in params] == ["A", "B", "C"]
    assert [p["is_output"] for p in params] == [False, False, True]


def test_a_lazy_factory_stays_lazy():
    @tilec.jit(out_idx=[-1], target="sm_90a")
    def factory(n):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(1, threads=n) as _:
                for i in T.Parallel(n):
                    B[i] = A[i]
        return main

    assert factory.mode == "lazy"
    assert [p.name for p in factory.get_tir(32).params] == ["A", "B"]


def test_a_size_that_is_no_extent_needs_a_keyword():
    @tilec.jit(target="sm_90a")
    def twice(A):
        N = T.const("N")
        A: T.Tensor((N * 2,), T.float32)
        with T.Kernel(1, threads=32) as _:
            A[0] = 1.0

    with pytest.raises(CompileError, match=r'T.const\("N"\) is not the extent of any tensor parameter'):
        twice.get_tir(FakeTensor((8,)))
    assert "T.Tensor((8," in twice.get_tir(N=4).script()


def test_an_unreturned_output_is_an_error():
    @tilec.jit(target="sm_90a")
    def forgot(A):
        A: T.Tensor((8,), T.float32)
        C = T.empty((8,), T.float32)
        with T.Kernel(1, threads=32) as _:
            C[0] = A[0]

    with pytest.raises(CompileError, match="'C' \\(T.empty\\) is not returned"):
        forgot.get_tir()


def test_t_const_outside_an_eager_function_is_an_error():
    with pytest.raises(CompileError, match="T.const can only be used in the body of an eager"):
        @T.prim_func
        def f(A: T.Tensor((8,), T.float32)):
            n = T.const("n")  # noqa: F841
            with T.Kernel(1, threads=32) as _:
                A[0] = 1.0


def test_t_empty_in_a_prim_func_makes_outputs_in_return_order():
    @T.prim_func
    def two(A: T.Tensor((8,), T.float32)):
        C = T.empty((8,), T.float32)
        D = T.empty((8,), T.int32)
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(8):
                C[i] = A[i]
                D[i] = 1
        return D, C

    assert [p.name for p in two.params] == ["A", "D", "C"]
    assert two.attrs["tilec.out_idx"] == [-2, -1]


def test_returning_a_parameter_is_an_error():
    with pytest.raises(CompileError, match="can only return tensors made with T.empty"):
        @T.prim_func
        def bad(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32) as _:
                A[0] = 1.0
            return A


def test_scalar_parameters_annotated_in_the_body_are_runtime():
    @tilec.jit(target="sm_90a")
    def fill(A, value):
        A: T.Tensor((16,), T.float32)
        value: T.float32
        with T.Kernel(1, threads=16) as _:
            for i in T.Parallel(16):
                A[i] = value

    f = fill.get_tir()
    assert [p.name for p in f.params] == ["A", "value"]


def test_pass_configs_set_in_the_body_reach_the_function():
    @tilec.jit(target="sm_90a")
    def k(A):
        T.annotate_pass_configs({tilec.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
        A: T.Tensor((16,), T.float32)
        with T.Kernel(1, threads=16) as _:
            A[0] = 1.0

    assert k.get_tir().attrs["tilec.pass_config.tl.disable_tma_lower"] is True


def test_a_store_casts_to_the_buffer_dtype():
    @T.prim_func
    def store(A: T.Tensor((8,), T.float16), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            acc = T.alloc_var(T.float32)
            acc = B[0] * 2
            for i in T.Parallel(8):
                A[i] = B[i] + acc

    text = store.script()
    assert 'T.Cast("float16"' in text or 'T.cast(' in text


def test_chained_assignment_and_clamp():
    @T.prim_func
    def chained(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(8):
                A[i] = B[i] = T.clamp(A[i], -1.0, 1.0)

    text = chained.script()
    assert text.count("T.max(") + text.count("T.min(") >= 2 or "max(" in text


def test_a_slice_between_let_bound_bounds_has_a_constant_extent():
    @T.prim_func
    def rows(A: T.Tensor((256, 32), T.float16)):
        with T.Kernel(4, threads=128) as bx:
            S = T.alloc_shared((64, 32), T.float16)
            lo = bx * 64
            hi = lo + 64
            T.copy(A[lo:hi, :], S)

    assert "T.copy" in rows.script()


def test_several_dynamic_sizes_at_once_and_a_parenthesised_extent():
    b, s = T.dynamic("b, s")

    @T.prim_func
    def dyn(A: T.Tensor[(b, s), T.float32], L: T.Tensor[(b), T.int32]):
        with T.Kernel(b, threads=32) as bx:
            L[bx] = 0

    text = dyn.script()
    assert "T.Tensor((b, s)" in text and "T.Tensor((b,)" in text


def test_python_type_annotations_in_a_body_are_plain_assignments():
    @T.prim_func
    def hinted(A: T.Tensor((8,), T.float32)):
        n: int = 4
        dtype: str = "float32"
        with T.Kernel(1, threads=32) as _:
            x: T.float32 = A[0]
            for i in T.Parallel(n):
                A[i] = T.cast(x, dtype)

    assert "T.Parallel(4)" in hinted.script()


def test_comprehensions_over_python_values_and_mixed_select_types():
    sizes = [3, 5, 8]

    @T.prim_func
    def comp(A: T.Tensor((16,), T.float32), I: T.Tensor((16,), T.int32)):
        total = sum((s + 1) // 2 for s in sizes)
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(total):
                A[i] = T.if_then_else(i < 2, A[i], 0)
                I[i] = I[i] if i < 1 else 0.0

    assert "T.Parallel(9)" in comp.script()


def test_thread_binding_as_a_value_is_the_thread_index():
    @T.prim_func
    def tb(A: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as _:
            tx = T.thread_binding(0, 128, thread="threadIdx.x")
            A[tx] = 1.0

    assert "A[tx]" in tb.script() or "threadIdx" in tb.script() or "tx" in tb.script()


def test_astype_is_a_cast():
    @T.prim_func
    def cast(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(8):
                B[i] = A[i].astype(T.int32) + (A[i] * 2).astype("int32")

    assert cast.script().count('"int32")') >= 2


def test_eager_get_kernel_source():
    assert "__global__" in scale_add.get_kernel_source(M=64, N=32)


class FakeTorchTensor(FakeTensor):
    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


@tilec.jit(target="sm_90a")
def rows_copy(A):
    M = T.dynamic("M")
    A: T.Tensor((M, 256), T.float32)
    B = T.empty((M, 256), T.float32)
    with T.Kernel(T.ceildiv(M, 64), threads=128) as bx:
        for i, j in T.Parallel(64, 256):
            B[bx * 64 + i, j] = A[bx * 64 + i, j]
    return B


def test_a_tensor_beyond_int32_offsets_gets_the_64_bit_kernel():
    # M is symbolic (int32): 2^23 rows of 256 are 2^31 elements, past int32 offsets, so that call
    # compiles (and keeps) the kernel with tl.config_index_bitwidth = 64; smaller ones keep int32.
    small = rows_copy.compile(FakeTorchTensor((1024, 256)))
    huge = rows_copy.compile(FakeTorchTensor((1 << 23, 256)))
    assert [p["index_bits"] for p in small.params()] == [32, 32]
    assert [p["index_bits"] for p in huge.params()] == [64, 64]
    assert rows_copy.compile(FakeTorchTensor((1 << 24, 256))) is huge


def test_the_autotuners_compiles_get_the_64_bit_kernel_too():
    # The autotuner compiles through prepare_compile: a huge tensor gets 64-bit offsets there as
    # well (one rule, jit._with_index_width).
    huge = rows_copy.prepare_compile(FakeTorchTensor((1 << 23, 256)), pass_configs={"tl.disable_vectorize": False})()
    assert [p["index_bits"] for p in huge.params()] == [64, 64]
