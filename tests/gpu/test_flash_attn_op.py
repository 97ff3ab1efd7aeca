"""tilec.ops.flash_attn on the GPU: forward (and LSE) vs torch SDPA in float64, gradients vs torch
autograd of the float64 reference, and torch.compile(fullgraph=True) forward + backward vs eager.
Causal and not, GQA/MQA, ragged and short lengths, fp16 and bf16, head dims 64/128/256.
Run: PYTHONPATH=python python -m pytest -m gpu tests/gpu/test_flash_attn_op.py -v"""
import importlib.util
import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
import tilec.ops  # noqa: E402

pytestmark = pytest.mark.gpu

# Forward: output vs the float64 reference (as examples/_harness.py).
FWD_TOL = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
# Gradients grow with the sequence length: max error relative to the reference's largest element
# (as examples/flash_attention_bwd.py).
GRAD_TOL = {torch.float16: 1e-2, torch.bfloat16: 3e-2}

# (batch, heads, heads_kv, seq_q, seq_kv, dim, causal, dtype)
CASES = [
    (2, 4, 4, 256, 256, 64, False, torch.float16),
    (2, 4, 4, 256, 256, 64, True, torch.float16),
    (1, 8, 2, 333, 333, 64, False, torch.bfloat16),     # GQA 4:1, ragged
    (2, 6, 3, 401, 390, 128, True, torch.float16),      # GQA 2:1, causal, fewer keys than queries
    (1, 8, 8, 200, 517, 128, True, torch.bfloat16),     # causal, more keys than queries (some never seen)
    (1, 4, 1, 300, 77, 64, False, torch.float16),       # MQA, short keys
    (2, 4, 2, 100, 100, 128, True, torch.bfloat16),     # short queries: 64-row query blocks
    (1, 4, 4, 64, 64, 64, False, torch.float16),        # the shortest sequences taken
    (1, 4, 2, 300, 250, 256, False, torch.bfloat16),    # head dim 256
    (1, 2, 2, 256, 256, 256, True, torch.float16),
]


def case_id(c):
    b, h, hkv, sq, skv, d, causal, dt = c
    return f"b{b}-h{h}/{hkv}-s{sq}/{skv}-d{d}-{'causal' if causal else 'full'}-{str(dt)[6:]}"


def make_inputs(b, h, hkv, sq, skv, d, dtype, requires_grad=False, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, sq, h, d, dtype=dtype, device="cuda", generator=g)
    k, v = (torch.randn(b, skv, hkv, d, dtype=dtype, device="cuda", generator=g) for _ in range(2))
    return [t.requires_grad_(requires_grad) for t in (q, k, v)]


def reference(q, k, v, causal, scale=None):
    """SDPA in float64 on (batch, heads, seq, dim) views, K/V heads repeated for GQA; causal top-left
    aligned (query i sees keys j <= i), as an explicit mask so the alignment is not left to SDPA."""
    groups = q.shape[2] // k.shape[2]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k.repeat_interleave(groups, 2), v.repeat_interleave(groups, 2)))
    mask = None
    if causal:
        mask = torch.ones(q.shape[1], k.shape[1], dtype=torch.bool, device=q.device).tril()
    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale).transpose(1, 2)


def reference_lse(q, k, causal, scale):
    groups = q.shape[2] // k.shape[2]
    s = q.transpose(1, 2) @ k.repeat_interleave(groups, 2).transpose(1, 2).transpose(-1, -2) * scale
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril(), float("-inf"))
    return torch.logsumexp(s, dim=-1)  # (batch, heads, seq_q)


