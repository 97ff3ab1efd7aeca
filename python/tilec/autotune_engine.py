"""The autotuner's engine (the API is tilec.autotuner): compile every configuration in
parallel, drop those that do not compile or that spill registers, time the rest, and remember
the winner on disk.

    select(candidates, prepare_one, measure, what, cache_key=None, workers=None, timeout=None)
        -> AutotuneResult

`prepare_one(config)` runs in the calling thread (it builds the program: the front end is not
shared between threads) and returns a thunk that compiles it; the thunks run on a thread pool
(`workers`, default: every core), since the C++ compile releases the GIL. `measure(kernel,
config, reference)` returns a latency in ms (it may check the kernel's outputs against
`reference`, the first configuration that compiled); None means nothing can be timed here: the
first configuration that compiles without spilling wins. With a `cache_key`, the winner of a
timed run is stored under `<cache dir>/autotune/` (private: 0700 / 0600; read only when owned
by this user and writable by no one else) and a later run with the same key compiles only it.

`timeout` (seconds, per configuration, TileLang's meaning): a configuration whose check and
timing take longer is skipped with the reason logged. Nothing is interrupted (a thread cannot be
stopped safely, and a kernel already on the GPU runs to its end anyway): `measure` gets the
configuration's deadline through `deadline()` and may give up early by raising
ConfigTimeout (the GPU measure does, between the check and the timing); whatever it returns
after the deadline is discarded.
"""
from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Optional

from .errors import CompileError

_log = logging.getLogger("tilec.autotuner")
_SKIPPED = (CompileError, ValueError, TypeError, NotImplementedError)


class ConfigTimeout(Exception):
    """Raised by a measure function that gave up on a configuration past its deadline."""


class _Deadline(threading.local):
    at: Optional[float] = None  # time.perf_counter() value, None: no limit


_deadline = _Deadline()


def deadline() -> Optional[float]:
    """The current configuration's deadline (a time.perf_counter() value), None without a timeout."""
    return _deadline.at


def check_deadline(stage: str) -> None:
    """Raises ConfigTimeout when the current configuration is past its deadline."""
    if _deadline.at is not None and time.perf_counter() > _deadline.at:
        raise ConfigTimeout(f"after {stage}")


def _measure_within(measure: Callable, kernel: Any, config: dict, reference: Any, timeout: Optional[float]):
    """(latency, None), or (None, why skipped) when the check and timing took over `timeout` s."""
    start = time.perf_counter()
    _deadline.at = start + timeout if timeout else None
    try:
        latency = measure(kernel, config, reference)
    except ConfigTimeout as e:
        latency = None
        why = str(e)
    else:
        why = None
    finally:
        _deadline.at = None
    elapsed = time.perf_counter() - start
    if timeout and (why is not None or elapsed > timeout):
        stopped = f" (stopped {why})" if why else ""
        return None, f"its check and timing took {elapsed:.2f} s{stopped}, over the timeout of {timeout:g} s"
    return latency, None


def spills(kernel: Any) -> int:
    """Bytes of registers the kernel spills (stores + loads), 0 when unknown."""
    info = getattr(kernel, "ptxas_info", None)
    if not isinstance(info, dict):
        return 0
    return int(info.get("spill_stores_bytes", 0) or 0) + int(info.get("spill_loads_bytes", 0) or 0)


class _Progress:
    """tqdm when installed; else a line on stderr at every quarter (for 8 or more items)."""

    def __init__(self, total: int, what: str, doing: str = "compiling"):
        self.total, self.what, self.done, self.failed = total, what, 0, 0
        self.bar = None
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=f"autotune {what}: {doing}", leave=False)
        except ImportError:
            pass

    def step(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.total >= 8 and self.done * 4 // self.total != (self.done - 1) * 4 // self.total:
            print(f"autotune {self.what}: compiled {self.done}/{self.total} ({self.failed} skipped)",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _compile_all(candidates: list, prepare_one: Callable, what: str, workers: Optional[int]) -> list:
    """[(config, kernel or None, reason)] in the candidates' order."""
    from .kernel import spill_warnings_silenced
    thunks = []
    for config in candidates:
        try:
            thunks.append(prepare_one(config))
        except _SKIPPED as e:
            thunks.append(e)
    out: list = [None] * len(candidates)

    def run(i):
        t = thunks[i]
        if isinstance(t, Exception):
            return i, None, str(t).splitlines()[0] if str(t) else type(t).__name__
        try:
            with spill_warnings_silenced():  # select() logs and skips the spilling ones
                return i, t(), ""
        except _SKIPPED as e:
            return i, None, str(e).splitlines()[0] if str(e) else type(e).__name__

    n = max(1, min(workers or os.cpu_count() or 1, len(candidates)))
    # Worker processes compile first and fill the disk cache (threads alone stop scaling at
    # about 3x); the threads below then mostly find the cubins there (compile_workers.py).
    from .compile_workers import usable, warm_disk_cache

    jobs = [functools.partial(run, i) for i, t in enumerate(thunks) if not isinstance(t, Exception)]
    workers_used = usable(len(jobs), n)
    if workers_used:
        warming = _Progress(len(jobs), what, f"compiling in {n} processes")
        try:
            warm_disk_cache(jobs, n, on_done=lambda: warming.step(True))
        finally:
            warming.close()
    progress = _Progress(len(candidates), what, "collecting" if workers_used else "compiling")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=n, thread_name_prefix="tilec-autotune") as pool:
            for i, kernel, reason in pool.map(run, range(len(candidates))):
                out[i] = (candidates[i], kernel, reason)
                progress.step(kernel is not None)
    finally:
        progress.close()
    for config, kernel, reason in out:
        if kernel is None:
            _log.info("autotune %s: config %s does not compile: %s", what, config, reason)
    return out


def _cache_path(key: str) -> str:
    from . import knobs

    digest = hashlib.sha256(key.encode()).hexdigest()
    return os.path.join(knobs.cache_dir(), "autotune", digest + ".json")


def _trusted(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not (st.st_mode & 0o022)


def cached_config(key: str) -> Optional[dict]:
    """The winner stored under `key`, or None (no entry, unreadable, or not trusted)."""
    from . import knobs

    if knobs.disable_cache():
        return None
    path = _cache_path(key)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd) as f:
        if not _trusted(os.fstat(f.fileno())) or not _trusted(os.stat(os.path.dirname(path))):
            _log.warning("autotune cache entry %s is not trusted (owner or permissions); ignored", path)
            return None
        try:
            entry = json.load(f)
        except (ValueError, OSError):
            return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("config"), dict) else None


