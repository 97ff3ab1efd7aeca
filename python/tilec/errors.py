"""The two error channels of tilec, as Python exceptions.

``CompileError``: the kernel the user wrote is wrong. It carries the user's file, line and
column and a hint, and prints the offending source line with a caret under the column::

    example.py:12:9: error: T.copy: source region has shape (64, 32) but destination
    'A_shared' has shape (128, 32)
        T.copy(A[by * 64, k * 32], A_shared)
        ^
      hint: make both sides the same shape

``InternalError``: tilec itself is wrong ("please report").

C++ ``tilec::UserError`` / ``tilec::InternalError`` arrive as these classes (the extension
is told about them in ``tilec/__init__.py``).

Besides the errors, ``TilecWarning``: the kernel compiles, but not the way its author may
expect (a ``T.Pipelined`` loop that is not pipelined, a Python ``print`` in a kernel body);
it is reported at the kernel's file and line, once per process. ``TilecNote``: one line
about what tilec did (a kernel built a second time, and why).

An uncaught ``CompileError`` prints a traceback of the user's frames only: tilec's own
frames (the parser, the decorator) are left out by ``sys.excepthook``; the frames that
re-raise it set ``__tracebackhide__``, which pytest and IPython honour.
"""

from __future__ import annotations

import linecache
import os
import sys
import warnings

__all__ = ["CompileError", "InternalError", "TilecWarning", "TilecNote"]


class CompileError(Exception):
    """A user error in a tilec kernel, with the source location and a hint."""

    def __init__(self, message: str, file: str = "", line: int = 0, col: int = 0, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.file = file or ""
        self.line = int(line or 0)
        self.col = int(col or 0)
        self.hint = hint or ""

    @property
    def loc_known(self) -> bool:
        return self.line > 0

    def set_loc_if_unknown(self, file: str, line: int, col: int) -> "CompileError":
        if not self.loc_known:
            self.file, self.line, self.col = file, line, col
        return self

    def source_line(self) -> str:
        if not self.loc_known or not self.file:
            return ""
        return linecache.getline(self.file, self.line).rstrip("\n")

    def __str__(self) -> str:
        head = ""
        if self.loc_known:
            head = f"{self.file or '<kernel>'}:{self.line}"
            if self.col > 0:
                head += f":{self.col}"
            head += ": "
        out = [f"{head}error: {self.message}"]
        text = self.source_line()
        if text:
            stripped = text.lstrip()
            indent = len(text) - len(stripped)
            out.append("    " + stripped)
            if self.col > 0:
                out.append("    " + " " * max(self.col - 1 - indent, 0) + "^")
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)

    def __reduce__(self):
        return (type(self), (self.message, self.file, self.line, self.col, self.hint))


class InternalError(Exception):
    """A bug in tilec (an internal invariant failed). Please report it with the kernel."""


class TilecWarning(UserWarning):
    """The kernel compiles, but probably not as its author expects (see the message)."""


class TilecNote(TilecWarning):
    """One line about what tilec did on its own (e.g. built a kernel a second time)."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_registry: dict = {}  # warnings' "once per location" memory for the diagnostics below


def user_stacklevel() -> int:
    """The `stacklevel` for warnings.warn, called from tilec code, that names the innermost
    frame outside the tilec package (the user's call), not a tilec file."""
    level, f = 1, sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE_DIR):
        f, level = f.f_back, level + 1
    return level


def warn_at(message: str, file: str = "", line: int = 0, hint: str = "", category: type = TilecWarning) -> None:
    """Reports a TilecWarning at the kernel's file:line (where Python's warning display shows
    the source line), or at the user's call into tilec when the location is unknown."""
    text = f"{message} (hint: {hint})" if hint else message
    if line > 0 and file:
        warnings.warn_explicit(text, category, file, line, module=file, registry=_registry)
    else:
        warnings.warn(text, category, stacklevel=user_stacklevel())


def emit_diagnostics(diagnostics) -> None:
    """The (kind, message, file, line, col, hint) tuples the C++ compiler collected."""
    for kind, message, file, line, _col, hint in diagnostics:
        warn_at(message, file, line, hint, TilecNote if kind == "note" else TilecWarning)


def user_frames(tb):
    """The traceback `tb` without tilec's own frames (files under the tilec package)."""
    kept = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:] + [None]):
        a.tb_next = b
    return kept[0] if kept else None


_previous_hook = None


def _excepthook(exc_type, exc, tb):
    if isinstance(exc, CompileError):
        tb = user_frames(tb)
        exc = exc.with_traceback(tb)
    (_previous_hook or sys.__excepthook__)(exc_type, exc, tb)


def _ipython_handler(shell, etype, value, tb, tb_offset=None):
    shell.showtraceback((etype, value, user_frames(tb)), tb_offset=tb_offset)


def install_excepthook() -> None:
    """Uncaught CompileErrors print without tilec's frames. Chains to the hook installed
    before, so other libraries' hooks keep working. In IPython (which does not call
    sys.excepthook), a custom exception handler does the same, unless one is already set."""
    global _previous_hook
    if sys.excepthook is not _excepthook:
        _previous_hook = sys.excepthook
        sys.excepthook = _excepthook
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is not None and not getattr(shell, "custom_exceptions", ()):
        shell.set_custom_exc((CompileError,), _ipython_handler)
