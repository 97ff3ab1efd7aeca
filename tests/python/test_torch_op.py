"""kernel.as_torch_op: a compiled kernel as a torch custom operator (schema, fake
implementation, tracing without a GPU). The GPU side runs in tests/gpu/test_torch_op_gpu.py."""
import pytest

import tilec
import tilec.language as T

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

N = T.dynamic("n")


@T.prim_func
def add(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]


@T.prim_func
def rowsum_and_half(X: T.Tensor((N, 64), "float16"), S: T.Tensor((N,), "float32"),
                    H: T.Tensor((N, 64), "bfloat16")):
    with T.Kernel(T.ceildiv(N, 64), threads=128) as bx:
        xs = T.alloc_fragment((64, 64), "float32")
        s = T.alloc_fragment((64,), "float32")
        T.copy(X[bx * 64, 0], xs)
        T.reduce_sum(xs, s, dim=1)
        T.copy(s, S[bx * 64])
        for i, j in T.Parallel(64, 64):
            xs[i, j] = xs[i, j] * 0.5
        T.copy(xs, H[bx * 64, 0])


@T.prim_func
def scale_in_place(X: T.Tensor((N,), "float32"), alpha: T.float32):
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            X[bx * 128 + i] = X[bx * 128 + i] * alpha


def _fake(*shapes_dtypes):
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    return mode, [mode.from_tensor(torch.empty(s, dtype=d)) for s, d in shapes_dtypes]


def test_fake_implementation_gives_the_outputs_shapes_from_the_inputs():
    op = tilec.compile(add, out_idx=[-1], target="sm_80").as_torch_op("tilec_test::add")
    mode, (a, b) = _fake(((1000,), torch.float32), ((1000,), torch.float32))
    with mode:
        c = op(a, b)
    assert c.shape == (1000,) and c.dtype == torch.float32
    # Two outputs of other dtypes; the symbol n from X's first dimension.
    op2 = tilec.compile(rowsum_and_half, out_idx=[1, 2], target="sm_80").as_torch_op("tilec_test::rowsum_half")
    mode, (x,) = _fake(((192, 64), torch.float16))
    with mode:
        s, h = op2(x)
    assert (s.shape, s.dtype, h.shape, h.dtype) == ((192,), torch.float32, (192, 64), torch.bfloat16)


def test_schema_names_inputs_scalars_and_mutated_tensors():
    op = tilec.compile(scale_in_place, target="sm_80").as_torch_op("tilec_test::scale_", mutates=("X",))
    schema = str(op._opoverload._schema)
    assert "Tensor(a!) X" in schema and "float alpha" in schema and schema.endswith("-> ()"), schema


def test_traced_graph_calls_the_operator_once():
    from torch.fx.experimental.proxy_tensor import make_fx

    op = tilec.compile(add, out_idx=[-1], target="sm_80").as_torch_op("tilec_test::add_traced")
    g = make_fx(lambda a, b: op(a, b) * 2, tracing_mode="symbolic")(torch.randn(10), torch.randn(10))
    calls = [n for n in g.graph.nodes if n.op == "call_function" and "add_traced" in str(n.target)]
    assert len(calls) == 1, g.code


def test_registration_errors():
    k = tilec.compile(add, out_idx=[-1], target="sm_80")
    with pytest.raises(ValueError, match="namespace::op"):
        k.as_torch_op("no_namespace")
    with pytest.raises(ValueError, match="mutates names 'Z'"):
        k.as_torch_op("tilec_test::bad", mutates=("Z",))
    op = k.as_torch_op("tilec_test::twice")
    assert k.as_torch_op("tilec_test::twice") is op  # the same kernel again: the same operator
    other = tilec.compile(scale_in_place, target="sm_80")
    with pytest.raises(ValueError, match="already registered for another kernel"):
        other.as_torch_op("tilec_test::twice", mutates=("X",))


def test_an_output_dimension_no_input_determines_is_refused():
    M = T.dynamic("m")

    @T.prim_func
    def spread(A: T.Tensor((N,), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
            for i in T.Parallel(128):
                C[bx * 128 + i] = A[0]

    with pytest.raises(ValueError, match="dimension 'm', which no input's shape and no scalar parameter determines"):
        tilec.compile(spread, out_idx=[-1], target="sm_80").as_torch_op("tilec_test::spread")
