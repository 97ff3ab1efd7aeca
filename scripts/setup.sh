#!/usr/bin/env bash
# Set up a machine to build, test and run tilec, then build it. Idempotent and quiet:
# what is already there is detected and left alone, so this also works on a machine
# without network (the GPU machine) as long as the dependencies are present.
#
#   scripts/setup.sh [--debug] [--cpp-only] [--main-only]
#
# Steps:
#   1. system tools (g++, cmake, ninja) and GoogleTest (Debian libgtest-dev), via apt only
#      when missing;
#   2. Python packages (nanobind, scikit-build-core, numpy, pytest; matplotlib, optional: only
#      the layout plots use it), via pip only when missing or too old; pip never builds in
#      isolation (no downloads of build deps), and only nanobind (needed by the build) is
#      fatal when it cannot be installed;
#   3. one CMake/Ninja build in build/: libtilec, the tilec CLI, the C++ tests and the
#      _tilec extension (--main-only: only the _tilec extension, what the main job runs;
#      on a fresh clone on 2 cores that makes scripts/run_main.sh take 252 s instead of
#      624 s, the C++ tests being most of the difference). Ninja's progress
#      ([done/total, seconds]) and the compiler's warnings are shown; the full output is
#      also kept in build/setup-build.log. Each step prints its time;
#   4. the Python package is used in place: python/tilec/_tilec*.so links to the built
#      extension, and the scripts put python/ on PYTHONPATH.
#
# Why in place and not `pip install -e .`: one build of the C++ core serves the CLI, the
# C++ tests and the extension (a second, pip-driven build doubles the compile time on a
# 2-core CI machine), and nothing in it can reach for the network or depends on the
# editable-install hooks of a particular pip/scikit-build-core version. `pip install .`
# (pyproject.toml, scikit-build-core) remains the way to install tilec for users.
#
# Environment: PYTHON (default python3) picks the interpreter the extension is built for.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
PYTHON="${PYTHON:-python3}"
BUILD_TYPE=Release
WITH_PYTHON=1
MAIN_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --debug) BUILD_TYPE=Debug ;;
    --cpp-only) WITH_PYTHON=0 ;;
    --main-only) MAIN_ONLY=1 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

say() { echo "[setup] $*"; }
die() { echo "[setup] error: $*" >&2; exit 1; }
[ "$MAIN_ONLY" = 1 ] && [ "$WITH_PYTHON" = 0 ] && die "--main-only builds the Python extension; it cannot go with --cpp-only"
STEP_START=$SECONDS
step_done() { say "$1 ($((SECONDS - STEP_START)) s)"; STEP_START=$SECONDS; }

# ---------------------------------------------------------------- 1. system packages
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; fi
APT_UPDATED=0
apt_install() {  # apt_install pkg... ; returns non-zero when apt is unusable
  command -v apt-get >/dev/null 2>&1 || return 1
  if [ "$APT_UPDATED" = 0 ]; then
    $SUDO apt-get update -qq -o Acquire::Retries=0 -o Acquire::http::Timeout=20 >/dev/null 2>&1 || return 1
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1
}

need_apt=()
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v ninja >/dev/null 2>&1 || need_apt+=(ninja-build)
if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing ${need_apt[*]} (apt)"
  apt_install "${need_apt[@]}" || die "could not install ${need_apt[*]}; install them and re-run"
fi

have_gtest() {
  [ -f /usr/include/gtest/gtest.h ] && return 0
  compgen -G "/usr/lib/*/cmake/GTest/GTestConfig.cmake" >/dev/null && return 0
  compgen -G "/usr/local/lib*/cmake/GTest/GTestConfig.cmake" >/dev/null && return 0
  return 1
}
WITH_TESTS=ON
if ! have_gtest; then
  say "installing libgtest-dev (apt)"
  if ! apt_install libgtest-dev || ! have_gtest; then
    say "warning: GoogleTest is not available; building without the C++ tests"
    WITH_TESTS=OFF
  fi
fi

step_done "1/4 system packages ok"

# ---------------------------------------------------------------- 2. Python packages
# dist name, minimum accepted version, version installed when missing, what needs it.
# Only what the build needs is fatal when it cannot be installed; a missing test package
# is reported here and again by the test run.
PY_REQS=(
  "nanobind 2.0 3.1.0 the-Python-extension"
  "scikit-build-core 0.10 1.1.2 pip-install-."
  "numpy 1.24 2.4.6 the-Python-tests"
  "pytest 7.0 9.2.0 the-Python-tests"
  "matplotlib 3.5 3.11.2 the-layout-plots-(optional;-their-tests-skip-without-it)"
)
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (set PYTHON=/path/to/python3)"
py_has() {  # py_has dist min_version
  "$PYTHON" - "$1" "$2" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
def key(v):
    out = []
    for part in v.split("."):
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits) if digits else 0)
    return out
