"""The differential fuzzer's CI slice (issue 12, tools/fuzz, docs/RELIABILITY.md).

A fixed-seed slice of random tile programs: each compiles with NVRTC for sm_80 and sm_90a (or
fails with a clear CompileError) and runs on the CPU target to the generator's numpy reference.
The other tests show that the check can fail (a wrong result, an internal error, NVRTC failing
on generated code, a hang) and that the minimizer shrinks and writes runnable repros; the kept
regressions (tests/fuzz_regressions) run too."""
import os
import subprocess
import sys

import pytest

import tilec

# The generated programs' inputs and outputs are torch tensors (bfloat16 has no numpy dtype):
# without torch the slice is skipped, not failed (the core suite must not need torch).
pytest.importorskip("torch", reason="the fuzzer's arguments are torch tensors")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)

from tools.fuzz import check as fuzz_check  # noqa: E402
from tools.fuzz import gen, minimize, reference, render  # noqa: E402
from tools.fuzz.driver import run  # noqa: E402
from tools.fuzz.worker import SANITIZER_ERROR_EXIT, Worker, sanitizer_command  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

SLICE_SEED = 20261201
SLICE_COUNT = int(os.environ.get("TILEC_FUZZ_CI_COUNT", "60"))


@needs_nvrtc
def test_fuzz_slice():
    result = run("cpu", SLICE_COUNT, SLICE_SEED, jobs=2, timeout=120, minimize_failures=False, log=lambda m: None)
    print(result.text())
    assert result.checked == SLICE_COUNT
    assert not result.failures, result.text()
    assert result.statuses["ok"] >= SLICE_COUNT // 2, result.text()  # mostly compiled for both targets  # mostly accepted, not mostly rejected
    for family in gen.GENERATORS:
        assert result.mix[family] > 0, f"the slice has no {family} program: {result.text()}"


def _spec(family, **changes):
    for seed in range(1000):
        spec = gen.generate(seed, [family])
        if all(spec.get(k) == v for k, v in changes.items()):
            return spec
    raise AssertionError(f"no {family} spec with {changes}")


def test_wrong_result_is_a_failure(monkeypatch):
    spec = _spec("ew", dtype="float32", dyn=False)
    real = reference.reference
    monkeypatch.setattr(reference, "reference", lambda s, inputs: [(r + 1.0, m) for r, m in real(s, inputs)])
    got = fuzz_check.check_cpu(spec, targets=())
    assert got.kind() == "fail:cpu_vs_numpy" and "elements differ" in got.message, got


def test_unwritten_elements_are_a_failure():
    want = reference.np.ones((4, 4))
    got = want.copy()
    got[3, 3] = float("nan")
    assert "1 never written" in reference.compare("Y", got, want, 1e-2)
    assert reference.compare("Y", want, want, 1e-2) is None


def test_internal_error_is_a_failure(monkeypatch):
    def broken(*args, **kwargs):
        raise tilec.InternalError("an internal check failed, please report")

    monkeypatch.setattr(tilec, "compile", broken)
    got = fuzz_check.check_cpu(_spec("reduce"))
    assert got.kind() == "fail:compile:sm_80" and "InternalError" in got.message, got


def test_nvrtc_failure_is_a_failure_and_a_user_error_a_reject(monkeypatch):
    def nvrtc_fails(*args, **kwargs):
        raise tilec.CompileError("NVRTC failed to compile kernel 'k' for sm_80:\nerror: oops")

    monkeypatch.setattr(tilec, "compile", nvrtc_fails)
    assert fuzz_check.check_cpu(_spec("gemm")).kind() == "fail:compile:sm_80"

    def rejects(func, target="auto", **kwargs):
        if target != "cpu":
            raise tilec.CompileError("T.gemm: this shape is not supported")
        return real(func, target=target, **kwargs)

    monkeypatch.undo()
    real = tilec.compile
    monkeypatch.setattr(tilec, "compile", rejects)
    got = fuzz_check.check_cpu(_spec("ew", dtype="float32", dyn=False))
    assert got.status == "ok" and got.rejects == {"sm_80": "T.gemm: this shape is not supported",
                                                   "sm_90a": "T.gemm: this shape is not supported"}, got


def test_hang_is_reported_and_the_worker_restarts():
    worker = Worker("cpu")
    try:
        slow = []
        # no answer in 10 ms: the process is killed; after 5 ms the run names the program
        got = worker.check(_spec("ew"), timeout=0.01, on_slow=slow.append)
        assert got.kind() == "hang:timeout", got
        assert worker.proc is None
        assert slow == [0.005]
    finally:
        worker.close()


