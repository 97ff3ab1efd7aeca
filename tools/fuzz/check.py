"""Checking one program: build it from its source text, compile it with NVRTC, run it on the
CPU target against the generator's numpy reference (mode 'cpu'), or on the GPU against the CPU
target (mode 'gpu').

Outcomes (`Outcome.status`):
  ok      every check passed
  reject  a clear CompileError from the front end or a target (the program is outside what
          tilec takes; counted and listed, not a failure)
  fail    a mismatch, an NVRTC failure (tilec generated CUDA C that does not compile), an
          InternalError or any other exception; `stage` says where
(`worker.py` adds crash and hang: the process died or ran out of time.)
"""

from __future__ import annotations

import linecache
import traceback
from dataclasses import asdict, dataclass, field
from typing import Optional

from . import reference as ref
from .render import kernel_name, params, render

CPU_MODE_TARGETS = ("sm_80", "sm_90a")


@dataclass
class Outcome:
    status: str = "ok"          # ok | reject | fail | crash | hang
    stage: str = ""             # frontend | compile:<target> | cpu_run | cpu_vs_numpy | gpu_run | gpu_vs_cpu
    message: str = ""
    rejects: dict = field(default_factory=dict)  # target -> CompileError message (first line)

    def kind(self) -> str:
        """What a minimized program must keep failing with."""
        return f"{self.status}:{self.stage}"

    def as_dict(self) -> dict:
        return asdict(self)


def load_program(spec: dict, source: Optional[str] = None):
    """The T.prim_func of a spec, built from its source text (kept in linecache so errors and
    the front end see the lines)."""
    source = source or render(spec)
    filename = f"<tilec-fuzz {kernel_name(spec)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": f"tilec_fuzz_{spec['seed']}"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["program"]()


def pass_configs(spec: dict) -> dict:
    """The spec's pass configs: names switched on, and `name=true|false` settings."""
    out = {}
    for entry in spec.get("configs", []) + spec.get("ws_configs", []):
        name, _, value = entry.partition("=")
        out[name] = value != "false"
    return out


def out_idx(spec: dict) -> list:
    return [i for i, p in enumerate(params(spec)) if p[3] == "out"]


def _first_line(e: BaseException) -> str:
    text = getattr(e, "message", None) or str(e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def _classify(e: BaseException, stage: str) -> Outcome:
    import tilec

    if isinstance(e, tilec.CompileError):
        text = getattr(e, "message", str(e))
        if "failed to compile kernel" in text:  # NVRTC/nvcc on CUDA C that tilec generated
            return Outcome("fail", stage, "generated CUDA C does not compile: " + text[:4000])
        return Outcome("reject", stage, _first_line(e))
    kind = "InternalError" if type(e).__name__ == "InternalError" else type(e).__name__
    return Outcome("fail", stage, f"{kind}: {e}\n{traceback.format_exc(limit=8)}"[:4000])


def _outputs(spec: dict, args: list) -> list:
    return [a for a, p in zip(args, params(spec)) if p[3] in ("out", "acc")]


def run_cpu_target(spec: dict, func):
    import tilec

    args = ref.make_inputs(spec)
    kernel = tilec.compile(func, target="cpu", out_idx=out_idx(spec))
    kernel(*args)  # every argument, outputs included (poisoned / zeroed)
    return args


def check_cpu(spec: dict, targets=CPU_MODE_TARGETS, numpy_reference: bool = True) -> Outcome:
    """Mode 'cpu' (CI): compile for each target (or a clear CompileError), then the CPU target
    against the generator's numpy reference."""
    import tilec

    try:
        func = load_program(spec)
    except Exception as e:  # noqa: BLE001 - every exception is an outcome
        return _classify(e, "frontend")
    outcome = Outcome()
    for target in targets:
        try:
            kernel = tilec.compile(func, target=target, out_idx=out_idx(spec), pass_configs=pass_configs(spec))
            if not kernel.get_ptx():
                return Outcome("fail", f"compile:{target}", "NVRTC returned no PTX")
        except Exception as e:  # noqa: BLE001
            got = _classify(e, f"compile:{target}")
            if got.status == "fail":
                return got
            outcome.rejects[target] = got.message
    try:
        args = run_cpu_target(spec, func)
    except Exception as e:  # noqa: BLE001
        got = _classify(e, "cpu_run")
        got.status = "fail"  # generated programs are valid: the CPU target must run them
        return got
    if numpy_reference:
        wants = ref.reference(spec, [a for a, p in zip(args, params(spec)) if p[3] == "in"])
        tol = ref.tolerance(spec, "numpy")
        names = [p[0] for p in params(spec) if p[3] in ("out", "acc")]
        for name, got, (want, mag) in zip(names, _outputs(spec, args), wants):
            problem = ref.compare(name, got.double().numpy(), want, tol, mag)
            if problem:
                return Outcome("fail", "cpu_vs_numpy", problem, outcome.rejects)
    return outcome


def check_gpu(spec: dict, target: str = "auto", device: str = "cuda") -> Outcome:
    """Mode 'gpu': the program on the GPU (NaN-poisoned outputs) against the CPU target.
    (target="cpu", device="cpu" runs the same path with the CPU target on both sides: a test.)"""
    import tilec
    import torch

    try:
        func = load_program(spec)
    except Exception as e:  # noqa: BLE001
        return _classify(e, "frontend")
    try:
        kernel = tilec.compile(func, target=target, out_idx=out_idx(spec), pass_configs=pass_configs(spec))
    except Exception as e:  # noqa: BLE001
        return _classify(e, "compile:" + target)
    try:
        dev_args = ref.make_inputs(spec, device=device)
        kernel(*dev_args)
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        got = _classify(e, "gpu_run")
        got.status = "fail"
        return got
    try:
        cpu_args = run_cpu_target(spec, func)
    except Exception as e:  # noqa: BLE001
        got = _classify(e, "cpu_run")
        got.status = "fail"
        return got
    tol = ref.tolerance(spec, "gpu")
    names = [p[0] for p in params(spec) if p[3] in ("out", "acc")]
    mags = [m for _, m in ref.reference(spec, [a for a, p in zip(cpu_args, params(spec)) if p[3] == "in"])]
    for name, got, want, mag in zip(names, _outputs(spec, dev_args), _outputs(spec, cpu_args), mags):
        problem = ref.compare(name, got.cpu().double().numpy(), want.double().numpy(), tol, mag)
        if problem:
            return Outcome("fail", "gpu_vs_cpu", problem)
    return Outcome()


def check(spec: dict, mode: str) -> Outcome:
    return check_cpu(spec) if mode == "cpu" else check_gpu(spec)
