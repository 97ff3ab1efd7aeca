"""TileLang's low-level synchronisation names: T.sync_threads(id, n) (a named barrier),
T.ptx_commit_group / T.ptx_wait_group (cp.async groups), T.fence_proxy_async, and the async
hints of T.Parallel (accepted; tilec picks the copy instruction)."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def test_async_hints_named_barrier_and_cp_async_groups():
    @T.prim_func
    def staged(A: T.Tensor((256,), T.float32), B: T.Tensor((256,), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            S = T.alloc_shared((256,), T.float32)
            for i in T.Parallel(256, prefer_async=True, annotations={"parallel_async_without_async_commit_wait": True}):
                S[i] = A[i]
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.fence_proxy_async()
            T.sync_threads(3, 256)
            for i in T.Parallel(256):
                B[i] = S[255 - i]

    src = tilec.compile(staged, target="sm_90a").get_kernel_source()
    for line in ("tl::cp_async_commit();", "tl::cp_async_wait(0);", "tl::fence_proxy_async();",
                 "tl::named_barrier_sync(3, 256);"):
        assert line in src, src


def test_named_barrier_arguments_are_checked():
    with pytest.raises(CompileError, match="thread count a positive multiple of 32"):
        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                T.sync_threads(0, 100)


def test_invert_is_bitwise_on_integers_in_helpers():
    def flip(x):
        return ~x

    @T.prim_func
    def inv(A: T.Tensor((128,), T.uint16), B: T.Tensor((128,), T.bool)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                A[i] = flip(A[i])
                B[i] = flip(B[i])

    text = inv.script()
    assert 'T.call_intrin("uint16", "tl.bitwise_not", A[i])' in text, text
    assert "not B[i]" in text
