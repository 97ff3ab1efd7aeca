"""`tvm.target.Target` for the CUDA target strings TileLang programs pass around."""

from __future__ import annotations

from typing import Any


class Target:
    """A target description; tilec compiles for CUDA ("cuda", "sm_90a", "cuda -arch=sm_90a")."""

    def __init__(self, target: Any, host: Any = None):
        text = str(target)
        self.kind = type("Kind", (), {"name": text.split()[0] if text else "cuda"})()
        self._text = text
        self.arch = ""
        for part in text.split():
            if part.startswith("-arch="):
                self.arch = part[len("-arch="):]
        if text.startswith("sm_"):
            self.arch = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Target({self._text!r})"
