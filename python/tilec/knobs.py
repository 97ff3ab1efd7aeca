"""Environment variables tilec reads: the Python mirror of the C++ knob table.

The table in ``src/support/knobs.cc`` is the source of truth; this file is kept in step
by hand, and ``tests/python/test_knobs.py`` checks that both agree (through
``tilec --list-knobs --json``). Python code reads the environment only through the
accessors below, never ``os.environ`` directly.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Knob:
    name: str
    type: str      # "bool", "string", "path" or "choice"
    default: str   # as a user reads it
    choices: str   # "a|b" for a choice, "" otherwise
    help: str


KNOBS: tuple[Knob, ...] = (
    Knob("TILEC_DUMP_IR", "string", "", "",
         "Print the IR (T-script) to stderr after every pass that changed it. 1 = every "
         "kernel and pass; otherwise comma-separated globs matched against the kernel name "
         "or the pass name (e.g. gemm, 'lower_*'); with 'diff' among them (TILEC_DUMP_IR=diff or diff,gemm) "
         "a unified diff against the IR before the pass instead of the whole IR."),
    Knob("TILEC_DUMP_DIR", "path", "", "",
         "Write every compilation stage (IR after each pass as NN_<pass>.py, CUDA source, PTX, "
         "cubin, ptxas log) to <dir>/<kernel>/<target>/."),
    Knob("TILEC_TIME_PASSES", "bool", "0", "",
         "Print the wall time of each pass to stderr."),
    Knob("TILEC_CACHE_DIR", "path", "~/.cache/tilec", "",
         "Directory of the on-disk kernel cache."),
    Knob("TILEC_DISABLE_CACHE", "bool", "0", "",
         "Do not read or write the kernel caches (memory and disk); always compile."),
    Knob("TILEC_COMPILER", "choice", "nvrtc", "nvrtc|nvcc",
         "Device compiler: NVRTC in-process, or nvcc as a subprocess (debugging)."),
    Knob("TILEC_CUDA_HOME", "path",
         "$CUDA_HOME, $CUDA_PATH, the build-time toolkit, /usr/local/cuda", "",
         "CUDA toolkit root (for its headers and nvcc)."),
    Knob("TILEC_LINE_DIRECTIVES", "bool", "0", "",
         "Emit #line directives in generated CUDA that point back to the kernel's source lines."),
    Knob("TILEC_DEBUG_SYNC", "bool", "0", "",
         "Hang detector: every mbarrier wait traps after ~2 s, printing the kernel, barrier, parity and block."),
    Knob("TILEC_LAUNCH_BLOCKING", "bool", "0", "",
         "Wait for every kernel to finish after its launch, so a fault is reported by the call of the kernel "
         "that caused it (slow; for debugging)."),
    Knob("TILEC_PYTHON", "path", "python3", "",
         "The Python interpreter that `tilec compile FILE.py::NAME` runs (the source tree's python/ is put on its path)."),
    Knob("TILEC_PASS_CONFIGS", "string", "", "",
         "Pass configs added to every compile, as key=value pairs separated by commas (e.g. "
         "tilec.intra_wg_overlap=false): for trying a compiler option on programs left unmodified. A program's "
         "own pass_configs win; the values join the cache key like any pass config."),
    Knob("TILEC_TORCH_SHIM", "bool", "1", "",
         "Use libtilec_torch_shim (built where torch imports) to allocate kernel outputs and read the current "
         "stream through libtorch; 0 = always through torch's Python API."),
)

_BY_NAME = {k.name: k for k in KNOBS}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def raw(name: str) -> Optional[str]:
    """The value of a declared knob, or None when unset."""
    if name not in _BY_NAME:
        raise KeyError(f"knob {name} is not declared in tilec/knobs.py")
    return os.environ.get(name)


def _bool(name: str) -> bool:
    value = raw(name)
    if value is None or value.lower() in _FALSE:
        return False
    if value.lower() in _TRUE:
        return True
    raise ValueError(f"environment variable {name}='{value}' is not a boolean "
                     "(use 1/0, true/false, yes/no or on/off)")


def _home() -> str:
    return os.path.expanduser("~")


def _expand(path: str) -> str:
    return os.path.expanduser(path) if path.startswith("~") else path


def dump_ir() -> str:
    value = raw("TILEC_DUMP_IR") or ""
    return "" if value.lower() in ("0", "false", "off", "no") else value


def dump_ir_matches(kernel: str, pass_name: str) -> bool:
    """Same rule as knobs::dump_ir_matches in C++."""
    for pattern in dump_ir().split(","):
        if not pattern:
            continue
        if pattern.lower() in ("1", "all", "true", "*"):
            return True
        if fnmatch.fnmatchcase(kernel, pattern) or fnmatch.fnmatchcase(pass_name, pattern):
            return True
    return False


def dump_dir() -> str:
    return _expand(raw("TILEC_DUMP_DIR") or "")


def torch_shim_enabled() -> bool:
    value = raw("TILEC_TORCH_SHIM")
    return value is None or _bool("TILEC_TORCH_SHIM")


def time_passes() -> bool:
    return _bool("TILEC_TIME_PASSES")


def cache_dir() -> str:
    value = raw("TILEC_CACHE_DIR")
    return _expand(value) if value else os.path.join(_home(), ".cache", "tilec")


def disable_cache() -> bool:
    return _bool("TILEC_DISABLE_CACHE")


def compiler() -> str:
    value = raw("TILEC_COMPILER")
    if not value:
        return "nvrtc"
    if value.lower() in ("nvrtc", "nvcc"):
        return value.lower()
    raise ValueError(f"environment variable TILEC_COMPILER='{value}' is not a known compiler "
                     "(use nvrtc or nvcc)")


def cuda_home() -> str:
    """Like the C++ accessor, except that the build-time toolkit is unknown here."""
    for name in ("TILEC_CUDA_HOME",):
        value = raw(name)
        if value:
            return _expand(value)
    for name in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(name)
        if value:
            return value
    return "/usr/local/cuda"


def line_directives() -> bool:
    return _bool("TILEC_LINE_DIRECTIVES")


def debug_sync() -> bool:
    return _bool("TILEC_DEBUG_SYNC")


def launch_blocking() -> bool:
    return _bool("TILEC_LAUNCH_BLOCKING")


def python() -> str:
    value = raw("TILEC_PYTHON")
    return _expand(value) if value else "python3"