def rel_err(got, want):
    return (got.double() - want).abs().max().item() / max(want.abs().max().item(), 1e-6)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_matches_sdpa_float64(case):
    b, h, hkv, sq, skv, d, causal, dtype = case
    q, k, v = make_inputs(b, h, hkv, sq, skv, d, dtype)
    out = tilec.ops.flash_attn(q, k, v, causal=causal)
    assert out.shape == q.shape and out.dtype == dtype
    torch.cuda.synchronize()
    ref = reference(q.double(), k.double(), v.double(), causal)
    rtol, atol = FWD_TOL[dtype]
    torch.testing.assert_close(out.double(), ref, rtol=rtol, atol=atol)
    scale = 1 / math.sqrt(d)
    _, lse = torch.ops.tilec.flash_attn_fwd(q, k, v, causal, scale)
    torch.testing.assert_close(lse.double(), reference_lse(q.double(), k.double(), causal, scale), rtol=1e-3, atol=2e-3)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_backward_matches_float64_autograd(case):
    b, h, hkv, sq, skv, d, causal, dtype = case
    q, k, v = make_inputs(b, h, hkv, sq, skv, d, dtype, requires_grad=True)
    dout = torch.randn(b, sq, h, d, dtype=dtype, device="cuda")
    out = tilec.ops.flash_attn(q, k, v, causal=causal)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    refs = torch.autograd.grad(reference(q64, k64, v64, causal), (q64, k64, v64), dout.double())
    tol = GRAD_TOL[dtype]
    for name, got, want in zip(("dq", "dk", "dv"), grads, refs):
        assert got.shape == want.shape and got.dtype == dtype, name
        assert torch.isfinite(got).all(), f"{name} has non-finite values"
        err = rel_err(got, want)
        assert err <= tol, f"{name}: max error {err:.2e} of its largest element (tolerance {tol})"


@pytest.mark.parametrize("causal", [False, True])
def test_explicit_scale(causal):
    q, k, v = make_inputs(1, 4, 2, 192, 160, 64, torch.float16, requires_grad=True)
    out = tilec.ops.flash_attn(q, k, v, causal=causal, scale=0.3)
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref = reference(q64, k64, v64, causal, scale=0.3)
    torch.testing.assert_close(out.double(), ref.detach(), rtol=1e-2, atol=1e-2)
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    refs = torch.autograd.grad(ref, (q64, k64, v64), dout.double())
    for got, want in zip(grads, refs):
        assert rel_err(got, want) <= GRAD_TOL[torch.float16]


def test_non_contiguous_inputs_and_gradients():
    # q, k, v as (batch, seq, heads, dim) views of (batch, heads, seq, dim) tensors; out.sum()'s
    # gradient is an expanded (stride 0) tensor.
    qh, kh, vh = (torch.randn(2, 4, 256, 64, dtype=torch.float16, device="cuda", requires_grad=True) for _ in range(3))
    q, k, v = (x.transpose(1, 2) for x in (qh, kh, vh))
    out = tilec.ops.flash_attn(q, k, v, causal=True)
    out.float().sum().backward()
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref = reference(q64, k64, v64, True)
    ref.sum().backward()
    torch.testing.assert_close(out.double(), ref.detach(), rtol=1e-2, atol=1e-2)
    for got, want in ((qh.grad, q64.grad), (kh.grad, k64.grad), (vh.grad, v64.grad)):
        assert rel_err(got.transpose(1, 2), want) <= GRAD_TOL[torch.float16]


def test_kernels_are_compiled_once_per_specialization():
    from tilec.ops import attention

    q, k, v = make_inputs(1, 2, 2, 128, 128, 64, torch.float16)
    tilec.ops.flash_attn(q, k, v)
    n = len(attention._cache)
    tilec.ops.flash_attn(*make_inputs(1, 2, 2, 128, 128, 64, torch.float16, seed=1))
    assert len(attention._cache) == n
    tilec.ops.flash_attn(q, k, v, causal=True)
    assert len(attention._cache) == n + 1


BACKENDS = ["aot_eager", "inductor"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
def test_torch_compile_fullgraph_matches_eager(backend, causal):
    if backend == "inductor" and importlib.util.find_spec("triton") is None:
        pytest.skip("inductor needs triton")
    torch._dynamo.reset()

    def attn_block(q, k, v, w):  # ops around the custom op, so the graph has something to fuse
        out = tilec.ops.flash_attn(q * 1.0, k, v, causal=causal)
        return (out.float() * w).sum()

    compiled = torch.compile(attn_block, fullgraph=True, backend=backend)
    q, k, v = make_inputs(2, 8, 2, 200, 333, 128, torch.bfloat16, requires_grad=True)
    w = torch.randn(2, 200, 8, 128, device="cuda")
    results = []
    for fn in (attn_block, compiled):
        for x in (q, k, v):
            x.grad = None
        loss = fn(q, k, v, w)
        loss.backward()
        results.append((loss.detach(), q.grad.clone(), k.grad.clone(), v.grad.clone()))
    (l0, *g0), (l1, *g1) = results
    torch.testing.assert_close(l1, l0, rtol=1e-4, atol=1e-3)
    for name, a, b in zip(("dq", "dk", "dv"), g1, g0):  # dq accumulates with atomics: order may differ
        assert rel_err(a, b.double()) <= 1e-2, name
