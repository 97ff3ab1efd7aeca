"""A T.Layout on a global tensor (TileLang's FlashAttention backward stores dQ this way):
every access after the annotation is re-indexed to where the layout puts the element, and a
T.copy with that tensor becomes an element loop (language/global_layout.py)."""
import itertools
import re

import pytest

import tilec
import tilec.language as T
from tilec import CompileError

B, L, H, D = 2, 128, 4, 64


def _dq_layout(dQ):
    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2])


def _kernels():
    @T.prim_func
    def bwd(dq_in: T.Tensor((B, L, H, D), T.float32), dQ: T.Tensor((B, L, H, D), T.float32)):
        with T.Kernel(L // 64, H, B, threads=128) as (bx, by, bz):
            T.annotate_layout({dQ: _dq_layout(dQ)})
            for i, j in T.Parallel(64, D):
                T.atomic_add(dQ[bz, bx * 64 + i, by, j], dq_in[bz, bx * 64 + i, by, j])

    @T.prim_func
    def post(dQ: T.Tensor((B, L, H, D), T.float32), dQ_out: T.Tensor((B, L, H, D), T.float16)):
        with T.Kernel(L // 64, H, B, threads=128) as (bx, by, bz):
            T.annotate_layout({dQ: _dq_layout(dQ)})
            T.copy(dQ[bz, bx * 64:(bx + 1) * 64, by, :], dQ_out[bz, bx * 64:(bx + 1) * 64, by, :])

    return bwd, post


def _reference(b, l, h, d):
    out = [b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2]
    lin = 0
    for x, n in zip(out, [B, L // 8, H, D // 8, 2, 32]):
        lin = lin * n + x
    idx = []
    for n in (D, H, L):
        idx.append(lin % n)
        lin //= n
    return (lin, *reversed(idx))


def test_accesses_are_reindexed_by_the_layout_and_it_is_a_bijection():
    bwd, post = _kernels()
    text = post.script()
    assert "T.copy" not in text and "T.Parallel(64, 64)" in text
    index = re.search(r"T\.cast\(dQ\[(.*)\], \"float16\"\)", text).group(1)
    fn = eval("lambda bx, by, bz, dQ_out_c0, dQ_out_c1: (" + index + ")")  # the printed index math
    seen = set()
    for bx, by, bz, i, j in itertools.product(range(L // 64), range(H), range(B), range(64), range(D)):
        got = fn(bx, by, bz, i, j)
        assert got == _reference(bz, bx * 64 + i, by, j)
        seen.add(got)
    assert len(seen) == B * L * H * D
    assert "tl.address_of\", dQ[" in bwd.script()  # the atomic goes to the re-indexed element


def test_both_kernels_compile():
    for f in _kernels():
        tilec.compile(f, target="sm_90a")


def test_a_layout_that_is_not_a_bijection_is_refused():
    with pytest.raises(CompileError, match="it must be a bijection"):
        @T.prim_func
        def folded(A: T.Tensor((64, 64), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [i % 32, j])})
                A[0, 0] = 1.0


def test_a_region_atomic_into_a_reindexed_tensor_is_one_atomic_per_element():
    @T.prim_func
    def region(dQ: T.Tensor((B, L, H, D), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((64, D), T.float32)
            T.clear(acc)
            T.annotate_layout({dQ: _dq_layout(dQ)})
            T.atomic_add(dQ[0, 0:64, 0, :], acc)

    text = region.script()
    assert "T.atomic_add(dQ" not in text and '"tl.atomic_add", T.call_intrin("handle", "tl.address_of", dQ[' in text
    tilec.compile(region, target="sm_90a")


def test_other_region_ops_on_a_reindexed_tensor_are_refused():
    with pytest.raises(CompileError, match="T.fill on a region of 'dQ', a tensor given a T.Layout"):
        @T.prim_func
        def region(dQ: T.Tensor((B, L, H, D), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                T.annotate_layout({dQ: _dq_layout(dQ)})
                T.fill(dQ[0, 0:64, 0, :], 0.0)
