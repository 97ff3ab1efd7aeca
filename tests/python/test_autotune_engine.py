"""The autotuner's engine without a GPU: parallel compile, skipped configurations (front-end and
compile errors, spills), the fastest by a given benchmark, and the winner cached on disk."""
import os
import stat
import threading
import time

import pytest

import sys

import tilec
import tilec.language as T
from tilec import autotune_engine as engine
from tilec.autotuner import AutoTuner

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

LATENCY = {128: 3.0, 256: 1.0, 512: 2.0}


def doubler(block=128, threads=128):
    n = 4096
    if block > 4096:
        raise ValueError(f"block {block} is larger than the tensor")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2.0

    return main


def _tuner(configs, measured):
    def measure(kernel, config):
        measured.append(config["block"])
        return LATENCY.get(config["block"], 9.0)

    return (AutoTuner.from_kernel(doubler, configs).set_compile_args(out_idx=[-1], target="sm_80")
            .set_profile_args(measure_fn=measure))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_compiles_in_parallel_skips_failures_and_takes_the_fastest(cache_dir, monkeypatch, caplog):
    threads = set()
    jit_module = sys.modules["tilec.jit"]
    real = jit_module.compile

    def slow_compile(*a, **k):
        threads.add(threading.get_ident())
        time.sleep(0.3)  # long enough that every worker gets a configuration
        return real(*a, **k)

    monkeypatch.setattr(jit_module, "compile", slow_compile)
    measured = []
    configs = [{"block": 128}, {"block": 256}, {"block": 8192},            # 8192: the program refuses it
               {"block": 512}, {"block": 256, "threads": 2048}]           # 2048 threads: does not compile
    with caplog.at_level("INFO", logger="tilec.autotuner"):
        result = _tuner(configs, measured).run()
    assert result.config == {"block": 256} and result.latency == 1.0
    assert (result.tried, result.compiled) == (5, 3)
    assert sorted(measured) == [128, 256, 512]  # only what compiled is timed
    assert len(threads) == min(5, os.cpu_count() or 1)  # every core compiles
    log = caplog.text
    assert "{'block': 8192} does not compile: block 8192 is larger than the tensor" in log
    assert "'threads': 2048} does not compile" in log


def test_the_winner_is_cached_privately_and_reused(cache_dir):
    measured = []
    first = _tuner([{"block": 128}, {"block": 256}, {"block": 512}], measured).run()
    assert first.config == {"block": 256} and not first.cached and len(measured) == 3
    entries = list((cache_dir / "autotune").iterdir())
    assert len(entries) == 1
    assert stat.S_IMODE(os.stat(cache_dir / "autotune").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(entries[0]).st_mode) == 0o600
    # A second tuner (a new process would be the same): only the winner compiles, nothing is timed.
    measured.clear()
    again = _tuner([{"block": 128}, {"block": 256}, {"block": 512}], measured).run()
    assert again.cached and again.config == {"block": 256} and again.compiled == 1 and measured == []
    # Other configurations are another question: tuned again.
    other = _tuner([{"block": 128}, {"block": 512}], measured).run()
    assert not other.cached and other.config == {"block": 512}
    # An entry others could have written is not trusted.
    os.chmod(entries[0], 0o666)
    measured.clear()
    distrusted = _tuner([{"block": 128}, {"block": 256}, {"block": 512}], measured).run()
    assert not distrusted.cached and len(measured) == 3


class _FakeKernel:
    def __init__(self, spill):
        self.ptxas_info = {"spill_stores_bytes": spill, "spill_loads_bytes": spill}


def test_spilling_configurations_are_skipped_unless_all_spill(caplog):
    kernels = {"a": _FakeKernel(8), "b": _FakeKernel(0), "c": _FakeKernel(0)}
    timing = {"a": 0.5, "b": 2.0, "c": 1.0}
    pick = lambda names: engine.select([{"k": n} for n in names], lambda c: (lambda: kernels[c["k"]]),  # noqa: E731
                                       lambda k, c, ref: timing[c["k"]], "fake")
    with caplog.at_level("INFO", logger="tilec.autotuner"):
        assert pick("abc").config == {"k": "c"}  # 'a' is fastest but spills
    assert "{'k': 'a'} spills 16 bytes of registers: skipped" in caplog.text
    assert pick("a").config == {"k": "a"}  # nothing else: a spilling kernel beats none


def test_compiles_inside_the_tuner_do_not_warn_about_spills(recwarn):
    # The tuner logs and skips a spilling configuration itself; a PerformanceWarning per
    # configuration would bury its output (35 of them for upstream's 288-config GEMM sweep).
    from tilec import kernel as kmod

    class Spilling(_FakeKernel):
        kernel_name, target = "k", "sm_90a"

    def compile_warning():
        k = Spilling(8)
        kmod._warn_on_spills(k)  # what tilec.compile does after a build
        return k

    engine.select([{"k": 1}, {"k": 2}], lambda c: compile_warning, lambda k, c, ref: 1.0, "fake")
    assert not [w for w in recwarn if issubclass(w.category, kmod.PerformanceWarning)]
    compile_warning()  # outside the tuner it still warns
    assert [w for w in recwarn if issubclass(w.category, kmod.PerformanceWarning)]


