"""TileLang's sm_100-only schedule / cluster-barrier names give clear CompileErrors (not "not a
tilec primitive"), called or with an attribute read, at the program's line."""
import pytest

import tilec.language as T
from tilec.errors import CompileError


def test_schedule_names_explain_themselves():
    with pytest.raises(CompileError, match="explicit warp-specialization schedule for sm_100") as e:
        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.Kernel(132, threads=128) as bid:
                sched = T.PersistentTileScheduler(4, 4, swizzle_size=8, name="sched")  # noqa: F841
    assert "T.PersistentTileScheduler" in str(e.value) and "T.Pipelined" in str(e.value)
    assert "test_sm100_names.py" in str(e.value)


def test_attribute_of_a_schedule_name():
    with pytest.raises(CompileError, match="T.WSSync belongs to"):
        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bid:
                T.WSSync.producer_acquire("smem", stage=0)


def test_cluster_barrier():
    with pytest.raises(CompileError, match="sm_100 cluster barrier") as e:
        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.Kernel(2, threads=128, cluster_dims=2) as bid:
                bar = T.alloc_cluster_barrier([1])  # noqa: F841
    assert "cluster_sync" in str(e.value)
