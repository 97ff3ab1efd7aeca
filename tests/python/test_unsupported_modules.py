"""Upstream modules that tilec leaves out on purpose (tilelang.rocm, the tilelang.cuda MMA macro
generators, the sparse metadata layouts) raise NotImplementedError with what to use instead, and
`tilelang.cuda.intrinsics.make_mma_swizzle_layout` is a shared-memory swizzle over tilec's layouts."""
import importlib

import pytest

import tilec
import tilec.language as T
from tilec.cuda.intrinsics import make_mma_swizzle_layout


@pytest.mark.parametrize("module,name", [
    ("tilec.cuda.intrinsics.macro.mma_macro_generator", "TensorCoreIntrinEmitter"),
    ("tilec.rocm.intrinsics.mfma_macro_generator", "MatrixCoreIntrinEmitter"),
    ("tilec.cuda.intrinsics.sparse_layout", "make_cutlass_metadata_layout"),
    ("tilec.cuda.intrinsics", "get_swizzle_layout"),
])
def test_left_out_names_raise_a_clear_error(module, name):
    m = importlib.import_module(module)
    with pytest.raises(NotImplementedError, match="not part of tilec"):
        getattr(m, name)


def test_the_tilelang_alias_reaches_them():
    from tilec import compat

    compat.install()
    with pytest.raises(NotImplementedError, match="T.gemm"):
        exec("from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter", {})


def _copy_through_shared(cols, dtype, is_smooth=False):
    layouts = []

    @T.prim_func
    def through(A: T.Tensor((64, cols), dtype), B: T.Tensor((64, cols), dtype)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, cols), dtype)
            lay = make_mma_swizzle_layout(S, is_smooth=is_smooth)
            layouts.append(lay)
            T.annotate_layout({S: lay})
            T.copy(A, S)
            T.copy(S, B)

    return through, layouts[0]


def test_mma_swizzle_layout_swizzles_whole_64_byte_rows():
    f, lay = _copy_through_shared(64, T.float16)  # 128-byte rows
    assert "bitwise_xor" in repr(lay)
    k = tilec.compile(f, target="sm_90a")
    assert "__global__" in k.get_kernel_source()


@pytest.mark.parametrize("cols,dtype,smooth", [(16, T.float16, False), (64, T.float16, True)])
def test_mma_swizzle_layout_is_row_major_otherwise(cols, dtype, smooth):
    _, lay = _copy_through_shared(cols, dtype, smooth)
    _, linear = _copy_through_shared(cols, dtype, True)
    assert repr(lay) == repr(linear)


def test_sparse_layout_facts():
    # The 2:4 facts a compressor needs (upstream's gemm_sp/sparse_utils.py imports them): 16-bit
    # and 8-bit types keep 2 of 4, float32 1 of 2; 4 metadata bits per group; aliases resolve.
    from tilec.cuda.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor, get_e_replicate_factor

    assert GROUP_CONFIG[T.float16] == GROUP_CONFIG["bfloat16"] == GROUP_CONFIG["float8_e4m3fn"] == (2, 4)
    assert GROUP_CONFIG["float"] == GROUP_CONFIG[T.float32] == (1, 2)
    assert T.float64 not in GROUP_CONFIG and "no_such_type" not in GROUP_CONFIG
    assert get_e_factor(T.float16, T.int16) == 16 and get_e_factor(T.int8, T.int32) == 32
    assert get_e_factor(T.float32, T.int16) == 8
    assert get_e_replicate_factor(T.float16) == 2 and get_e_replicate_factor(T.float8_e4m3) == 1