def store_config(key: str, config: dict, latency: float) -> None:
    from . import knobs

    if knobs.disable_cache():
        return
    try:
        data = json.dumps({"config": config, "latency_ms": latency, "key": key})
    except (TypeError, ValueError):
        return  # a configuration that is not plain data is not cached
    path = _cache_path(key)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = f"{path}.tmp.{os.getpid()}.{time.monotonic_ns()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        _log.info("autotune: winner not cached (%s)", e)


def select(candidates: list, prepare_one: Callable, measure: Optional[Callable], what: str,
           cache_key: Optional[str] = None, workers: Optional[int] = None, timeout: Optional[float] = None):
    from .autotuner import AutotuneResult

    if not candidates:
        raise ValueError(f"autotune {what}: no configurations to try (configs is empty)")
    start = time.perf_counter()
    if cache_key is not None and measure is not None:
        entry = cached_config(cache_key)
        if entry is not None and entry["config"] in candidates:
            config = entry["config"]
            kernel = prepare_one(config)()
            _log.info("autotune %s: cached winner %s (%.4f ms when tuned)", what, config, entry.get("latency_ms", 0))
            return AutotuneResult(latency=entry.get("latency_ms"), config=config, kernel=kernel, tried=1, compiled=1,
                                  cached=True)
    compiled = _compile_all(candidates, prepare_one, what, workers)
    result = AutotuneResult(tried=len(candidates))
    ok = [(c, k) for c, k, _ in compiled if k is not None]
    result.compiled = len(ok)
    survivors = [(c, k) for c, k in ok if spills(k) == 0]
    for c, k in ok:
        if spills(k):
            _log.info("autotune %s: config %s spills %d bytes of registers: skipped", what, c, spills(k))
    if ok and not survivors:
        _log.warning("autotune %s: every configuration spills registers; choosing among them", what)
        survivors = ok
    compile_s = time.perf_counter() - start
    if not survivors:
        first = next(((c, r) for c, _, r in compiled if r), None)
        detail = f"; the first error ({first[0]}): {first[1]}" if first else ""
        raise CompileError(f"autotune {what}: none of the {len(candidates)} configurations compiled{detail}")
    if measure is None:
        result.config, result.kernel = survivors[0]
        result.latency = float("nan")  # not measured
        _log.warning("autotune %s: no CUDA GPU to time kernels on; taking the first configuration that compiles: "
                     "%s (%d of %d compiled)", what, result.config, len(ok), len(candidates))
        return result
    reference = survivors[0][1]
    timed_out = 0
    for config, kernel in survivors:
        try:
            latency, why = _measure_within(measure, kernel, config, reference, timeout)
        except AssertionError as e:
            _log.info("autotune %s: config %s gives wrong results: %s", what, config, str(e).splitlines()[0])
            continue
        if why is not None:
            timed_out += 1
            _log.warning("autotune %s: config %s skipped: %s", what, config, why)
            continue
        if latency is not None and (result.latency is None or latency < result.latency):
            result.latency, result.config, result.kernel = latency, config, kernel
    if result.kernel is None:
        detail = f" ({timed_out} over the timeout of {timeout:g} s)" if timed_out else ""
        raise CompileError(f"autotune {what}: none of the {len(survivors)} compiled configurations passed its check"
                           f"{detail}")
    result.compile_s, result.bench_s = compile_s, time.perf_counter() - start - compile_s
    _log.info("autotune %s: best %s at %.4f ms (%d configurations; compile %.1f s, benchmark %.1f s)", what,
              result.config, result.latency, len(candidates), result.compile_s, result.bench_s)
    if cache_key is not None:
        store_config(cache_key, result.config, result.latency)
    return result
