"""Kernel values in plain Python helpers (operators on buffer elements, bit operations),
T.reinterpret, and the dtype names TileLang has: T.tfloat32 (float32 in memory) and the
sub-byte names tilec refuses with a clear message."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError
from tilec.tvm import tirx


def _exponent(x):  # a helper as upstream programs write them: Python operators on kernel values
    bits = T.reinterpret(x, "uint32")
    return (bits >> 23) & 0xFF


def _scale(amax, inv):
    return amax * inv + 1.0


def test_operators_on_buffer_elements_in_helpers():
    @T.prim_func
    def helpers(A: T.Tensor((128,), T.uint32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                A[i] = _exponent(B[i]) ^ 1
                B[i] = _scale(B[i], 0.5) - B[i] / 2.0

    text = helpers.script()
    assert 'T.call_intrin("uint32", "tl.shift_right", T.call_intrin("uint32", "tl.reinterpret", B[i])' in text, text
    assert '"tl.bitwise_and"' in text and '"tl.bitwise_xor"' in text
    assert "B[i] * T.float32(0.5) + T.float32(1)" in text


def test_bool_and_or_stay_logical_in_helpers():
    def both(a, b):
        return (a > 0.0) & (b > 0.0)

    @T.prim_func
    def logical(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                B[i] = T.if_then_else(both(A[i], B[i]), 1.0, 0.0)

    assert "A[i] > T.float32(0) and B[i] > T.float32(0)" in logical.script()


def test_reinterpret_same_width_integers_is_a_cast_and_sizes_must_match():
    @T.prim_func
    def nibbles(D: T.Tensor((128,), T.uint8), C: T.Tensor((128,), T.int8)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                C[i] = tirx.reinterpret(T.int8, D[i] << T.uint8(4)) >> T.int8(4)  # TVM's argument order

    assert 'T.cast(T.call_intrin("uint8", "tl.shift_left", D[i], T.uint8(4)), "int8")' in nibbles.script()
    with pytest.raises(CompileError, match="the sizes differ"):
        @T.prim_func
        def wrong(D: T.Tensor((128,), T.uint8), C: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                for i in T.Parallel(128):
                    C[i] = T.reinterpret(D[i], T.float32)


def test_tfloat32_is_float32_in_memory_and_int4_is_refused_clearly():
    assert T.tfloat32 == "float32"
    assert T.int4 == "int4"  # programs name it in tables
    with pytest.raises(CompileError, match="T.int4: sub-byte integers are not supported"):
        @T.prim_func
        def packed(A: T.Tensor((128,), T.int4)):
            with T.Kernel(1, threads=128) as bx:
                pass


def test_unpacked_fp4_is_refused_clearly():
    # upstream's DeepSeek v4 sm_100 GEMM allocates its fp4 operand as T.float4_e2m1_unpacked.
    with pytest.raises(CompileError, match="T.float4_e2m1_unpacked: fp4 stored one value per byte .* tcgen05 gemm"):
        @T.prim_func
        def unpacked(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                S = T.alloc_shared((64, 64), T.float4_e2m1_unpacked)


def test_slice_between_two_let_bound_bounds_has_a_constant_extent():
    S = T.dynamic("S")

    @T.prim_func
    def window(KV: T.Tensor((S, 64), T.float16), O: T.Tensor((S, 64), T.float16)):
        with T.Kernel(4, threads=128) as bz:
            sh = T.alloc_shared((32, 64), T.float16)
            for k in T.serial(2):
                kv_start = (S // 4) * bz + k * 32
                kv_end = (S // 4) * bz + (k + 1) * 32
                T.copy(KV[kv_start:kv_end, :], sh)
                T.copy(sh, O[kv_start:kv_end, :])

    assert "T.copy(KV[kv_start:kv_start + 32, 0:64], sh)" in window.script()


def test_reinterpret_between_float_and_integer_compiles_to_a_bit_cast():
    @T.prim_func
    def bits(A: T.Tensor((128,), T.uint32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                A[i] = T.reinterpret(B[i], "uint32")
                B[i] = T.reinterpret(A[i] + 1, T.float32)

    src = tilec.compile(bits, target="sm_90a").get_kernel_source()
    assert "tl::reinterpret<unsigned int>(B[" in src and "tl::reinterpret<float>(A[" in src, src


def test_bit_operations_widen_the_narrower_integer_and_prefer_unsigned():
    @T.prim_func
    def widen(V: T.Tensor((128,), T.uint8), P: T.Tensor((128,), T.uint16), O: T.Tensor((128,), T.uint16)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                O[i] = (V[i] >> P[i]) & T.uint16(15)

    assert 'T.call_intrin("uint16", "tl.shift_right", T.cast(V[i], "uint16"), P[i])' in widen.script()

    # Mixed signedness (TVM's rule, upstream's top-k selector): the wider type, or of one
    # width the unsigned one.
    @T.prim_func
    def mixed(V: T.Tensor((128,), T.uint8), P: T.Tensor((128,), T.int16), U: T.Tensor((128,), T.uint32),
              S: T.Tensor((128,), T.int32), O: T.Tensor((128,), T.int16), Q: T.Tensor((128,), T.uint32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                O[i] = V[i] >> P[i]
                Q[i] = (U[i] >> (24 - S[i])) & 0xFF

    text = mixed.script()
    assert 'T.call_intrin("int16", "tl.shift_right", T.cast(V[i], "int16"), P[i])' in text, text
    assert 'T.call_intrin("uint32", "tl.shift_right", U[i], T.cast(24 - S[i], "uint32"))' in text, text
    with pytest.raises(CompileError, match="bit operations need two integers of one type"):
        @T.prim_func
        def floats(V: T.Tensor((128,), T.uint8), P: T.Tensor((128,), T.float32), O: T.Tensor((128,), T.int16)):
            with T.Kernel(1, threads=128) as bx:
                for i in T.Parallel(128):
                    O[i] = V[i] >> P[i]


def test_tvm_short_dtype_names():
    from tilec.language.dtypes import dtype_str

    assert dtype_str("uint") == "uint32"
