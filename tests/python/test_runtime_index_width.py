"""32-bit index arithmetic never wraps silently (no GPU needed).

A kernel over symbolic int32 dimensions indexes its tensors with int32 offsets; called with
a tensor whose offsets span 2^31 elements or more it raises KernelArgumentError (expected
vs got, the tensor, the kernel, a hint) instead of reading the wrong memory. Huge tensors
are numpy views with huge shapes over a 4-byte buffer (np.lib.stride_tricks.as_strided):
validation reads only the metadata, and a view that passes every structural check stops
at the device check ("expected a CUDA tensor"), which proves the span check passed.
Declaring the dimensions int64 (T.dynamic(name, "int64")) and static shapes of 2^31
elements or more give int64 offsets in the generated CUDA C.
"""
import importlib

import pytest

np = pytest.importorskip("numpy")
tilec = importlib.import_module("tilec")
T = importlib.import_module("tilec.language")
kernel_mod = importlib.import_module("tilec.kernel")

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

BLOCK_COLS = 256


def copy_2d(m, n):
    """B[r, c] = A[r, c]: one block per row, BLOCK_COLS columns per block."""

    @T.prim_func
    def copy2d(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(m, T.ceildiv(n, BLOCK_COLS), threads=128) as (bx, by):
            for j in T.Parallel(BLOCK_COLS):
                B[bx, by * BLOCK_COLS + j] = A[bx, by * BLOCK_COLS + j]

    return copy2d


def huge_view(shape):
    """A float32 array of `shape` (row-major strides) over a 4-byte buffer: metadata only,
    never read."""
    strides, acc = [], 4
    for d in reversed(shape):
        strides.insert(0, acc)
        acc *= d
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=shape, strides=strides)


@pytest.fixture(scope="module")
def kernel_int32():
    return tilec.compile(copy_2d(T.dynamic("m"), T.dynamic("n")), target="sm_80")


@pytest.fixture(scope="module")
def kernel_int64():
    return tilec.compile(copy_2d(T.dynamic("m", "int64"), T.dynamic("n", "int64")), target="sm_80")


SIG = "copy2d(A: float32[m, n], B: float32[m, n])"


def test_int32_kernel_records_its_index_width(kernel_int32):
    assert [p["index_bits"] for p in kernel_int32.params()] == [32, 32]
    assert "index=int32" in kernel_int32.launch_plan_text
    assert "long long" not in kernel_int32.get_kernel_source()


def test_offsets_beyond_int32_raise_with_expected_and_got(kernel_int32):
    big = huge_view((65536, 32768))  # 2^31 elements; m and n each fit in int32
    with pytest.raises(kernel_mod.KernelArgumentError) as info:
        kernel_int32(big, big)
    text = str(info.value)
    assert text.startswith(
        f"argument 'A' of kernel {SIG}: expected a tensor whose element offsets span at most 2147483647 elements "
        "(2^31 - 1), since the kernel indexes 'A' with int32 arithmetic; got one spanning 2147483648 elements "
        "(shape [65536, 32768])"), text
    assert ('hint: split the tensor into pieces of fewer than 2^31 elements, or compile the kernel with 64-bit '
            'indexing for it: declare its dimensions 64-bit, m = T.dynamic("m", "int64"), '
            'n = T.dynamic("n", "int64")') in text


def test_largest_int32_span_passes_the_check(kernel_int32):
    ok = huge_view((65535, 32768))  # 2^31 - 32768 elements
    with pytest.raises(kernel_mod.KernelArgumentError, match="expected a CUDA tensor, got a tensor on cpu"):
        kernel_int32(ok, ok)


def test_int64_dims_give_int64_offsets_and_no_limit(kernel_int64):
    assert [p["index_bits"] for p in kernel_int64.params()] == [64, 64]
    source = kernel_int64.get_kernel_source()
    assert "long long m" in source and "long long n" in source, source
    big = huge_view((65536, 65536))
    with pytest.raises(kernel_mod.KernelArgumentError, match="expected a CUDA tensor, got a tensor on cpu"):
        kernel_int64(big, big)


def test_static_shape_of_two_to_the_31_compiles_with_int64_offsets():
    kernel = tilec.compile(copy_2d(65536, 32768), target="sm_80")
    assert [p["index_bits"] for p in kernel.params()] == [64, 64]
    source = kernel.get_kernel_source()
    assert "(long long)bx * 32768ll" in source, source
    smaller = tilec.compile(copy_2d(65535, 32768), target="sm_80")
    assert [p["index_bits"] for p in smaller.params()] == [32, 32]
    assert "long long" not in smaller.get_kernel_source()


def test_index_bitwidth_config_gives_int64_offsets_to_int32_symbols():
    # TileLang's key: the same program with int32 symbols, every tensor indexed with int64, so the
    # span that the default refuses launches (and the default's error names the key).
    wide = tilec.compile(copy_2d(T.dynamic("m"), T.dynamic("n")), target="sm_80",
                         pass_configs={"tl.config_index_bitwidth": 64})
    assert [p["index_bits"] for p in wide.params()] == [64, 64]
    assert "long long" in wide.get_kernel_source()
    big = huge_view((65536, 32768))
    with pytest.raises(kernel_mod.KernelArgumentError, match="expected a CUDA tensor, got a tensor on cpu"):
        wide(big, big)
    narrow = tilec.compile(copy_2d(T.dynamic("m"), T.dynamic("n")), target="sm_80")
    with pytest.raises(kernel_mod.KernelArgumentError, match=r'pass_configs=\{"tl.config_index_bitwidth": 64\}'):
        narrow(big, big)
    with pytest.raises(tilec.CompileError, match="tl.config_index_bitwidth must be 32 or 64, got 16"):
        tilec.compile(copy_2d(T.dynamic("m"), T.dynamic("n")), target="sm_80",
                      pass_configs={"tl.config_index_bitwidth": 16})
