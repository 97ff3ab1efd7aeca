"""T.pdl_trigger / T.pdl_sync (programmatic dependent launch): griddepcontrol on sm_90a (the
cubin is built, so ptxas accepts it), nothing on sm_80, no-ops on the CPU target."""
import re

import numpy as np

import tilec
import tilec.language as T


def _scaled():
    @T.prim_func
    def k(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            T.pdl_sync()
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2
            T.pdl_trigger()

    return k


def test_pdl_is_griddepcontrol_on_sm90a_and_nothing_before():
    ptx = tilec.compile(_scaled(), target="sm_90a").get_ptx()
    assert re.search(r"griddepcontrol\.wait", ptx) and re.search(r"griddepcontrol\.launch_dependents", ptx)
    assert "griddepcontrol" not in tilec.compile(_scaled(), target="sm_80").get_ptx()


def test_pdl_is_a_no_op_on_the_cpu_target():
    a = np.arange(256, dtype=np.float32)
    b = np.zeros(256, np.float32)
    tilec.compile(_scaled(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a * 2)