@needs_nvrtc
def test_a_wrapper_that_reports_errors_fails_the_program():
    # A stand-in for compute-sanitizer: runs the checking process, then exits as the real one does
    # when it found errors. Each program gets its own process.
    fake = ["sh", "-c", f'"$@"; echo "========= ERROR SUMMARY: 1 error" >&2; exit {SANITIZER_ERROR_EXIT}',
            "fake-sanitizer"]
    worker = Worker("cpu", wrapper=fake)
    try:
        got = worker.check(_spec("ew"), timeout=120)
        assert got.kind() == "fail:sanitizer" and "ERROR SUMMARY: 1 error" in got.message, got
        assert worker.proc is None
    finally:
        worker.close()
    clean = Worker("cpu", wrapper=["sh", "-c", '"$@"', "fake-sanitizer"])
    try:
        got = clean.check(_spec("ew"), timeout=120)
        assert got.status == "ok" and clean.proc is None, got
    finally:
        clean.close()


def test_sanitizer_command_stops_with_the_error_status():
    cmd = sanitizer_command("racecheck")
    assert cmd[:3] == ["compute-sanitizer", "--tool", "racecheck"]
    assert cmd[cmd.index("--error-exitcode") + 1] == str(SANITIZER_ERROR_EXIT)
    assert cmd[cmd.index("--log-file") + 1] == "/dev/stderr"  # stdout carries only the answers


def test_minimizer_shrinks_to_what_still_fails(tmp_path):
    spec = _spec("ew", use_w=True)
    spec["loops"] = [[["abs"], ["exp"]], [["affine", 2.0, 0.5]]]

    def still_fails(s):  # a stand-in bug: any program with exp
        return any(op[0] == "exp" for ops in s["loops"] for op in ops)

    small = minimize.minimize(spec, still_fails)
    assert small["loops"] == [[["exp"]]] and small["M"] == 1 and small["N"] == 1 and not small["use_w"], small
    outcome = fuzz_check.Outcome("fail", "cpu_vs_numpy", "Y: 1 of 1 elements differ")
    path = minimize.write_regression(small, outcome, "cpu", str(tmp_path), xfail_reason="a stand-in bug")
    text = open(path).read()
    assert "@pytest.mark.xfail(strict=True" in text and "T.exp(T.min(x[i, j], 2.0))" in text
    namespace = {}
    exec(compile(text, path, "exec"), namespace)
    assert render.render(namespace["SPEC"]) == namespace["SOURCE"]


def test_generator_is_deterministic_and_sources_build():
    built = 0
    for seed in range(40):
        spec = gen.generate(seed)
        assert spec == gen.generate(seed)
        try:
            fuzz_check.load_program(spec)  # the front end takes the rendered programs
            built += 1
        except tilec.CompileError as e:  # the one known reject (docs/RELIABILITY.md, Known limits)
            assert "in T.atomic_add has extent" in e.message, e
    assert built >= 36


def test_kept_regressions_pass():
    directory = os.path.join(ROOT, "tests", "fuzz_regressions")
    if not any(f.startswith("test_") for f in os.listdir(directory)):
        pytest.skip("no kept regressions")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), ROOT]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", directory], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_gpu_mode_path_runs_with_the_cpu_target_on_both_sides():
    for family in gen.GENERATORS:
        spec = _spec(family)
        got = fuzz_check.check_gpu(spec, target="cpu", device="cpu")
        assert got.status in ("ok", "reject"), got


def test_gpu_mode_without_a_gpu_is_a_clear_error():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), ROOT]))
    proc = subprocess.run([sys.executable, "-m", "tools.fuzz", "--mode", "gpu", "--count", "1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "needs a CUDA GPU" in proc.stderr, proc.stderr


def test_attention_programs_carry_their_warp_specialization_configs():
    spec = _spec("attn", causal=True)
    assert spec["family"] == "attn" and spec["B"] >= 1 and spec["bm"] >= 16 * (spec["threads"] // 32)
    spec["ws_configs"] = ["tilec.head_copies_after_first_step=true", "tilec.producer_head_copies=false"]
    spec["configs"] = ["tl.disable_vectorize"]
    assert fuzz_check.pass_configs(spec) == {"tilec.head_copies_after_first_step": True,
                                             "tilec.producer_head_copies": False, "tl.disable_vectorize": True}
    assert "bx * " in render.render(spec) and ">= k * " in render.render(spec)  # the causal mask


def test_sanitize_needs_the_gpu_mode(capsys):
    from tools.fuzz.__main__ import main

    assert main(["--mode", "cpu", "--sanitize", "memcheck", "--count", "1"]) == 2
    assert "--sanitize needs --mode gpu" in capsys.readouterr().err
