"""Thread-index branches holding tile ops (TileLang's spelling of roles, `if tx < 32: ... else:`)
in blocks whose roles are whole warps rather than warp groups (upstream's DeepSeek mHC kernel:
96 threads, one warp for the sinkhorn, two for the mix). Each branch's tile ops run on its own
threads; the block's writes before the split reach the roles through one barrier; buffers of
roles that run at the same time do not share shared memory."""
import re

import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _split_by_warps():
    @T.prim_func
    def roles(A: T.Tensor((24,), T.float32), X: T.Tensor((4, 512), T.float32), S: T.Tensor((4,), T.float32),
              Y: T.Tensor((512,), T.float32)):
        with T.Kernel(1, threads=96) as bx:
            a = T.alloc_fragment((24,), T.float32)
            a_shared = T.alloc_shared((24,), T.float32)
            T.copy(A, a)
            T.copy(a, a_shared)
            tx = T.get_thread_binding()
            if tx < 32:
                s = T.alloc_fragment((4,), T.float32)
                for j in T.Parallel(4):
                    s[j] = a_shared[j] * 2.0
                T.copy(s, S)
            else:
                xs = T.alloc_shared((4, 512), T.float32)
                xl = T.alloc_fragment((4, 512), T.float32)
                y = T.alloc_fragment((512,), T.float32)
                T.copy(X, xs)
                T.copy(xs, xl)
                T.reduce_sum(xl, y, dim=0)
                for i in T.Parallel(512):
                    y[i] = y[i] + a_shared[4]
                T.copy(y, Y)

    return roles


def test_warp_roles_run_their_tile_ops_on_their_own_threads():
    src = tilec.compile(_split_by_warps(), target="sm_90a").get_kernel_source()
    # The second role's 64 threads count from thread 32 and synchronise among themselves.
    assert "tx - 32" in src or "tx * 4 - 128" in src or "tx + -32" in src, src
    assert "tl::named_barrier_sync(2, 64);" in src, src
    assert "__syncthreads();\n  if (tx < 32) {" in src, src  # a_shared reaches both roles


def test_buffers_of_concurrent_roles_do_not_share_bytes():
    src = tilec.compile(_split_by_warps(), target="sm_90a").get_kernel_source()
    offsets = dict(re.findall(r"float\* (\w+) = reinterpret_cast<float\*>\(tilec_smem \+ (\d+)\);", src))
    a, x = int(offsets["a_shared"]), int(offsets["xs"])
    assert a >= x + 4 * 512 * 4 or x >= a + 24 * 4, offsets  # a_shared is read while xs is written


def test_one_block_barrier_before_a_chain_and_none_inside():
    @T.prim_func
    def chain(A: T.Tensor((96,), T.float32), B: T.Tensor((96,), T.float32)):
        with T.Kernel(1, threads=96) as bx:
            a_shared = T.alloc_shared((96,), T.float32)
            T.copy(A, a_shared)
            tx = T.get_thread_binding()
            if tx < 32:
                f = T.alloc_fragment((32,), T.float32)
                T.copy(a_shared[0:32], f)
                T.copy(f, B[0:32])
            elif tx < 64:
                g = T.alloc_fragment((32,), T.float32)
                T.copy(a_shared[32:64], g)
                T.copy(g, B[32:64])
            else:
                h = T.alloc_fragment((32,), T.float32)
                T.copy(a_shared[64:96], h)
                T.copy(h, B[64:96])

    src = tilec.compile(chain, target="sm_90a").get_kernel_source()
    head, roles = src.split("if (tx < 32) {", 1)
    assert head.rstrip().endswith("__syncthreads();"), src
    assert "__syncthreads" not in roles, src  # only part of the block runs each branch
    assert "} else if (tx < 64) {" in roles, src


def _fragment_across_the_split(n):
    @T.prim_func
    def f(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=96) as bx:
            a = T.alloc_fragment((n,), T.float32)
            T.copy(A, a)
            tx = T.get_thread_binding()
            if tx < 32:
                T.copy(a, B)

    return f


def test_a_fragment_the_branch_threads_do_not_all_hold_is_an_error():
    # 384 elements over all 96 threads: the first warp alone cannot store them (before, 2/3 of B
    # were silently never written).
    with pytest.raises(tilec.CompileError, match=r"fragment 'a' is used in the branch run by threads \[0, 32\) "
                                                 r"and also outside it"):
        tilec.compile(_fragment_across_the_split(384), target="sm_90a")
    # 96 elements, 4 per thread on threads 0..23: all inside the branch, which holds them.
    src = tilec.compile(_fragment_across_the_split(96), target="sm_90a").get_kernel_source()
    assert "if (tx < 32) {" in src


def test_more_warp_roles_than_named_barriers_is_an_error():
    # 14 one-warp branches in branch order take named barriers 1..14; 14 and 15 are the
    # ping-pong pair, so the 14th is refused with the branch's threads.
    branches = "\n".join(f"            {'if' if w == 0 else 'elif'} tx < {32 * (w + 1)}:\n"
                         f"                T.copy(A[{32 * w}:{32 * (w + 1)}], B[{32 * w}:{32 * (w + 1)}])"
                         for w in range(14))
    text = ("@T.prim_func\n"
            "def many(A: T.Tensor((448,), T.float32), B: T.Tensor((448,), T.float32)):\n"
            "    with T.Kernel(1, threads=448) as bx:\n"
            "        tx = T.get_thread_binding()\n"
            f"        if True:\n{branches}\n")
    with pytest.raises(tilec.CompileError, match=r"the branch for threads \[416, 448\) needs named barrier 14"):
        tilec.compile(tilec.from_script(text), target="sm_90a")
