"""A fuzz run: programs seed, seed+1, ... checked by worker processes; failures minimized and
kept as tests; a report (text, and JSON when asked)."""

from __future__ import annotations

import collections
import json
import os
import threading
import time
from dataclasses import dataclass, field

from .gen import features, generate
from .minimize import minimize, write_regression
from .worker import ROOT, Worker


@dataclass
class RunResult:
    mode: str
    seed: int
    checked: int = 0
    seconds: float = 0.0
    statuses: collections.Counter = field(default_factory=collections.Counter)
    mix: collections.Counter = field(default_factory=collections.Counter)
    rejects: collections.Counter = field(default_factory=collections.Counter)
    failures: list = field(default_factory=list)   # dicts: seed, kind, message, repro
    stopped_early: bool = False

    @property
    def failed(self) -> int:
        return len(self.failures)

    def as_dict(self) -> dict:
        return {"mode": self.mode, "seed": self.seed, "checked": self.checked, "seconds": round(self.seconds, 1),
                "statuses": dict(self.statuses), "mix": dict(self.mix), "rejects": dict(self.rejects),
                "failures": self.failures, "stopped_early": self.stopped_early}

    def text(self) -> str:
        out = [f"tilec fuzz, mode {self.mode}: {self.checked} programs from seed {self.seed} in "
               f"{self.seconds:.1f} s" + (" (stopped at the time limit)" if self.stopped_early else ""),
               "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items())),
               "feature mix (programs with the feature):"]
        items = sorted(self.mix.items())
        for i in range(0, len(items), 4):
            out.append("  " + "  ".join(f"{k:<22} {v:>5}" for k, v in items[i:i + 4]))
        if self.rejects:
            out.append("clear CompileErrors (target rejects), by message:")
            out += [f"  {n:>5}  {msg[:150]}" for msg, n in self.rejects.most_common(12)]
        out.append(f"failures: {self.failed}")
        for f in self.failures:
            out.append(f"  seed {f['seed']}: {f['kind']}: {f['message'].strip().splitlines()[0][:200]}")
            if f.get("repro"):
                out.append(f"    minimized: {f['repro']}")
        return "\n".join(out)


def run(mode: str, count: int, seed: int, jobs: int = 1, timeout: float = 120.0, time_limit: float = 0.0,
        families=None, minimize_failures: bool = True, regressions_dir: str = "",
        max_minimize: int = 5, log=print, wrapper=None) -> RunResult:
    """`wrapper`: run each program's check under this command (compute-sanitizer; worker.py)."""
    result = RunResult(mode, seed)
    lock = threading.Lock()
    next_index = [0]
    t0 = time.time()
    failing_specs = []

    def worker_loop():
        worker = Worker(mode, wrapper)
        try:
            while True:
                with lock:
                    if next_index[0] >= count:
                        return
                    if time_limit and time.time() - t0 > time_limit:
                        result.stopped_early = True
                        return
                    i = next_index[0]
                    next_index[0] += 1
                spec = generate(seed + i, families)
                outcome = worker.check(spec, timeout, on_slow=lambda t, s=spec["seed"]: log(
                    f"[fuzz] seed {s}: no answer after {t:g} s (a hang after {timeout:g} s)"))
                with lock:
                    result.checked += 1
                    result.statuses[outcome.status + (" (a target rejected)" if outcome.status == "ok" and
                                                      outcome.rejects else "")] += 1
                    result.mix.update(features(spec))
                    for target, msg in outcome.rejects.items():
                        result.rejects[f"{target}: {msg}"] += 1
                    if outcome.status == "reject":
                        result.rejects[f"{outcome.stage}: {outcome.message}"] += 1
                    if outcome.status in ("fail", "crash", "hang"):
                        failing_specs.append((spec, outcome))
                        log(f"[fuzz] seed {spec['seed']}: {outcome.kind()}: "
                            f"{outcome.message.strip().splitlines()[0][:200] if outcome.message.strip() else ''}")
                    if result.checked % 100 == 0:
                        log(f"[fuzz] {result.checked}/{count} checked, {time.time() - t0:.0f} s, "
                            f"{len(failing_specs)} failures")
        finally:
            worker.close()

    threads = [threading.Thread(target=worker_loop) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.seconds = time.time() - t0
    failing_specs.sort(key=lambda so: so[0]["seed"])
    shrinker = Worker(mode, wrapper) if minimize_failures and failing_specs else None
    for n, (spec, outcome) in enumerate(failing_specs):
        entry = {"seed": spec["seed"], "kind": outcome.kind(), "message": outcome.message, "spec": spec}
        if shrinker is not None and n < max_minimize:
            kind = outcome.kind()
            small = minimize(spec, lambda s: shrinker.check(s, timeout).kind() == kind)
            again = shrinker.check(small, timeout)
            entry["minimized_spec"] = small
            entry["repro"] = os.path.relpath(write_regression(
                small, again, mode, regressions_dir or os.path.join(ROOT, "tests", "fuzz_regressions")), ROOT)
            log(f"[fuzz] seed {spec['seed']} minimized -> {entry['repro']}")
        result.failures.append(entry)
    if shrinker is not None:
        shrinker.close()
    return result


def write_report(result: RunResult, path: str):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(result.as_dict(), fh, indent=1, default=str)
    with open(os.path.splitext(path)[0] + ".txt", "w") as fh:
        fh.write(result.text() + "\n")
