"""Many compiles at once: worker processes fill the disk cache, then threads collect the kernels.

NVRTC compiles in threads of one process stop scaling early: on the H200 host's 16 cores, 72
GEMM configurations compiled at 9.7 a second on 16 threads (2.9x one thread) and at 30.6 a
second in 16 forked processes (bench/compile_scaling.py, docs/PERFORMANCE.md). So the
autotuner and par_compile first run the compile jobs in forked worker processes, which only
write the on-disk kernel cache; the jobs then run again on threads in this process, where each
one finds its cubin on disk (a cache hit: tilec's passes, no NVRTC).

The workers are a speed-up only, never needed for a result: a job that fails or crashes in a
worker simply compiles in this process afterwards (with its error, if it has one), and workers
still running at the deadline are killed. They are used where they can help: a POSIX system,
the disk cache on, four or more workers and more jobs than workers. One job runs here first:
it resolves the target (the GPU query happens before the fork, so the workers never call the
CUDA driver: nothing but NVRTC and file writes runs in them).
"""
from __future__ import annotations

import os
import time
import warnings
from typing import Callable, Optional, Sequence

from . import knobs

MIN_WORKERS = 4


def usable(jobs: int, workers: int) -> bool:
    return (hasattr(os, "fork") and os.name == "posix" and workers >= MIN_WORKERS and jobs > workers
            and not knobs.disable_cache())


def warm_disk_cache(jobs: Sequence[Callable[[], object]], workers: int, deadline_s: float = 600.0,
                    on_done: Optional[Callable[[], None]] = None) -> int:
    """Runs jobs[1:] in `workers` forked processes (job i in worker i % workers) after running
    jobs[0] here; returns how many workers were started (0: not used). Exceptions in the jobs
    are ignored here: the caller runs every job again and sees them. `on_done` is called here
    once per job finished (job 0 and each worker's, through a pipe): a progress bar."""
    if not usable(len(jobs), workers):
        return 0
    try:
        jobs[0]()  # here: the target is resolved (and NVRTC loaded) before the fork
    except Exception:
        pass  # the caller reports it; a failing configuration says nothing about the others
    if on_done:
        on_done()
    rest = list(jobs[1:])
    workers = min(workers, len(rest))
    done_r, done_w = os.pipe()
    os.set_blocking(done_r, False)
    pids = []
    with warnings.catch_warnings():
        # Python 3.12 warns about fork in a process with threads (torch's): a worker runs only
        # the compile jobs and leaves with os._exit, touching nothing those threads hold.
        warnings.simplefilter("ignore", DeprecationWarning)
        for w in range(workers):
            pid = os.fork()
            if pid == 0:  # a worker: compile its share, write the cache, leave without cleanup
                code = 0
                try:
                    os.close(done_r)
                    for job in rest[w::workers]:
                        try:
                            job()
                        except BaseException:
                            code = 1
                        os.write(done_w, b".")
                finally:
                    os._exit(code)
            pids.append(pid)
    os.close(done_w)
    end = time.monotonic() + deadline_s
    running = set(pids)

    def report():
        try:
            n = len(os.read(done_r, 1 << 16))
        except BlockingIOError:
            n = 0
        for _ in range(n if on_done else 0):
            on_done()

    while running:
        report()
        for pid in list(running):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                running.discard(pid)
        if running and time.monotonic() > end:
            for pid in running:
                try:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                except OSError:
                    pass
            break
        if running:
            time.sleep(0.01)
    report()
    os.close(done_r)
    return workers
