"""tilec.ops.flash_attn without a GPU (skipped without torch): input errors are raised before any
compile or launch, the fake (meta) implementations give the right shapes and dtypes, autograd
reaches tilec::flash_attn_bwd, and torch.compile(fullgraph=True) captures one custom op.
The GPU side (values, gradients, compiled vs eager) is tests/gpu/test_flash_attn_op.py."""
import pytest

torch = pytest.importorskip("torch")
import tilec.ops  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

flash_attn = tilec.ops.flash_attn


def qkv(b=2, sq=100, h=8, d=64, skv=130, hkv=2, dtype=torch.float16, device="cpu", **kw):
    return (torch.empty(b, sq, h, d, dtype=dtype, device=device, **kw),
            torch.empty(b, skv, hkv, d, dtype=dtype, device=device, **kw),
            torch.empty(b, skv, hkv, d, dtype=dtype, device=device, **kw))


@pytest.mark.parametrize("mutate,exc,message", [
    (lambda q, k, v: (q[0], k, v), ValueError, r"q must have rank 4 \(batch, seq, heads, dim\), got rank 3"),
    (lambda q, k, v: (q, k, v.numpy()), TypeError, r"v must be a torch.Tensor, got ndarray"),
    (lambda q, k, v: (q.float(), k, v), TypeError, r"q must be float16 or bfloat16, got torch.float32"),
    (lambda q, k, v: (q, k.bfloat16(), v), TypeError, r"k must have q's dtype torch.float16, got torch.bfloat16"),
    (lambda q, k, v: (q, k, v[:, :120]), ValueError, r"k and v must have the same shape, got k \(2, 130, 2, 64\) "
                                                     r"and v \(2, 120, 2, 64\)"),
    (lambda q, k, v: (q, k[:1], v[:1]), ValueError, r"k and v must have q's batch size 2, got 1"),
    (lambda q, k, v: (q[..., :32], k, v), ValueError, r"k and v must have q's head dim 32, got 64"),
    (lambda q, k, v: (q[..., :32], k[..., :32], v[..., :32]), ValueError,
     r"head dim must be one of 64, 128, 256, got 32"),
    (lambda q, k, v: (q[:, :, :7], k, v), ValueError, r"k/v heads \(2\) must divide q's heads \(7\)"),
    (lambda q, k, v: (q[:, :40], k, v), ValueError,
     r"sequence lengths must be at least 64, got seq_q 40 and seq_kv 130"),
    (lambda q, k, v: (q, k, v), ValueError, r"q, k and v must be CUDA tensors on one device, got cpu, cpu, cpu"),
])
def test_input_errors(mutate, exc, message):
    with pytest.raises(exc, match=message):
        flash_attn(*mutate(*qkv()))


def test_option_errors():
    q, k, v = qkv()
    with pytest.raises(TypeError, match=r"causal must be a bool, got int"):
        flash_attn(q, k, v, causal=1)
    with pytest.raises(TypeError, match=r"scale must be a float or None, got str"):
        flash_attn(q, k, v, scale="0.1")
    with pytest.raises(ValueError, match=r"scale must be a finite positive number, got -1.0"):
        flash_attn(q, k, v, scale=-1.0)


def fake_cuda(fn):
    """Runs fn() under FakeTensorMode with fake CUDA tensors (no GPU needed on recent torch)."""
    try:
        with FakeTensorMode():
            torch.empty(1, device="cuda")
    except Exception as e:  # pragma: no cover - torch builds that cannot fake CUDA tensors
        pytest.skip(f"this torch cannot make fake CUDA tensors: {e}")
    with FakeTensorMode():
        return fn()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fake_shapes(dtype):
    def body():
        q, k, v = qkv(dtype=dtype, device="cuda")
        out = flash_attn(q, k, v, causal=True)
        o, lse = torch.ops.tilec.flash_attn_fwd(q, k, v, False, 0.125)
        dq, dk, dv = torch.ops.tilec.flash_attn_bwd(o, q, k, v, o, lse, False, 0.125)
        return out, o, lse, dq, dk, dv
    out, o, lse, dq, dk, dv = fake_cuda(body)
    for t, shape, dt in [(out, (2, 100, 8, 64), dtype), (o, (2, 100, 8, 64), dtype), (lse, (2, 8, 100), torch.float32),
                         (dq, (2, 100, 8, 64), dtype), (dk, (2, 130, 2, 64), dtype), (dv, (2, 130, 2, 64), dtype)]:
        assert tuple(t.shape) == shape and t.dtype == dt and t.device.type == "cuda"
        assert t.is_contiguous()


def test_autograd_reaches_the_backward_op_on_meta_tensors():
    # The ops' fake implementations serve the meta device: autograd runs end to end without a GPU.
    q, k, v = qkv(device="meta", requires_grad=True)
    o, lse = torch.ops.tilec.flash_attn_fwd(q, k, v, True, 0.125)
    assert o.requires_grad and o.grad_fn is not None
    o.sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape and v.grad.shape == v.shape
    assert k.grad.dtype == torch.float16


def test_torch_compile_fullgraph_captures_one_custom_op():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm

    def body():
        q, k, v = qkv(device="cuda")
        f = torch.compile(lambda q, k, v: flash_attn(q, k, v, causal=True) * 2, fullgraph=True, backend=backend)
        return f(q, k, v)
    out = fake_cuda(body)
    assert tuple(out.shape) == (2, 100, 8, 64)
    code = graphs[0].code
    assert code.count("torch.ops.tilec.flash_attn_fwd.default(") == 1, code
    assert "0.125" in code, code  # the default scale, 1/sqrt(64)


def test_torch_compile_joint_graph_has_the_backward_op():
    from torch._dynamo.backends.common import aot_autograd
    from functorch.compile import make_boxed_func

    graphs = {}

    def keep(name):
        def compiler(gm, example_inputs):
            graphs[name] = gm
            return make_boxed_func(gm)
        return compiler

    backend = aot_autograd(fw_compiler=keep("fw"), bw_compiler=keep("bw"))
    q, k, v = qkv(device="meta", requires_grad=True)
    f = torch.compile(lambda q, k, v: torch.ops.tilec.flash_attn_fwd(q, k, v, True, 0.125)[0].float().sum(),
                      fullgraph=True, backend=backend)
    f(q, k, v).backward()
    assert "torch.ops.tilec.flash_attn_fwd.default(" in graphs["fw"].code
    assert "torch.ops.tilec.flash_attn_bwd.default(" in graphs["bw"].code
    assert q.grad.shape == q.shape and k.grad.shape == k.shape
