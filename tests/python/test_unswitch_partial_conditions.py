"""unswitch_uniform_conditions on conditions only partly affine (upstream's convolution example
crashed the pass: an `and` whose one side has no "everywhere" form built an And of a null
expression). No GPU: compiled for sm_80 and sm_90a."""
import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _masked(cond):
    @T.prim_func
    def f(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=128):
            acc = T.alloc_fragment((32,), "float32")
            T.fill(acc, 0)
            for k in T.serial(8):
                for i in T.Parallel(32):
                    acc[i] += T.if_then_else(cond(k, i), A[k * 8, i], 0)
            for i in T.Parallel(32):
                B[0, i] = acc[i]

    return f


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,cond", [
    ("and_one_side_not_affine", lambda k, i: (i % 2 == 0) & (k * 8 + i < 20)),
    ("or_one_side_not_affine", lambda k, i: (i % 2 == 0) | (k * 8 + i < 20)),
    ("not_and", lambda k, i: ~((i % 2 == 0) & (k * 8 + i < 20))),
])
def test_partly_affine_conditions_compile(name, cond, target):
    src = tilec.compile(_masked(cond), target=target).get_kernel_source()
    assert "% 2" in src or "& 1" in src, src  # the test that has no everywhere-form stays
