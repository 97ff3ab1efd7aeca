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
"""

from __future__ import annotations

import linecache

__all__ = ["CompileError", "InternalError"]


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
