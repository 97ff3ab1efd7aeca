#!/usr/bin/env bash
# README command 2: set up (scripts/setup.sh), then run the CPU test suites:
#   C++  — ctest over build/ (GoogleTest, one ctest entry per test)
#   Python — pytest tests/python, with python/ on PYTHONPATH
# Prints a summary line per suite and a final "summary: N passed, N failed, N skipped".
# Exits non-zero when setup fails, any test fails, or no C++ test ran.
#
#   scripts/run_tests.sh [--debug] [--cpp-only]     (options go to setup.sh)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
PYTHON="${PYTHON:-python3}"
CPP_ONLY=0
for arg in "$@"; do [ "$arg" = "--cpp-only" ] && CPP_ONLY=1; done

"$ROOT/scripts/setup.sh" "$@" || { echo "[tests] setup failed" >&2; exit 1; }

JOBS="$(nproc 2>/dev/null || echo 2)"
RESULTS="$BUILD_DIR/test-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

# ------------------------------------------------------------------ C++
cpp_rc=0
if [ -x "$BUILD_DIR/tilec_tests" ]; then
  echo "[tests] C++ (ctest)"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 600 \
        --output-junit "$RESULTS/ctest.xml"
  cpp_rc=$?
else
  echo "[tests] error: build/tilec_tests was not built (is GoogleTest installed?)" >&2
  cpp_rc=1
fi

# ------------------------------------------------------------------ Python
py_rc=0
if [ "$CPP_ONLY" = 0 ] && [ ! -d "$ROOT/tests/python" ]; then
  echo "[tests] Python: no tests/python folder"
elif [ "$CPP_ONLY" = 0 ]; then
  echo "[tests] Python (pytest tests/python)"
  PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
    "$PYTHON" -m pytest -q "$ROOT/tests/python" --junitxml="$RESULTS/pytest.xml" -p no:cacheprovider
  py_rc=$?
  if [ "$py_rc" = 5 ]; then
    echo "[tests] pytest collected no tests"
    py_rc=0
  fi
fi

# ------------------------------------------------------------------ summary
# The counts come from the JUnit files of both runners; the summary line is printed last.
status=0
if [ "$cpp_rc" != 0 ] || [ "$py_rc" != 0 ]; then
  echo "[tests] FAILED (ctest exit $cpp_rc, pytest exit $py_rc)"
  status=1
fi
"$PYTHON" - "$RESULTS" <<'EOF'
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

totals = {"passed": 0, "failed": 0, "skipped": 0}
ran = {}
for name, label in (("ctest.xml", "C++"), ("pytest.xml", "Python")):
    path = Path(sys.argv[1]) / name
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    if path.exists():
        root = ET.parse(path).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        for case in (c for s in suites for c in s.iter("testcase")):
            if case.find("failure") is not None or case.find("error") is not None:
                counts["failed"] += 1
            elif case.find("skipped") is not None or case.get("status") in ("disabled", "notrun"):
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    ran[label] = sum(counts.values())
    for k in totals:
        totals[k] += counts[k]
    print(f"[tests] {label}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
if ran["C++"] == 0:
    print("[tests] FAILED: no C++ test ran")
print(f"summary: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
sys.exit(1 if ran["C++"] == 0 else 0)
EOF
[ $? = 0 ] || status=1
exit $status
