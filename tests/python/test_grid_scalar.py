"""A grid extent computed from a scalar kernel parameter (TileLang's varlen kernels:
`T.Kernel(T.ceildiv(max_seqlen, block_M), ...)` with `max_seqlen: T.int32`). The launch plan
takes grid extents from tensor dimensions, so the front end gives the grid a symbolic dimension
whose value is the length of a hidden int8 workspace that the MultiKernel allocates at each call
from the scalar's value (jit_multi.lift_grid_scalars)."""
import pytest

import tilec
import tilec.language as T
from tilec.jit_multi import MultiKernel, grid_scalars


def _varlen(block=128):
    N = T.dynamic("N")

    @T.prim_func
    def add_one(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), n: T.int32):
        with T.Kernel(T.ceildiv(n, block), 2, threads=block) as (bx, by):
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] + by

    return add_one


def test_grid_scalars_are_found_in_kernel_grids_only():
    assert grid_scalars(_varlen()) == ["n"]
    N = T.dynamic("N")

    @T.prim_func
    def body_only(A: T.Tensor((N,), T.float32), n: T.int32):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    A[bx * 128 + i] = 0.0

    assert grid_scalars(body_only) == []


def test_scalar_grid_compiles_with_the_signature_unchanged():
    k = tilec.compile(_varlen(), target="sm_90a")
    assert isinstance(k, MultiKernel)
    assert [p["name"] for p in k.params()] == ["A", "B", "n"]
    assert k.signature == "add_one(A, B, n)"
    plan = k.launch_plan_summary()
    assert "n_grid" in plan and "grid ((n_grid + 127) // 128, 2" in plan


def test_the_hidden_extent_is_allocated_from_the_scalar():
    torch = pytest.importorskip("torch")
    k = tilec.compile(_varlen(), target="sm_90a")
    calls = []

    class Recorder:
        def __init__(self, params):
            self._params = params

        def params(self):
            return self._params

        def __call__(self, *args):
            calls.append(args)

    k.kernels = [Recorder(k.kernels[0].params())]
    a = torch.zeros(1000)
    b = torch.zeros(1000)
    k(a, b, 300)
    (args,) = calls
    names = [p["name"] for p in k._all]
    assert names[:3] == ["A", "B", "n"] and len(args) == 4
    extent = args[names.index("n_grid_extent")]
    assert extent.dtype == torch.int8 and tuple(extent.shape) == (300,)
