"""Thread-level code (T.get_thread_binding, T.alloc_local) keeps Python's and TileLang's meaning:
a tuple assignment reads every value before writing any target, and a T.copy to or from a
per-thread buffer runs whole in every thread (upstream's gemm_sp compressor relies on both; before,
its swap wrote one value twice and its copies out of registers were split across the block)."""
import re

import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _source(func):
    src = tilec.compile(func, target="sm_90a").get_kernel_source()
    return src[src.index('extern "C"'):]


def test_tuple_assignment_reads_before_it_writes():
    @T.prim_func
    def swap(I: T.Tensor((128, 2), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            idx = T.alloc_local([2], T.int32)
            idx[0] = tx
            idx[1] = tx + 1000
            idx[0], idx[1] = idx[1], idx[0]
            I[tx, 0] = idx[0]
            I[tx, 1] = idx[1]

    src = _source(swap)
    a = re.search(r"const int (\w+) = idx\[1\];\s*const int (\w+) = idx\[0\];\s*idx\[0\] = \1;\s*idx\[1\] = \2;", src)
    assert a, src


def test_names_swap_too():
    @T.prim_func
    def swap(I: T.Tensor((128, 2), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            a = T.alloc_var(T.int32)
            b = T.alloc_var(T.int32)
            a = tx
            b = tx + 7
            a, b = b, a
            I[tx, 0] = a
            I[tx, 1] = b

    src = _source(swap)
    # Either the values go through temporaries or the names now denote each other's variables;
    # either way I[tx, 0] gets the old b (tx + 7) and I[tx, 1] the old a (tx).
    swapped = re.search(r"const int (\w+) = b\[0\];\s*const int (\w+) = a\[0\];\s*a\[0\] = \1;\s*b\[0\] = \2;", src)
    renamed = "a[0] = tx;\n  b[0] = tx + 7;\n  I[tx * 2] = b[0];\n  I[tx * 2 + 1] = a[0];" in src
    assert swapped or renamed, src


def test_copy_out_of_a_local_buffer_runs_in_every_thread():
    @T.prim_func
    def rows(A: T.Tensor((64, 4096), T.float16), B: T.Tensor((64, 2048), T.float16)):
        with T.Kernel(4, 4, threads=(16, 32)) as (bz, bk):
            tm = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            loc = T.alloc_local([16], T.float16)
            T.copy(A[bz * 16 + tm, bk * 1024 + tn * 32: bk * 1024 + tn * 32 + 16], loc)
            base = bk * 512
            T.copy(loc, B[bz * 16 + tm, base + tn * 16: base + (tn + 1) * 16])

    src = _source(rows)
    # No guard that picks some threads and no split of loc over the block: each thread stores
    # its own 16 elements at its own row and column.
    assert "if (tx" not in src, src
    assert re.search(r"for \(int (\w+) = 0; \1 < 16; \+\+\1\) \{\s*B\[\(bx \* 16 \+ tx\) \* 2048 \+ [^\]]*\b\1\b[^\]]*"
                     r"ty \* 16\] = loc\[\1\];", src), src
