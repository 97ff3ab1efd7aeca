"""Fuzzer regression (atomic, seed 593): fail:gpu_run.

AcceleratorError: CUDA error: misaligned address (the vector load guard of X counted the 107 of its batch stride twice)

Found by `python -m tools.fuzz --mode gpu --seed 593 --count 1` and minimized; SOURCE is the
program as the fuzzer renders SPEC. Run: PYTHONPATH=python python -m pytest tests/fuzz_regressions/test_fuzz_atomic_593.py
"""
import json

import pytest

from tools.fuzz.regression import check_regression

SPEC = json.loads('{"B": 4, "M": 99, "N": 107, "bm": 32, "bn": 16, "configs": [], "dtype": "bfloat16", "dyn": true, "family": "atomic", "form": "region", "kind": "batch2d", "pre": [["affine", 0.75, 0.5]], "seed": 593, "threads": 384}')

SOURCE = """\
import tilec.language as T


def program():
    M = T.dynamic("M")

    @T.prim_func
    def fuzz_atomic_593(X: T.Tensor((4, M, 107), "bfloat16"), Y: T.Tensor((M, 107), "float32")):
        with T.Kernel(T.ceildiv(107, 16), T.ceildiv(M, 32), 4, threads=384) as (bx, by, bz):
            x = T.alloc_fragment((32, 16), "float32")
            T.copy(X[bz, by * 32, bx * 16], x)
            for i, j in T.Parallel(32, 16):
                x[i, j] = x[i, j] * 0.75 + 0.5
            T.atomic_add(Y[by * 32, bx * 16], x)

    return fuzz_atomic_593
"""


def test_fuzz_atomic_593():
    check_regression(SPEC, SOURCE, mode="gpu")
