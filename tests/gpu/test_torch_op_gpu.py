"""kernel.as_torch_op on the GPU: eager calls, torch.compile(fullgraph=True), in-place kernels and
CUDA graphs against torch references (the CPU side: tests/python/test_torch_op.py)."""
import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

pytestmark = pytest.mark.gpu

N = T.dynamic("n")


@T.prim_func
def add(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]


@T.prim_func
def scale_in_place(X: T.Tensor((N,), "float32"), alpha: T.float32):
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            X[bx * 128 + i] = X[bx * 128 + i] * alpha


def test_eager_and_compiled_calls_match_torch():
    op = tilec.compile(add, out_idx=[-1], target="auto").as_torch_op("tilec_gpu_test::add")
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    torch.testing.assert_close(op(a, b), a + b)

    def f(a, b):
        return op(a, b).relu() * 2

    compiled = torch.compile(f, fullgraph=True)
    for n in (1000, 4097):  # a second size: the fake implementation binds n from the input
        a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        torch.testing.assert_close(compiled(a, b), f(a, b))


def test_in_place_kernel_mutates_its_argument_under_compile():
    op = tilec.compile(scale_in_place, target="auto").as_torch_op("tilec_gpu_test::scale_", mutates=("X",))
    x = torch.randn(777, device="cuda")
    ref = x * 3.0

    def f(x):
        op(x, 3.0)
        return x + 1

    out = torch.compile(f, fullgraph=True)(x)
    torch.testing.assert_close(x, ref)
    torch.testing.assert_close(out, ref + 1)


def test_operator_in_a_cuda_graph():
    op = tilec.compile(add, out_idx=[-1], target="auto").as_torch_op("tilec_gpu_test::add_graph")
    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        op(a, b)  # warm-up outside the capture (compiles, loads)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = op(a, b)
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)
