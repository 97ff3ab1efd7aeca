"""T.cummax (upstream TileLang's scan): running maxima along a dimension, in shared memory or in a
fragment whose scanned dimension each thread holds, from the end with reverse; the T.cumsum scan
with max for + and -inf (an integer type's lowest value) for 0 (src/ops/cumsum.cc). The CPU target
against numpy; sm_90a compiled through NVRTC."""
import numpy as np
import pytest

import tilec
import tilec.language as T

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
rng = np.random.default_rng(0)


def scan(scope, dtype="float32", M=8, N=256, reverse=False, threads=128, in_place=True):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=threads):
            if scope == "shared":
                s = T.alloc_shared((M, N), dtype)
                d = T.alloc_shared((M, N), dtype)
            else:
                s = T.alloc_fragment((M, N), dtype)
                d = T.alloc_fragment((M, N), dtype)
            T.copy(A, s)
            if in_place:
                T.cummax(s, dim=1, reverse=reverse)
                T.copy(s, B)
            else:
                T.cummax(s, d, dim=-1, reverse=reverse)
                T.copy(d, B)

    return main


def running_max(x, reverse):
    return np.flip(np.fmax.accumulate(np.flip(x, 1), 1), 1) if reverse else np.fmax.accumulate(x, 1)


@pytest.mark.parametrize("scope", ["shared", "fragment"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("threads", [128, 32])
def test_cummax_matches_numpy(scope, reverse, threads):
    x = rng.standard_normal((8, 256)).astype(np.float32)
    x[3, 17] = np.nan  # ignored, as T.max ignores NaN
    y = np.full_like(x, np.nan)
    tilec.compile(scan(scope, reverse=reverse, threads=threads, in_place=threads == 128), target="cpu")(x, y)
    np.testing.assert_array_equal(y, running_max(x, reverse))


def test_integer_cummax_starts_at_the_lowest_value():
    x = rng.integers(-2**31, 2**31 - 1, (8, 256), dtype=np.int64).astype(np.int32)
    y = np.zeros_like(x)
    tilec.compile(scan("shared", dtype="int32"), target="cpu")(x, y)
    np.testing.assert_array_equal(y, np.maximum.accumulate(x, 1))


@needs_nvrtc
@pytest.mark.parametrize("scope,dtype", [("shared", "float32"), ("fragment", "float16"), ("shared", "int32")])
def test_cummax_compiles_to_a_max_scan(scope, dtype):
    src = tilec.compile(scan(scope, dtype=dtype), target="sm_90a").get_kernel_source()
    assert "tl::max(" in src
    assert ("tl::neg_inf<" in src) if dtype != "int32" else ("(-2147483647 - 1)" in src)


def test_cummax_prints_and_parses_back():
    text = scan("shared").script()
    assert 'T.cumsum(s, s, dim=1, op="max")' in text
    again = tilec.from_script(text)
    assert again.script() == text


def test_a_scan_op_tilec_lacks_is_an_error():
    with pytest.raises(tilec.CompileError, match="T.cumsum: op 'min' is not a scan tilec has"):
        @T.prim_func
        def k(A: T.Tensor((8, 256), "float32")):
            with T.Kernel(1, threads=128):
                s = T.alloc_shared((8, 256), "float32")
                T.copy(A, s)
                T.cumsum(s, dim=1, op="min")
