"""defer_row_sums (tilec.defer_row_sums): a loop's running sum of row sums keeps per-thread
partials; the threads are combined once after the loop. Checked on the generated CUDA (no GPU):
where the pass applies, where it must not, and what it saves in MLA decoding's step."""
import os
import re
import sys

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
ON = {"tilec.defer_row_sums": True}


def _softmax_sum(init=0.0, part_after=False, acc_in_loop=False, n=8, outer=1):
    """A row-sum recurrence like attention's: l = l * scale + rowsum(exp2(S))."""

    @T.macro
    def step(A, a, s, part, scale, acc, mx, k):
        T.copy(A[k * 64, 0], a)
        T.gemm(a, a, s, transpose_B=True, clear_accum=True)
        T.reduce_max(s, mx, dim=1)
        for i in T.Parallel(64):
            scale[i] = T.exp2(mx[i] * 0.01)
        T.reduce_sum(s, part, dim=1)
        for i in T.Parallel(64):
            acc[i] = acc[i] * scale[i] + part[i]
        if acc_in_loop:
            for i in T.Parallel(64):
                scale[i] = acc[i]

    @T.prim_func
    def f(A: T.Tensor((n * 64, 32), "float16"), L: T.Tensor((64,), "float32"), P: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            s = T.alloc_fragment((64, 64), "float32")  # a gemm's accumulator: rows span threads
            part = T.alloc_fragment((64,), "float32")
            scale = T.alloc_fragment((64,), "float32")
            acc = T.alloc_fragment((64,), "float32")
            mx = T.alloc_fragment((64,), "float32")
            T.fill(acc, init)
            if outer > 1:
                for r in T.serial(outer):
                    for k in T.serial(n):
                        step(A, a, s, part, scale, acc, mx, k)
            else:
                for k in T.serial(n):
                    step(A, a, s, part, scale, acc, mx, k)
            T.copy(acc, L)
            if part_after:
                T.copy(part, P)

    return f


def _src(f, cfg=None, target="sm_90a"):
    return tilec.compile(f, target=target, pass_configs=cfg).get_kernel_source()


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_the_sum_leaves_the_loop(target):
    src = _src(_softmax_sum(), ON, target)
    loop = src[re.search(r"for \(int (\w+) = 0; \1 < 8;", src).start():src.index("acc_red")]
    assert "tl::shfl_xor(mx_red" in loop and "part_red" in loop, loop
    assert "tl::shfl_xor(part_red" not in loop, loop  # each thread's partial only, in the loop
    after = src[src.index("acc_red"):]
    assert "tl::shfl_xor(acc_red" in after, after  # the threads of a row combined once
    assert _src(_softmax_sum(), None, target) == src  # on by default
    off = _src(_softmax_sum(), {"tilec.defer_row_sums": False}, target)
    assert "acc_red" not in off and "tl::shfl_xor(part_red" in off


@pytest.mark.parametrize("case", [{"init": 1.0}, {"part_after": True}, {"acc_in_loop": True}, {"outer": 2}])
def test_left_alone_where_partials_would_show(case):
    # acc not starting at zero (each holder would add the start), the row sums read after the
    # loop, acc read inside the loop, a loop around the loop (its second pass would start every
    # holder at the first pass's total): the reduction stays whole.
    assert _src(_softmax_sum(**case), ON) == _src(_softmax_sum(**case), {"tilec.defer_row_sums": False})


def test_mla_decoding_step_loses_the_sum_barrier():
    from mla_decode import mla_decode

    (split,) = mla_decode(4, 128, 4 * 16, 16, 1, dtype="bfloat16", num_stages=2)  # one kernel at num_split 1

    def step(src):
        s = src[src.rindex("for (int p = 0;"):]  # the consumers' loop (the producer's comes first)
        return s[:s.index("mbarrier_arrive(&p_empty0")]  # one step

    on, off = (step(_src(split, cfg)) for cfg in (ON, {"tilec.defer_row_sums": False}))
    assert off.count("tl::named_barrier_sync(1, 256);") == 3 and "scores_sum_red_shared" in off
    assert on.count("tl::named_barrier_sync(1, 256);") == 2 and "scores_sum_red_shared" not in on, on
    kernel = tilec.compile(split, target="sm_90a", pass_configs=ON)
    assert kernel.ptxas_info["spill_stores_bytes"] == 0


def test_loops_inside_lets_of_their_trip_count_are_found():
    # varlen attention: `loop_range = min(...)` binds the trip count around the loop; the zero
    # fill of logsum comes before that Let.
    from flash_attention_varlen import flash_attention_varlen

    f = flash_attention_varlen(3, 4, 64, 333, 400, 200, True, 2)
    assert "logsum_red[kb" in _src(f, ON) and "logsum_red" not in _src(f, {"tilec.defer_row_sums": False})
    on = _src(f, ON)
    loop = on[on.index("for (int k"):on.index("logsum_red")]
    assert "tl::shfl_xor(scores_sum_red" not in loop


def test_stage_is_not_a_keyword_of_the_language():
    # stage="own_registers" / "across_threads" is how the pass splits a reduction; a program
    # that passes it gets TileLang's unexpected-keyword error, not partial sums.
    with pytest.raises(tilec.CompileError, match="T.reduce_sum got an unexpected keyword argument 'stage'"):
        @T.prim_func
        def f(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=128):
                a = T.alloc_fragment((64, 64), "float32")
                b = T.alloc_fragment((64,), "float32")
                T.copy(A, a)
                T.reduce_sum(a, b, dim=1, stage="own_registers")
                T.copy(b, B)
