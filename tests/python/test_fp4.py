"""float4_e2m1 (float4_e2m1fn) on the CUDA back end: buffers packed two elements a byte
(element 2k in the low nibble of byte k, as torch's float4_e2m1fn_x2), writes of whole bytes
only, the odd-extent and single-element-store errors, shared-memory sizes, and the torch dtype
mapping. The kernel is DeepSeek-V4's act_quant (upstream examples/deepseek_v4/act_quant.py):
bf16 -> fp4 with a power-of-two scale per 32 elements. Conversion rounding is tested in C++
(tests/cpp/fp4_convert_test.cc); tests/gpu/test_fp4_gpu.py runs the kernel."""
import re

import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError
from tilec.kernel import KernelArgumentError


def _fast_log2_ceil(x):
    bits_x = T.reinterpret(x, "uint32")
    exp_x = (bits_x >> 23) & 0xFF
    man_bits = bits_x & ((1 << 23) - 1)
    return T.Cast("int32", exp_x - 127 + T.if_then_else(man_bits != 0, 1, 0))


def _fast_pow2(x):
    return T.reinterpret((x + 127) << 23, "float32")


def act_quant(N=1024, block=32):
    M = T.dynamic("M")

    @T.prim_func
    def fp4_quant(x: T.Tensor((M, N), T.bfloat16), quant: T.Tensor((M, N), T.float4_e2m1fn),
                  scale: T.Tensor((M, N // block), T.float32)):
        with T.Kernel(T.ceildiv(M, 32), T.ceildiv(N, block), threads=128) as (bx, by):
            x_shared = T.alloc_shared((32, block), T.bfloat16)
            x_local = T.alloc_fragment((32, block), T.bfloat16)
            amax_local = T.alloc_fragment((32,), T.float32)
            s_local = T.alloc_fragment((32,), T.float32)
            y_local = T.alloc_fragment((32, block), T.float4_e2m1fn)
            y_shared = T.alloc_shared((32, block), T.float4_e2m1fn)
            for _ in T.Pipelined(1, num_stages=2):
                T.copy(x[bx * 32, by * block], x_shared, disable_tma=True)
                T.copy(x_shared, x_local)
                T.reduce_absmax(x_local, amax_local, dim=1)
                for i in T.Parallel(32):
                    amax_local[i] = T.max(amax_local[i], 6 * (2**-126))
                    s_local[i] = _fast_pow2(_fast_log2_ceil(amax_local[i] * (1.0 / 6.0)))
                for i, j in T.Parallel(32, block):
                    y_local[i, j] = T.clamp(x_local[i, j] / s_local[i], -6.0, 6.0)
                for i in T.Parallel(32):
                    scale[bx * 32 + i, by] = s_local[i]
                T.copy(y_local, y_shared)
                T.copy(y_shared, quant[bx * 32, by * block], disable_tma=True)

    return fp4_quant


def copy_through_shared(rows=64, cols=64, dtype=T.float4_e2m1fn):
    @T.prim_func
    def copy(A: T.Tensor((rows, cols), dtype), B: T.Tensor((rows, cols), dtype)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((rows, cols), dtype)
            T.copy(A, s)
            T.copy(s, B)

    return copy


@pytest.fixture(scope="module")
def act_quant_sm90():
    return tilec.compile(act_quant(), target="sm_90a")


def test_act_quant_stores_whole_bytes(act_quant_sm90):
    src = act_quant_sm90.get_kernel_source()
    assert "#include \"tilec/fp4.cuh\"" in src
    # Storage: the tensor, the shared tile and the fragment are arrays of bytes (pairs).
    assert "tl::fp4x2* __restrict__ quant" in src
    assert "tl::fp4x2* y_shared = reinterpret_cast<tl::fp4x2*>" in src
    assert re.search(r"tl::fp4x2 y_local\[4\];", src), "8 elements per thread in 4 bytes"
    # Every write of fp4 data is a packed store of an even number of elements; no nibble RMW.
    writes = [ln.strip() for ln in src.splitlines() if re.search(r"\b(quant|y_shared|y_local)\[[^]]*\]\s*(=|\|=|&=)", ln)]
    assert writes == [], writes
    stores = re.findall(r"tl::fp4_store\(&(\w+)\[", src)
    assert set(stores) == {"quant", "y_shared", "y_local"}
    assert "tl::fp4_get(" not in src  # every read is a vector of pairs too
    # The conversion: clamp in float, then one cast of the 8-lane vector to float4_e2m1.
    assert "tl::cast<tl::float4_e2m1>(tl::min(tl::max(" in src
    # The partial-tile path (M is dynamic) writes pairs too, guarded per pair.
    assert "v_pair" in src and "tl::fp4_load<2>(&y_shared[" in src


def test_act_quant_compiles_with_nvrtc(act_quant_sm90):
    if not tilec._tilec.nvrtc_available()[0]:
        pytest.skip("NVRTC is not available")
    assert act_quant_sm90.ptxas_info.get("spill_stores_bytes", 0) == 0
    # Two stages of the bf16 tile (2 x 2048 B), then the fp4 tile: 32 x 32 x 4 bits = 512 B.
    assert "tl::fp4x2* y_shared = reinterpret_cast<tl::fp4x2*>(tilec_smem + 4096);" in act_quant_sm90.get_kernel_source()
    assert "shared memory: 4608 B dynamic" in act_quant_sm90.launch_plan_summary()
    k80 = tilec.compile(act_quant(N=256), target="sm_80")
    assert "tl::fp4_store(&quant[" in k80.get_kernel_source()


def test_shared_memory_counts_four_bits():
    k = tilec.compile(copy_through_shared(64, 64), target="sm_90a")
    assert "shared memory: 2048 B dynamic" in k.launch_plan_summary()
    k = tilec.compile(copy_through_shared(64, 128), target="sm_90a")
    assert "shared memory: 4096 B dynamic" in k.launch_plan_summary()


def test_odd_innermost_extent_is_an_error():
    with pytest.raises(CompileError, match=r"float4_e2m1 tensor 'A' has an odd innermost extent \(63\)"):
        tilec.compile(copy_through_shared(64, 63), target="sm_90a")

    @T.prim_func
    def odd_fragment(B: T.Tensor((64, 64), T.float4_e2m1fn)):
        with T.Kernel(1, threads=128) as bx:
            y = T.alloc_fragment((64, 33), T.float4_e2m1fn)
            T.fill(y, 1.0)
            T.copy(y, B[0:64, 0:33])

    with pytest.raises(CompileError, match=r"float4_e2m1 buffer 'y' has an odd innermost extent \(33\)"):
        tilec.compile(odd_fragment, target="sm_90a")


def test_single_element_store_is_an_error():
    @T.prim_func
    def one_at_a_time(B: T.Tensor((64, 64), T.float4_e2m1fn)):
        with T.Kernel(64, threads=32) as bx:
            for i in T.serial(64):
                B[bx, i] = 1.0

    with pytest.raises(CompileError, match=r"float4_e2m1 buffer 'B' is written one element at a time"):
        tilec.compile(one_at_a_time, target="sm_90a")


def test_fill_and_read_back_in_pairs():
    @T.prim_func
    def fill_and_widen(B: T.Tensor((64, 64), T.float4_e2m1fn), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            y = T.alloc_fragment((64, 64), T.float4_e2m1fn)
            T.fill(y, 1.5)
            T.copy(y, B)
            for i, j in T.Parallel(64, 64):
                C[i, j] = T.cast(B[i, j], T.float32)

    src = tilec.compile(fill_and_widen, target="sm_90a").get_kernel_source()
    assert "tl::fp4_store(&y[" in src and "tl::float4_e2m1(1.5f)" in src
    assert "tl::cast<float>(tl::fp4_load<" in src


def test_dtype_mapping_to_torch():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("torch has no float4_e2m1fn_x2 (torch >= 2.8)")
    from tilec.language.dtypes import as_torch, dtype_str

    assert as_torch(T.float4_e2m1fn) is torch.float4_e2m1fn_x2
    assert as_torch("float4_e2m1") is torch.float4_e2m1fn_x2
    assert dtype_str(torch.float4_e2m1fn_x2) == "float4_e2m1"


def test_packed_torch_tensors_are_checked_as_float4():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("torch has no float4_e2m1fn_x2 (torch >= 2.8)")
    k = tilec.compile(copy_through_shared(64, 64), target="sm_90a")
    packed = torch.zeros(64, 32, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    # The right packed shape passes the dtype / shape / stride checks; the next check is the device.
    with pytest.raises(KernelArgumentError) as ok:
        k(packed, packed)
    assert "expected a CUDA tensor" in str(ok.value), str(ok.value)
    # A packed tensor of the logical shape holds twice the elements: dimension 1 is 128.
    wide = torch.zeros(64, 64, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    with pytest.raises(KernelArgumentError, match=r"dimension 1: expected 64, got 128"):
        k(wide, wide)
    with pytest.raises(KernelArgumentError, match=r"expected dtype float4_e2m1, got uint8"):
        k(packed.view(torch.uint8), packed)
    with pytest.raises(KernelArgumentError, match=r"contiguous in its last dimension"):
        k(torch.zeros(32, 64, dtype=torch.uint8).view(torch.float4_e2m1fn_x2).t(), packed)


def test_profiler_draws_packed_tensors():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("torch has no float4_e2m1fn_x2 (torch >= 2.8)")
    from tilec.profiler import TensorSupplyType, _poisoned, _random_tensor

    t = _random_tensor((4, 8), "float4_e2m1", TensorSupplyType.Auto, "cpu")
    assert t.dtype == torch.float4_e2m1fn_x2 and tuple(t.shape) == (4, 4)
    p = _poisoned((4, 8), "float4_e2m1", "cpu")
    assert tuple(p.shape) == (4, 4) and int(p.view(torch.uint8)[0, 0]) == 0xFF


def test_symbolic_row_length_writes_pairs():
    # N is symbolic: the 4-lane store needs a runtime alignment check; its fallback writes
    # pairs (a row of a float4 tensor has an even length, so a pair at an even column is a byte).
    M, N = T.dynamic("M"), T.dynamic("N")

    @T.prim_func
    def quantize(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float4_e2m1fn)):
        with T.Kernel(T.ceildiv(M, 32), T.ceildiv(N, 64), threads=128) as (bx, by):
            for i, j in T.Parallel(32, 64):
                B[bx * 32 + i, by * 64 + j] = A[bx * 32 + i, by * 64 + j]

    src = tilec.compile(quantize, target="sm_90a").get_kernel_source()
    assert "tl::fp4_store(&B[" in src and "tl::fp4_get(" not in src
    assert re.search(r"tl::fp4_store\(&B\[[^;]*tl::cast<tl::float4_e2m1>\(tl::load<2>", src), src


def test_narrow_fragment_rows_are_pairs():
    @T.prim_func
    def narrow(A: T.Tensor((128, 2), T.float32), B: T.Tensor((128, 2), T.float4_e2m1fn)):
        with T.Kernel(1, threads=128) as bx:
            y = T.alloc_fragment((128, 2), T.float4_e2m1fn)
            for i, j in T.Parallel(128, 2):
                y[i, j] = A[i, j]
            T.copy(y, B)

    src = tilec.compile(narrow, target="sm_90a").get_kernel_source()
    assert "tl::fp4_store(&y[0], tl::cast<tl::float4_e2m1>(tl::load<2>(&A[tx * 2])));" in src


def test_fp4_writes_are_pairs_with_vectorize_disabled():
    k = tilec.compile(copy_through_shared(64, 64), target="sm_90a",
                      pass_configs={"tl.disable_vectorize": True})
    src = k.get_kernel_source()
    assert "tl::fp4_store(&s[" in src and "tl::fp4_store(&B[" in src
    assert "tl::fp4_load<2>(" in src and "tl::fp4_load<16>(" not in src
