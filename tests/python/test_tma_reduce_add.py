"""T.atomic_add of a whole shared tile into global memory: on sm_90a one TMA reduce-add
(cp.reduce.async.bulk.tensor .add) per box issued by one thread, for float32 / float16 /
bfloat16 in the shapes TMA copies; otherwise (sm_80, a fragment value, other types, TMA off)
an atomic per element."""
import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _add_tile(dtype="float32", rows=200, cols=128, value_scope="shared"):
    @T.prim_func
    def f(A: T.Tensor((rows, cols), dtype), Acc: T.Tensor((rows, cols), dtype)):
        with T.Kernel(T.ceildiv(rows, 64), 2, threads=128) as (bx, by):
            if value_scope == "shared":
                S = T.alloc_shared((64, cols), dtype)
            else:
                S = T.alloc_fragment((64, cols), dtype)
            T.copy(A[bx * 64, 0], S)
            # both blocks of a column add the same rows: the adds must be atomic
            T.atomic_add(Acc[bx * 64:(bx + 1) * 64, :], S)

    return f


def _source(func, target="sm_90a", **cfg):
    return tilec.compile(func, target=target, pass_configs=cfg).get_kernel_source()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_shared_tile_is_one_tma_reduce_add_per_box(dtype):
    k = tilec.compile(_add_tile(dtype), target="sm_90a")
    src, ptx = k.get_kernel_source(), k.get_ptx()
    adds = src.count("tl::tma_reduce_add(tma_Acc,")
    assert adds == 128 * T_bytes(dtype) // 128, src  # one box per 128-byte swizzle span of a row
    # one thread issues, after the writers' fence and barrier; it waits until the tile is read
    body = src[src.index("tl::fence_proxy_async();"):]
    assert body.index("__syncthreads();") < body.index("if (tx == 0) {") < body.index("tl::tma_reduce_add(")
    assert body.index("tl::tma_store_commit();") < body.index("tl::tma_store_wait_read<0>();")
    assert "atomicAdd" not in src and "tl::atomic_add" not in src, src
    assert "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group" in ptx


def T_bytes(dtype):
    return {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]


@pytest.mark.parametrize("case", ["sm80", "fragment", "int32", "tma_off"])
def test_other_atomics_stay_per_element(case):
    func = {"sm80": _add_tile(), "fragment": _add_tile(value_scope="fragment"), "int32": _add_tile("int32"),
            "tma_off": _add_tile()}[case]
    src = _source(func, "sm_80" if case == "sm80" else "sm_90a",
                  **({"tl.disable_tma_lower": True} if case == "tma_off" else {}))
    assert "tma_reduce_add" not in src, src
    assert "tl::atomic_add" in src, src
