"""T.set_max_nreg / T.inc_max_nreg / T.dec_max_nreg (pass lower_register_budgets) and the
TILEC_PASS_CONFIGS knob that tries a pass config on programs left unmodified. Compile-only (NVRTC,
no GPU): the generated CUDA and the errors."""
import os
import subprocess
import sys
import textwrap

import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError

_tilec = pytest.importorskip("tilec._tilec")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _roles(consumer=240, producer=24):
    """A hand-split kernel: warpgroup 0 computes, warpgroup 1 only lowers its budget."""

    @T.prim_func
    def split(A: T.Tensor((256, 64), "float16"), B: T.Tensor((256, 64), "float16")):
        with T.Kernel(2, threads=256) as bx:
            tx = T.get_thread_binding()
            if tx < 128:
                T.set_max_nreg(consumer, 1)
                for i, j in T.Parallel(128, 64):
                    B[bx * 128 + i, j] = A[bx * 128 + i, j] * 2
            else:
                T.dec_max_nreg(producer)

    return split


def _source(func, target="sm_90a", **cfg):
    return tilec.compile(func, target=target, pass_configs=cfg).get_kernel_source()


def test_budgets_are_honored_by_default():
    src = _source(_roles())
    assert "tl::setmaxnreg_inc<240>();" in src and "tl::setmaxnreg_dec<24>();" in src, src
    assert "__launch_bounds__(256, 1)" in src
    # Where the program put them: the raise first in warpgroup 0's branch, the cut in the other's.
    body = src[src.index("if (tx < 128) {"):]
    assert body.index("tl::setmaxnreg_inc<240>();") < body.index("tl::store(&B[") < body.index("} else {") < \
        body.index("tl::setmaxnreg_dec<24>();")


def test_budgets_have_no_effect_when_turned_off_and_off_sm90a():
    for src in (_source(_roles(), **{"tilec.honor_set_max_nreg": False}), _source(_roles(), "sm_80")):
        assert "setmaxnreg" not in src


def test_budget_values_are_checked():
    with pytest.raises(CompileError, match=r"T.set_max_nreg\(20\): a warpgroup's register budget is 24..256 in "
                                           r"steps of 8"):
        _roles(consumer=20)
    with pytest.raises(CompileError, match=r"T.dec_max_nreg\(100\)"):
        _roles(producer=100)


def test_a_kernel_with_its_own_budgets_is_not_warp_specialized():
    @T.prim_func
    def gemm(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"), C: T.Tensor((256, 256), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            As = T.alloc_shared((128, 64), "float16")
            Bs = T.alloc_shared((64, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            T.set_max_nreg(232, 1)
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 128, k * 64], As)
                T.copy(B[k * 64, bx * 128], Bs)
                T.gemm(As, Bs, acc)
            T.copy(acc, C[by * 128, bx * 128])

    text = tilec.compile(gemm, target="sm_90a").explain(show=False)
    assert "the kernel sets its own register budgets (T.set_max_nreg)" in text, text
    off = {"tilec.honor_set_max_nreg": False}
    assert "chosen: warp-specialized" in tilec.compile(gemm, target="sm_90a", pass_configs=off).explain(show=False)


def _run(code: str, env_value: str):
    env = dict(os.environ, TILEC_PASS_CONFIGS=env_value, TILEC_DISABLE_CACHE="1",
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.path.join(ROOT, "tests", "python"))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)


PROGRAM = """
    import tilec, test_register_budgets as t
    print(tilec.compile(t._roles(), target="sm_90a", pass_configs=CFG).get_kernel_source().count("setmaxnreg_inc<240>"))
"""


def test_pass_configs_from_the_environment():
    off = _run(PROGRAM.replace("CFG", "None"), "tilec.honor_set_max_nreg=false")
    assert off.returncode == 0 and off.stdout.strip() == "0", off.stderr
    # The program's own pass configs win over the environment's.
    own = _run(PROGRAM.replace("CFG", "{'tilec.honor_set_max_nreg': True}"), "tilec.honor_set_max_nreg=0")
    assert own.returncode == 0 and own.stdout.strip() == "1", own.stderr
    bad = _run(PROGRAM.replace("CFG", "None"), "tilec.honor_set_max_nreg")
    assert bad.returncode != 0 and "TILEC_PASS_CONFIGS: 'tilec.honor_set_max_nreg' is not key=value" in bad.stderr
    wrong = _run(PROGRAM.replace("CFG", "None"), "tilec.honor_set_max_nreg=maybe")
    assert "TILEC_PASS_CONFIGS: 'maybe' is not a value of pass config 'tilec.honor_set_max_nreg'" in wrong.stderr
    keyless = _run(PROGRAM.replace("CFG", "None"), "=true")
    assert "TILEC_PASS_CONFIGS: an entry has no key" in keyless.stderr
    unknown = _run(PROGRAM.replace("CFG", "None"), "tilec.no_such_option=1")
    assert "unknown pass config key 'tilec.no_such_option'" in unknown.stderr
