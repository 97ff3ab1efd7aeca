#!/usr/bin/env bash
# README command 1: set up (scripts/setup.sh), then run the main job: the GEMM example
# (examples/gemm.py). On a machine with a GPU it compiles the kernel, runs it at several
# sizes and checks it against torch. Without a GPU it compiles it to CUDA C and a cubin for
# sm_80 and sm_90a with NVRTC and leaves every stage (IR after each pass, .cu, .ptx, .cubin,
# ptxas log) in build/main-job/<kernel>/<target>/.
#
# Setup builds only what the main job runs (the _tilec extension: setup.sh --main-only),
# with ninja's progress on the terminal; scripts/run_tests.sh builds the rest.
#
#   scripts/run_main.sh [setup options]     (see scripts/setup.sh --help)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
START=$SECONDS
"$ROOT/scripts/setup.sh" --main-only "$@"
echo "[main] setup done in $((SECONDS - START)) s"
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "[main] GPU found: running examples/gemm.py against torch"
  exec "$PYTHON" "$ROOT/examples/gemm.py"
fi
export TILEC_DUMP_DIR="$ROOT/build/main-job"
rm -rf "$TILEC_DUMP_DIR"
echo "[main] no GPU: compiling examples/gemm.py to CUDA C and cubins (stages in $TILEC_DUMP_DIR)"
"$PYTHON" "$ROOT/examples/gemm.py" --compile-only
echo "[main] files:"
find "$TILEC_DUMP_DIR" -maxdepth 3 -name 'gemm.*' | sort
echo "[main] done in $((SECONDS - START)) s"
