"""insert_syncs in loops whose trip count reads memory (formerly strict xfails: the barriers such a
loop needs were dropped silently when the pipeline had already put one in it).

A read of a tensor the kernel never writes, at an index that is the same for every thread, is the
same for every thread: `T.ceildiv(lens[0], 64)` bounds an ordinary loop and gets its barriers. A
trip count that really depends on the thread (`lens[tx]`) is a clear error, never a silent race.
The examples examples/flash_decoding.py and examples/mla_decode.py keep a static trip count
(ceil(max_pages / num_split) with masking) that predates this; it is no longer needed."""
import re

import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

TARGETS = ["sm_80", "sm_90a"]


def _shared_p_loop(trip_count):
    """A pipelined loop whose body stores S (every thread) and then feeds S to a gemm.
    trip_count: "static", "memory" (lens[0]) or "per_thread" (lens[tx])."""
    n_max = 8

    @T.prim_func
    def loop(A: T.Tensor((n_max * 64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
             lens: T.Tensor((128,), "int32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            acc2 = T.alloc_fragment((64, 64), "float32")
            T.copy(B, B_s)
            T.clear(acc2)
            n = {"static": n_max, "memory": T.ceildiv(lens[0], 64), "per_thread": T.ceildiv(lens[tx], 64)}[trip_count]
            for k in T.Pipelined(n, num_stages=2):
                T.copy(A[k * 64:(k + 1) * 64, :], A_s)
                T.clear(acc)
                T.gemm(A_s, B_s, acc)
                T.copy(acc, S)
                T.gemm(S, B_s, acc2)
            T.copy(acc2, C)

    return loop


def _barrier_between_s_stores_and_gemm(func, target):
    # sm_90a specializes warps: the loop that stores S is the consumers' (named barriers).
    src = tilec.compile(func, target=target).get_kernel_source()
    first_store = re.compile(r"(?<!\w)S\[").search(src)
    gemm = re.compile(r"tl::\w*gemm\w*").search(src, first_store.start())
    assert gemm, src
    between = src[first_store.start():gemm.start()]
    return "__syncthreads" in between or "tl::named_barrier_sync" in between


@pytest.mark.parametrize("target", TARGETS)
def test_static_trip_count_orders_stores_before_gemm(target):
    assert _barrier_between_s_stores_and_gemm(_shared_p_loop("static"), target)


@pytest.mark.parametrize("target", TARGETS)
def test_trip_count_read_from_memory_orders_stores_before_gemm(target):
    assert _barrier_between_s_stores_and_gemm(_shared_p_loop("memory"), target)


@pytest.mark.parametrize("target", TARGETS)
def test_trip_count_that_depends_on_the_thread_is_an_error(target):
    with pytest.raises(tilec.CompileError, match="trip count depends on the thread index"):
        tilec.compile(_shared_p_loop("per_thread"), target=target)


def _cross_thread_reduction_loop(trip_count):
    """A loop whose body reduces a fragment across threads (through a shared workspace)."""
    n_max = 8

    @T.prim_func
    def loop(A: T.Tensor((n_max * 64, 64), "float32"), lens: T.Tensor((128,), "int32"),
             C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            a = T.alloc_fragment((64, 64), "float32")
            colsum = T.alloc_fragment((64,), "float32")
            total = T.alloc_fragment((64,), "float32")
            T.clear(total)
            n = {"static": n_max, "memory": T.ceildiv(lens[0], 64), "per_thread": T.ceildiv(lens[tx], 64)}[trip_count]
            for k in T.serial(n):
                T.copy(A[k * 64:(k + 1) * 64, :], a)
                T.reduce_sum(a, colsum, dim=0)
                for j in T.Parallel(64):
                    total[j] += colsum[j]
            T.copy(total, C)

    return loop


def _barriers_in_loop(func, target):
    src = tilec.compile(func, target=target).get_kernel_source()
    return src[src.index("for (int k"):].count("__syncthreads")


@pytest.mark.parametrize("target", TARGETS)
def test_trip_count_read_from_memory_keeps_the_reduction_barriers(target):
    static = _barriers_in_loop(_cross_thread_reduction_loop("static"), target)
    assert static > 0
    assert _barriers_in_loop(_cross_thread_reduction_loop("memory"), target) == static


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_in_a_loop_whose_trip_count_depends_on_the_thread_is_an_error(target):
    with pytest.raises(tilec.CompileError, match="trip count depends on the thread index"):
        tilec.compile(_cross_thread_reduction_loop("per_thread"), target=target)