sys.exit(0 if key(version(sys.argv[1])) >= key(sys.argv[2]) else 1)
EOF
}
missing=()
for req in "${PY_REQS[@]}"; do
  read -r dist min pin use <<<"$req"
  [ "$WITH_PYTHON" = 0 ] && [ "$dist" = nanobind ] && continue
  py_has "$dist" "$min" || missing+=("$dist==$pin")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} (pip)"
  if ! "$PYTHON" -m pip install -q --disable-pip-version-check --no-build-isolation \
         --retries 1 --timeout 20 "${missing[@]}"; then
    for req in "${PY_REQS[@]}"; do
      read -r dist min pin use <<<"$req"
      [ "$WITH_PYTHON" = 0 ] && [ "$dist" = nanobind ] && continue
      py_has "$dist" "$min" && continue
      if [ "$dist" = nanobind ]; then
        die "pip could not install $dist>=$min (no network?); install it, or use --cpp-only"
      fi
      say "warning: $dist>=$min is missing and pip could not install it (needed by ${use//-/ })"
    done
  fi
fi

step_done "2/4 Python packages ok"

# ---------------------------------------------------------------- 3. build
if [ "$WITH_PYTHON" = 1 ]; then
  "$PYTHON" -c 'import os, sysconfig; raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || die "Python.h for $PYTHON is missing (install its development headers, or use --cpp-only)"
  PY_FLAGS=(-DTILEC_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$(command -v "$PYTHON")")
else
  PY_FLAGS=(-DTILEC_BUILD_PYTHON=OFF)
fi
JOBS="$(nproc 2>/dev/null || echo 2)"
LOG="$BUILD_DIR/setup-build.log"
mkdir -p "$BUILD_DIR"
TARGETS=()
WHAT="everything"
if [ "$MAIN_ONLY" = 1 ]; then TARGETS=(--target _tilec); WHAT="the Python extension only"; fi
say "3/4 building $WHAT ($BUILD_TYPE, tests $WITH_TESTS, python $WITH_PYTHON) in build/ with $JOBS jobs"
# Ninja prints one line per step when its output is not a terminal; the status prefix
# shows progress and elapsed time, and the compiler's warnings come through as they happen.
export NINJA_STATUS="[setup]   [%f/%t %es] "
if ! { cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
         -DTILEC_BUILD_TESTS="$WITH_TESTS" -DTILEC_BUILD_TOOLS=ON "${PY_FLAGS[@]}" >"$LOG" 2>&1 &&
       cmake --build "$BUILD_DIR" -j "$JOBS" "${TARGETS[@]}" 2>&1 | tee -a "$LOG" | \
         sed -u -e 's|^\(\[setup\]   \[[0-9]*/[0-9]* [0-9.]*s\] \)[A-Za-z ]*CXX object [^ ]*/\([^/ ]*\)\.o$|\1\2|'; }; then
  tail -n 60 "$LOG" >&2
  die "build failed (full log: $LOG)"
fi
step_done "3/4 build done"

# ---------------------------------------------------------------- 4. Python package in place
if [ "$WITH_PYTHON" = 1 ]; then
  ext="$(find "$BUILD_DIR" -maxdepth 1 -name '_tilec*.so' -print -quit)"
  [ -n "$ext" ] || die "the _tilec extension was not built (see $LOG)"
  mkdir -p "$ROOT/python/tilec"
  find "$ROOT/python/tilec" -maxdepth 1 -name '_tilec*.so' ! -name "$(basename "$ext")" -delete
  ln -sf "$ext" "$ROOT/python/tilec/$(basename "$ext")"
  # the optional torch shim (built only where torch imports; CMakeLists.txt, TILEC_TORCH_SHIM)
  if [ -f "$BUILD_DIR/libtilec_torch_shim.so" ]; then
    ln -sf "$BUILD_DIR/libtilec_torch_shim.so" "$ROOT/python/tilec/libtilec_torch_shim.so"
  else
    rm -f "$ROOT/python/tilec/libtilec_torch_shim.so"
  fi
fi
step_done "4/4 Python package linked in place"
if [ "$MAIN_ONLY" = 1 ]; then
  say "done: python/tilec/_tilec (use PYTHONPATH=$ROOT/python); scripts/setup.sh builds the CLI and C++ tests too"
  exit 0
fi
say "done: build/tilec$([ "$WITH_TESTS" = ON ] && echo ", build/tilec_tests")$([ "$WITH_PYTHON" = 1 ] && echo ", python/tilec/_tilec (use PYTHONPATH=$ROOT/python)")"
