"""A checking process, so that a crash (a signal in the compiler or the CPU target) or a hang
(a GPU kernel that never ends) costs one program, not the run.

Child: `main()` (started by `Worker`) reads one JSON spec a line on stdin and writes one
JSON outcome a line on the original stdout (anything else printed goes to stderr).
Parent: `Worker(mode).check(spec, timeout)` returns an Outcome; 'crash' when the child died
(with the end of its stderr), 'hang' when it ran out of time (the child is killed; the next
check starts a new one). After a failure on the GPU the child is replaced too (a fault can
leave its CUDA context unusable).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile

from .check import Outcome

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# compute-sanitizer's exit status when it found errors (--error-exitcode).
SANITIZER_ERROR_EXIT = 86


def sanitizer_command(tool: str) -> list:
    """The prefix that runs a checking process under compute-sanitizer's `tool`. Its report goes
    to stderr (the worker's stdout carries only the JSON answers)."""
    return ["compute-sanitizer", "--tool", tool, "--error-exitcode", str(SANITIZER_ERROR_EXIT), "--print-limit", "20",
            "--log-file", "/dev/stderr"]


class Worker:
    """`wrapper`: a command the checking process runs under (compute-sanitizer); then every
    program gets its own process, and an exit status of SANITIZER_ERROR_EXIT after a clean
    answer is a failure of stage 'sanitizer'."""

    def __init__(self, mode: str, wrapper=None):
        self.mode = mode
        self.wrapper = list(wrapper or [])
        self.proc = None
        self.log = None

    def _start(self):
        self.log = tempfile.TemporaryFile(mode="w+b")
        # the child finds tilec and tools/ through sys.path (the environment is left alone: knobs.py
        # is the only reader of it)
        boot = (f"import sys; sys.path[:0] = [{os.path.join(ROOT, 'python')!r}, {ROOT!r}]; "
                "from tools.fuzz.worker import main; main()")
        self.proc = subprocess.Popen(self.wrapper + [sys.executable, "-c", boot, self.mode], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)

    def _stderr_tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def check(self, spec: dict, timeout: float, on_slow=None) -> Outcome:
        """`on_slow(seconds)` is called once when the answer takes more than half the timeout
        (so that a run killed from outside still names the program it was stuck on)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write((json.dumps(spec) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout / 2 if on_slow else timeout)
        if not ready and on_slow:
            on_slow(timeout / 2)
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout / 2)
        line = self.proc.stdout.readline() if ready else b""
        if line:
            outcome = Outcome(**json.loads(line))
            if self.wrapper:
                return self._wrapped_exit(outcome, timeout)
            if outcome.stage == "gpu_run":  # a fault can leave the CUDA context unusable: a fresh process
                self.close()
            return outcome
        if not ready:  # out of time
            self.close()
            return Outcome("hang", "timeout", f"no answer within {timeout:g} s")
        self.proc.wait()
        rc = self.proc.returncode
        tail = self._stderr_tail()
        self.proc = None
        return Outcome("crash", "process", f"the checking process died (exit status {rc}):\n{tail}")

    def _wrapped_exit(self, outcome: Outcome, timeout: float) -> Outcome:
        """One program per wrapped process: end it and read the wrapper's verdict."""
        try:
            self.proc.stdin.close()
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.close()
            return Outcome("hang", "sanitizer", f"the checking process did not exit within {timeout:g} s")
        tail = self._stderr_tail()
        self.proc = None
        if rc == SANITIZER_ERROR_EXIT and outcome.status in ("ok", "reject"):
            return Outcome("fail", "sanitizer", f"{' '.join(self.wrapper[:3])} reported errors:\n{tail}")
        return outcome

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def main():
    from .check import check

    mode = sys.argv[1]
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints (C++ or Python) must not corrupt the answers
    sys.stdout = sys.stderr
    for line in sys.stdin:
        spec = json.loads(line)
        out.write(json.dumps(check(spec, mode).as_dict()) + "\n")
        out.flush()

