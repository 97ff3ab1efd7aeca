"""A T.prim_func with several T.Kernel blocks and T.alloc_global workspaces (TileLang's split +
combine kernels): compiled as one kernel per block over the function's parameters, run in order
by one MultiKernel whose parameters hide the workspaces (jit_multi.py)."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError
from tilec.jit_multi import MultiKernel, kernel_blocks


def _split_combine():
    @T.prim_func
    def split_combine(A: T.Tensor((4, 128), T.float32), C: T.Tensor((128,), T.float32)):
        partial = T.alloc_global((4, 128), T.float32)
        with T.Kernel(4, threads=128) as bx:
            for i in T.Parallel(128):
                partial[bx, i] = A[bx, i] * 2.0
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                C[i] = partial[0, i] + partial[1, i] + partial[2, i] + partial[3, i]

    return split_combine


def test_workspace_is_a_hidden_parameter_and_blocks_split():
    f = _split_combine()
    assert f.attrs["tilec.workspaces"] == "partial"
    header, common, blocks = kernel_blocks(f)
    assert len(blocks) == 2 and blocks[0][0].startswith("    with T.Kernel(4")
    assert header[-1].endswith("):")


def test_compiles_to_one_kernel_per_block():
    k = tilec.compile(_split_combine(), target="sm_90a", out_idx=[-1])
    assert isinstance(k, MultiKernel) and len(k.kernels) == 2
    assert [(p["name"], p["is_output"]) for p in k.params()] == [("A", False), ("C", True)]
    assert k.signature == "split_combine(A, C)"
    src = k.get_kernel_source()
    assert src.count("__global__") == 2 and "partial[" in src


def test_alloc_global_inside_a_kernel_is_an_error():
    with pytest.raises(CompileError, match="call it before `with T.Kernel`"):
        @T.prim_func
        def inside(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                W = T.alloc_global((128,), T.float32)


def test_alloc_buffer_at_function_level_is_a_workspace():
    @T.prim_func
    def staged(A: T.Tensor((128,), T.float32), C: T.Tensor((128,), T.float32)):
        S = T.alloc_buffer((128,), T.float32)
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                S[i] = A[i]
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                C[i] = S[i]

    assert staged.attrs["tilec.workspaces"] == "S"
