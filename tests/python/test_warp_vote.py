"""Warp votes, ballots, counting block barriers and warp reductions of one value (upstream
TileLang's T.any_sync / all_sync / ballot_sync / ballot / activemask / syncthreads_count / _and /
_or / __ffs / __fns and T.warp_reduce_sum / max / min / bitand / bitor), without a GPU: the
programs of upstream's test_tilelang_language_warp_vote.py and _warp_reduce.py compile with
NVRTC to the PTX instructions they stand for; predicates must be integers or booleans. The GPU
runs them against torch in tests/gpu/test_warp_vote_gpu.py."""
import re

import pytest

import tilec
import tilec.language as T

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def votes():
    """One warp: A = any/all votes as bits, B = ballots and the active mask, C = the lowest set
    bit, the counting barriers and __fns, each scaled into its own decimal digits."""
    @T.prim_func
    def vote(A: T.Tensor((32,), "int32"), B: T.Tensor((3, 32), "int64"), C: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding(0)
            A[tx] = T.if_then_else(T.any_sync(tx == 0) != 0, 1, 0) + T.if_then_else(T.all_sync(1) != 0, 2, 0) + \
                T.if_then_else(T.all_sync(tx < 16) != 0, 4, 0)
            B[0, tx] = T.ballot_sync(tx >= 7)
            B[1, tx] = T.ballot(tx < 3)
            B[2, tx] = T.activemask()
            C[tx] = T.__ffs(T.ballot_sync(tx >= 7)) - 1 + 100 * T.syncthreads_count(tx < 5) + \
                T.if_then_else(T.syncthreads_and(tx < 40) != 0, 1000, 0) + \
                T.if_then_else(T.syncthreads_or(tx == 31) != 0, 10000, 0) + \
                100000 * T.cast(T.__fns(T.uint32(0xF0), 0, 1), "int32")

    return vote


# What votes() writes in every lane (the GPU test compares with it).
VOTES_A = 1 + 2
VOTES_B = [0xFFFFFF80, 0x7, 0xFFFFFFFF]
VOTES_C = 7 + 100 * 5 + 1000 + 10000 + 100000 * 4


def warp_reduce(op, dtype):
    @T.prim_func
    def main(x: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            v = T.alloc_local([1], dtype)
            v[0] = x[tx]
            r = T.alloc_local([1], dtype)
            if op == "sum":
                r[0] = T.warp_reduce_sum(v[0])
            elif op == "max":
                r[0] = T.warp_reduce_max(v[0])
            elif op == "min":
                r[0] = T.warp_reduce_min(v[0])
            elif op == "bitand":
                r[0] = T.warp_reduce_bitand(v[0])
            else:
                r[0] = T.warp_reduce_bitor(v[0])
            x[tx] = r[0]

    return main


@needs_nvrtc
def test_votes_and_counting_barriers_compile_to_their_instructions():
    kernel = tilec.compile(votes(), target="sm_90a")
    src, ptx = kernel.get_kernel_source(), kernel.get_ptx()
    for call in ("tl::any_sync(", "tl::all_sync(", "tl::ballot_sync(", "tl::activemask()", "tl::ffs(",
                 "tl::syncthreads_count(", "tl::syncthreads_and(", "tl::syncthreads_or(", "tl::fns("):
        assert call in src, call
    for pattern in (r"vote\.sync\.any\.pred", r"vote\.sync\.all\.pred", r"vote\.sync\.ballot\.b32",
                    r"activemask\.b32", r"bar\.red\.popc\.u32", r"bar\.red\.and\.pred", r"bar\.red\.or\.pred",
                    r"fns\.b32"):
        assert re.search(pattern, ptx), pattern


@needs_nvrtc
@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("max", "float32"), ("min", "float16"),
                                      ("bitand", "int32"), ("bitor", "int32"), ("sum", "int64")])
def test_warp_reductions_are_butterflies_of_shuffles(op, dtype):
    kernel = tilec.compile(warp_reduce(op, dtype), target="sm_90a")
    assert f"tl::warp_reduce_{op}<32>(" in kernel.get_kernel_source()
    assert len(re.findall(r"shfl\.sync\.bfly", kernel.get_ptx())) >= 5


@pytest.mark.parametrize("intrinsic", ["any_sync", "all_sync", "ballot_sync", "ballot", "syncthreads_count",
                                       "syncthreads_and", "syncthreads_or"])
def test_a_float_predicate_is_refused(intrinsic):
    with pytest.raises(tilec.CompileError, match=f"T.{intrinsic} requires an integer or boolean predicate"):
        getattr(T, intrinsic)(T.float32(0.5))


def test_bit_reductions_take_integers():
    with pytest.raises(tilec.CompileError, match="T.warp_reduce_bitand takes an integer value, got float32"):
        warp_reduce("bitand", "float32")


def elect(n):
    @T.prim_func
    def main(O: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding(0)
            O[tx] = T.if_then_else(T.shuffle_elect(n), 1, 0)

    return main


@pytest.mark.parametrize("n, condition", [(0, "tx == 0"), (32, "tx % 32 == 0"), (128, "tx % 128 == 0")])
def test_shuffle_elect_picks_the_first_thread_of_each_group(n, condition):
    assert f"T.if_then_else({condition}, 1, 0)" in elect(n).script()


def test_shuffle_elect_of_a_negative_group_and_ffs_of_a_float_are_errors():
    with pytest.raises(tilec.CompileError, match=r"T.shuffle_elect\(-1\): the group size is 0 \(the block\) or positive"):
        elect(-1)
    with pytest.raises(tilec.CompileError, match="T.__ffs takes a 32- or 64-bit integer, got float32"):
        T.__ffs(T.float32(1.0))
