#!/usr/bin/env bash
# The upstream-TileLang corpus in CPU mode (docs/COMPAT.md), as its own CI step:
#   1. torch, when missing: `pip install torch` (a CPU-only machine uses the wheel's CPU path;
#      nothing here needs a GPU), and the examples' small dependencies (einops, scipy, tqdm,
#      packaging). Kept out of setup.sh: the core suite must not need torch.
#   2. the floor test: tests/upstream/test_corpus_floor.py (~10 min on 2 cores), which
#      runs every in-scope example and fails when fewer pass than its FLOOR.
#
#   scripts/run_corpus.sh [--report-only]   (--report-only: run_corpus.py --write-docs, no floor)
#
# Needs the build (scripts/setup.sh) and ../shared/upstream beside the checkout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
  echo "[corpus] installing torch (pip)"
  "$PYTHON" -m pip install -q --disable-pip-version-check torch || { echo "[corpus] torch could not be installed" >&2; exit 1; }
fi
# The small pure-Python / wheel packages upstream's examples import besides torch (einops in 14 of
# them, scipy, tqdm, packaging): without them the pass count depends on what the machine happens to
# have. Not installed: flash_attn, fla, bitblas (large, CUDA builds; those examples stay "package").
missing=$("$PYTHON" -c "import importlib.util as u; print(' '.join(p for p in ('einops', 'scipy', 'tqdm', 'packaging') if u.find_spec(p) is None))")
if [ -n "$missing" ]; then
  echo "[corpus] installing $missing (pip)"
  "$PYTHON" -m pip install -q --disable-pip-version-check $missing || echo "[corpus] warning: could not install $missing" >&2
fi
cd "$ROOT"
if [ "${1:-}" = "--report-only" ]; then
  exec "$PYTHON" tests/upstream/run_corpus.py --write-docs
fi
exec env PYTHONPATH="$ROOT/python" "$PYTHON" -m pytest tests/upstream -q
