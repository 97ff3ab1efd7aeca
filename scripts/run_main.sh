#!/usr/bin/env bash
# README command 1: set up (scripts/setup.sh), then run the main job.
# Today the main job prints the GEMM built with the C++ builder as T-script
# (`build/tilec example-gemm`); it grows into running examples/gemm.py on a GPU, or
# compiling it to CUDA + cubin on a machine without one, as the back end lands.
#
#   scripts/run_main.sh [setup options]     (see scripts/setup.sh --help)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh" "$@"
exec "$ROOT/build/tilec" example-gemm