def test_decorator_form_uses_the_same_engine(cache_dir):
    seen = []

    @tilec.autotune(configs=[{"block": 128}, {"block": 256}], measure_fn=lambda k, c: seen.append(c) or LATENCY[c["block"]])
    @tilec.jit(out_idx=[-1], target="sm_80")
    def dbl(block=128):
        return doubler(block)

    kernel = dbl()
    assert sorted(c["block"] for c in seen) == [128, 256]
    assert "grid (16)" in kernel.launch_plan_summary()  # 4096 / 256: the winner's kernel
    assert dbl.compile() is kernel  # the process-level cache of the tuned call


def too_much_shared():
    @T.prim_func
    def main(A: T.Tensor((4096,), "float32"), B: T.Tensor((4096,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((100000,), "float32")  # 400 KB: more than a block may have
            T.copy(A[0:4096], S[0:4096])
            T.copy(S[0:4096], B[0:4096])

    return main


def test_par_compile_keeps_the_order_and_reports_failures():
    funcs = [doubler(128), too_much_shared(), doubler(512)]
    kernels = tilec.par_compile(funcs, out_idx=[-1], target="sm_80", ignore_error=True)
    assert kernels[1] is None
    assert "grid (32)" in kernels[0].launch_plan_summary() and "grid (8)" in kernels[2].launch_plan_summary()
    with pytest.raises(tilec.CompileError):
        tilec.par_compile(funcs, out_idx=[-1], target="sm_80")


def test_nothing_compiles_is_an_error_naming_the_first_reason():
    with pytest.raises(tilec.CompileError, match=r"none of the 2 configurations compiled; the first error "
                                                 r"\(\{'block': 8192\}\): block 8192 is larger than the tensor"):
        _tuner([{"block": 8192}, {"block": 16384}], []).run()


def _select_fake(names, measure, timeout):
    kernels = {n: _FakeKernel(0) for n in names}
    return engine.select([{"k": n} for n in names], lambda c: (lambda: kernels[c["k"]]), measure, "fake",
                         timeout=timeout)


def test_a_configuration_over_the_timeout_is_skipped_with_its_reason(caplog):
    # TileLang's timeout=: seconds, per configuration, bounding its check and timing. 'slow' reports
    # the best latency but takes 0.4 s to measure, over the 0.1 s timeout: skipped, logged.
    timing = {"a": 2.0, "slow": 0.5, "b": 1.0}

    def measure(kernel, config, reference):
        if config["k"] == "slow":
            time.sleep(0.4)
        return timing[config["k"]]

    with caplog.at_level("INFO", logger="tilec.autotuner"):
        result = _select_fake(["a", "slow", "b"], measure, timeout=0.1)
    assert result.config == {"k": "b"} and result.latency == 1.0
    assert "config {'k': 'slow'} skipped: its check and timing took 0.4" in caplog.text
    assert "over the timeout of 0.1 s" in caplog.text
    # Without a timeout (or a generous one) the same measurements pick 'slow'.
    assert _select_fake(["a", "slow", "b"], measure, timeout=None).config == {"k": "slow"}
    assert _select_fake(["a", "slow", "b"], measure, timeout=30).config == {"k": "slow"}


def test_a_measure_function_can_stop_at_the_deadline(caplog):
    # The GPU measure checks the deadline between the correctness check and the timing, so a
    # slow kernel is not timed at all; nothing is interrupted from outside.
    timed = []

    def measure(kernel, config, reference):
        assert engine.deadline() is not None
        if config["k"] == "slow":
            time.sleep(0.3)  # the check of a slow kernel
        engine.check_deadline("the check")
        timed.append(config["k"])
        return 1.0

    with caplog.at_level("INFO", logger="tilec.autotuner"):
        result = _select_fake(["slow", "a"], measure, timeout=0.1)
    assert result.config == {"k": "a"} and timed == ["a"]
    assert "skipped: its check and timing took 0.3" in caplog.text and "(stopped after the check)" in caplog.text
    assert engine.deadline() is None  # cleared after each configuration


def test_every_configuration_over_the_timeout_is_an_error():
    def measure(kernel, config, reference):
        time.sleep(0.15)
        return 1.0

    with pytest.raises(tilec.CompileError, match=r"none of the 2 compiled configurations passed its check "
                                                 r"\(2 over the timeout of 0.05 s\)"):
        _select_fake(["a", "b"], measure, timeout=0.05)


def test_the_timeout_argument_reaches_the_engine(monkeypatch):
    seen = []
    real = engine.select

    def spy(*a, **k):
        seen.append(k.get("timeout"))
        return real(*a, **k)

    monkeypatch.setattr(engine, "select", spy)
    monkeypatch.setenv("TILEC_DISABLE_CACHE", "1")
    _tuner([{"block": 128}], []).set_profile_args(measure_fn=lambda k, c: 1.0, timeout=7).run()
    _tuner([{"block": 128}], []).set_profile_args(measure_fn=lambda k, c: 1.0).run(timeout=3)

    @tilec.autotune(configs=[{"block": 128}, {"block": 256}], timeout=5, measure_fn=lambda k, c: 1.0)
    @tilec.jit(out_idx=[-1], target="sm_80")
    def dbl(block=128):
        return doubler(block)

    dbl()
    assert seen == [7, 3, 5]
