"""float4_e2m1 on the GPU: DeepSeek-V4's act_quant kernel (bf16 -> float4_e2m1fn, packed two
a byte, with a power-of-two float32 scale per 32 elements) against a torch reference that
rounds as the hardware does (nearest, ties to the even code), compared bit for bit as uint8;
and a float4_e2m1fn_x2 input read back as float32. Outputs come back as torch
float4_e2m1fn_x2 with the last dimension halved."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_fp4 import act_quant  # noqa: E402  (the kernel, shared with the CPU tests)

pytestmark = pytest.mark.gpu

# Magnitudes of codes 0..7; codes 8..15 are their negatives.
E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1_codes(y: torch.Tensor) -> torch.Tensor:
    """float32 -> 4-bit codes (uint8): round to nearest, ties to the even code, saturate at 6,
    the sign of zero kept. Midpoints 0.25, 1.25, 2.5, 5 round down; 0.75, 1.75, 3.5 round up."""
    a = y.abs()
    code = torch.zeros_like(a, dtype=torch.int32)
    for bound, tie_up in ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True),
                          (5.0, False)):
        code += (a >= bound if tie_up else a > bound).to(torch.int32)
    code = torch.where(torch.signbit(y), code + 8, code)
    return code.to(torch.uint8)


def pack_pairs(codes: torch.Tensor) -> torch.Tensor:
    """(..., 2n) codes -> (..., n) bytes: element 2k in the low nibble, 2k + 1 in the high one."""
    pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).to(torch.uint8)


def act_quant_reference(x: torch.Tensor, block: int = 32):
    M, N = x.shape
    xf = x.float().reshape(M, N // block, block)
    amax = xf.abs().amax(dim=-1).clamp(min=6 * 2.0**-126)
    # The kernel's scale: 2^ceil(log2(amax * float32(1/6))) from the float32 bits.
    t = amax * torch.tensor(1.0 / 6.0, dtype=torch.float32, device=x.device)
    bits = t.view(torch.int32)
    e = ((bits >> 23) & 0xFF) - 127 + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    scale = ((e + 127) << 23).view(torch.float32)
    y = (xf / scale.unsqueeze(-1)).clamp(-6.0, 6.0).reshape(M, N)
    return pack_pairs(e2m1_codes(y)), scale


@pytest.mark.parametrize("M", [256, 100])  # 100: a partial last tile (the pairwise bounds path)
def test_act_quant_bit_exact(M):
    N = 1024
    torch.manual_seed(0)
    x = torch.randn(M, N, dtype=torch.bfloat16, device="cuda")
    # Exact midpoints and saturation in the first rows: scale 1 (amax 6 -> 2^ceil(log2 1) = 1).
    special = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5,
                            -5.0, -6.0] * 2, dtype=torch.bfloat16, device="cuda")
    x[0, :32] = special
    x[1, :32] = -special
    kernel = tilec.compile(act_quant(N=N), target="auto", out_idx=[1, 2])
    quant, scale = kernel(x)
    assert quant.dtype == torch.float4_e2m1fn_x2 and tuple(quant.shape) == (M, N // 2)
    ref_bytes, ref_scale = act_quant_reference(x)
    torch.testing.assert_close(scale, ref_scale, rtol=0, atol=0)
    got = quant.view(torch.uint8)
    mismatch = (got != ref_bytes).nonzero()
    assert mismatch.numel() == 0, f"{mismatch.shape[0]} bytes differ, first at {mismatch[:4].tolist()}: " \
                                  f"got {got[tuple(mismatch[0])].item():#04x}, want {ref_bytes[tuple(mismatch[0])].item():#04x}"
    # The midpoint row: ties to even.
    assert got[0, :8].tolist() == pack_pairs(torch.tensor([[0, 2, 2, 4, 4, 6, 6, 7, 8, 10, 10, 12, 12, 14, 14, 15]],
                                                          dtype=torch.uint8)).tolist()[0]


def test_packed_input_reads_back_as_float():
    M, N = 64, 128

    @T.prim_func
    def widen(q: T.Tensor((M, N), T.float4_e2m1fn), out: T.Tensor((M, N), T.float32)):
        with T.Kernel(M // 32, threads=128) as bx:
            for i, j in T.Parallel(32, N):
                out[bx * 32 + i, j] = T.cast(q[bx * 32 + i, j], T.float32)

    kernel = tilec.compile(widen, target="auto", out_idx=[1])
    codes = torch.randint(0, 16, (M, N), dtype=torch.uint8, device="cuda")
    packed = pack_pairs(codes).view(torch.float4_e2m1fn_x2)
    out = kernel(packed)
    table = torch.tensor(E2M1_VALUES + [-v for v in E2M1_VALUES], dtype=torch.float32, device="cuda")
    expected = table[codes.long()]
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert torch.equal(torch.signbit(out), torch.signbit(expected))
