"""Known gaps of insert_syncs, kept as strict xfails so that a fix shows up (and the examples that work
around them can drop the workaround: examples/flash_decoding.py, examples/mla_decode.py)."""
import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available(), reason="NVRTC not found")


def _shared_p_loop(trip_count_from_memory):
    n_max = 8

    @T.prim_func
    def loop(A: T.Tensor((n_max * 64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
             lens: T.Tensor((1,), "int32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            acc2 = T.alloc_fragment((64, 64), "float32")
            T.copy(B, B_s)
            T.clear(acc2)
            for k in T.Pipelined(T.ceildiv(lens[0], 64) if trip_count_from_memory else n_max, num_stages=2):
                T.copy(A[k * 64:(k + 1) * 64, :], A_s)
                T.clear(acc)
                T.gemm(A_s, B_s, acc)
                T.copy(acc, S)
                T.gemm(S, B_s, acc2)
            T.copy(acc2, C)

    return loop


def _barrier_between_s_stores_and_gemm(func):
    src = tilec.compile(func, target="sm_80").get_kernel_source()
    body = src[src.index("for (int k"):]
    first_store = body.index("S[")
    return "__syncthreads" in body[first_store:body.index("tl::gemm_ss", first_store)]


def test_static_trip_count_orders_stores_before_gemm():
    assert _barrier_between_s_stores_and_gemm(_shared_p_loop(False))


@pytest.mark.xfail(strict=True, reason="insert_syncs treats a trip count read from memory as thread-divergent "
                                       "and, when the pipeline already put a barrier in the body, drops the "
                                       "barriers the body still needs (a data race, no error)")
def test_trip_count_read_from_memory_orders_stores_before_gemm():
    assert _barrier_between_s_stores_and_gemm(_shared_p_loop(True))
