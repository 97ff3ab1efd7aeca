"""T.isnan / T.isinf / T.isfinite (TVM's, which TileLang programs use to mask NaN and inf): a bool
per element, on every float dtype (the narrow ones classified through float, exactly). The CPU
target against numpy; sm_90a through NVRTC (tl::isnan / isinf / isfinite of tilec/math.cuh)."""
import numpy as np
import pytest

import tilec
import tilec.language as T

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

VALUES = np.array([0, 1, np.nan, np.inf, -np.inf, -2, 1e30, -np.nan], np.float64)


def classify(dtype):
    @T.prim_func
    def main(x: T.Tensor((8,), dtype), y: T.Tensor((3, 8), "int32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                y[0, i] = T.if_then_else(T.isnan(x[i]), 1, 0)
                y[1, i] = T.if_then_else(T.isinf(x[i]), 1, 0)
                y[2, i] = T.if_then_else(T.isfinite(x[i]), 1, 0)

    return main


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_classification_matches_numpy(dtype):
    with np.errstate(over="ignore"):
        x = VALUES.astype(dtype)  # 1e30 is inf in float16
    y = np.full((3, 8), -1, np.int32)
    tilec.compile(classify(dtype), target="cpu")(x, y)
    np.testing.assert_array_equal(y, np.stack([np.isnan(x), np.isinf(x), np.isfinite(x)]).astype(np.int32))


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float8_e4m3", "float64"])
def test_classification_compiles_for_sm90a(dtype):
    src = tilec.compile(classify(dtype), target="sm_90a").get_kernel_source()
    assert "tl::isnan(" in src and "tl::isinf(" in src and "tl::isfinite(" in src


def test_classifying_an_integer_is_an_error():
    with pytest.raises(tilec.CompileError, match="T.isnan takes a floating-point value, got int32"):
        classify("int32")
