"""T.clear / T.fill / T.copy into a T.alloc_var run in every thread (each thread holds its own
variable): found on the H200 in upstream's persistent MLA decode, where `T.clear(v)` was lowered
like a one-element fragment (`if (tx < 1) v[0] = 0`) and the other threads summed into garbage."""
import re

import numpy as np
import pytest

import tilec
import tilec.language as T


def prog(kind):
    @T.prim_func
    def k(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            v = T.alloc_var("float32")
            if kind == "clear":
                T.clear(v)
            elif kind == "fill":
                T.fill(v, 1.5)
            else:
                T.copy(A[3], v)
            for i in T.serial(4):
                v += A[i]
            for i in T.Parallel(128):
                B[i] = v + A[i]
    return k


@pytest.mark.parametrize("kind", ["clear", "fill", "copy"])
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_every_thread_sets_its_variable(kind, target):
    src = tilec.compile(prog(kind), target=target).get_kernel_source()
    # the variable's initial store is not guarded by a thread condition
    line = next(ln for ln in src.splitlines() if re.search(r"\bv\[0\] = (?!v\[0\])", ln))
    idx = src.splitlines().index(line)
    prev = src.splitlines()[idx - 1]
    assert "tx <" not in line and "if (tx" not in prev, src


@pytest.mark.parametrize("kind,init", [("clear", 0.0), ("fill", 1.5), ("copy", None)])
def test_cpu_target(kind, init):
    a = np.random.default_rng(0).standard_normal(128).astype(np.float32)
    b = np.zeros(128, np.float32)
    tilec.compile(prog(kind), target="cpu")(a, b)
    v = (a[3] if init is None else init) + a[:4].sum()
    np.testing.assert_allclose(b, v + a, rtol=1e-6)
