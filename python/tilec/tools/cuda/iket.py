"""`tilelang.tools.cuda.iket`: TileLang's in-kernel event tracing, accepted and ignored.

Programs written for it run unchanged: `iket.session(...)` and `iket.range(...)` are context
managers (in a kernel, `with T.Kernel(...) as bx, iket.range("name"):` opens nothing),
`iket.mark(...)` in a kernel emits nothing, and the session's queries answer as for a run that
recorded no events (`event_table()` lists the names the kernels used, `trace_files()` is empty).
tilec does not instrument kernels: time device code with T.print of clock values or with
Nsight Compute. docs/LANGUAGE.md lists this as accepted-and-ignored."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Optional

from ...frontend import context
from ...language.frames import Frame

_session = {"output_dir": None, "runtime_payloads": False, "events": []}


def _note(name: Any) -> None:
    if isinstance(name, str) and name not in _session["events"]:
        _session["events"].append(name)


class _NoFrame(Frame):
    """`iket.range(...)` inside a kernel: a `with` item that opens no scope."""

    def begin(self, ctx: context.ParseContext) -> Any:
        return None

    def end(self, ctx: context.ParseContext) -> None:
        pass


@contextlib.contextmanager
def _host_range():
    yield None


def range(name: Any, *args: Any, **kwargs: Any):  # noqa: A001 - iket's name
    _note(name)
    return _NoFrame() if context.current() is not None else _host_range()


def mark(name: Any, *args: Any, payload: Any = None, **kwargs: Any) -> None:
    _note(name)


def payload(value: Any, dtype: Any = None, **kwargs: Any) -> Any:
    return value


@contextlib.contextmanager
def session(output_dir: Optional[str] = None, runtime_payloads: bool = False, **kwargs: Any):
    saved = dict(_session)
    _session.update(output_dir=output_dir, runtime_payloads=bool(runtime_payloads), events=[])
    try:
        yield None
    finally:
        _session.update(saved)


def event_table() -> dict:
    return {name: i for i, name in enumerate(_session["events"])}


def output_dir() -> Optional[str]:
    return _session["output_dir"]


def runtime_payloads_enabled() -> bool:
    return _session["runtime_payloads"]


def output_path(name: str, directory: Optional[str] = None) -> Path:
    base = Path(directory or _session["output_dir"] or os.getcwd())
    base.mkdir(parents=True, exist_ok=True)
    return base / name


def trace_files(directory: Optional[str] = None) -> list:
    return []
