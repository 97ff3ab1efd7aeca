#!/usr/bin/env bash
# Builds and runs the standalone device-GEMM harness (tests/gpu/gemm_device_harness.cu) on
# the GPU of this machine: correctness of tl::gemm_ss / tl::gemm_fma_ss / cp.async for every
# operand kind and orientation against a float64 reference, and with --perf the bf16
# throughput at 4096^3 and 8192^3 next to cuBLAS measured in the same run.
#
#   tests/gpu/run_gemm_harness.sh            # correctness only (about a minute)
#   tests/gpu/run_gemm_harness.sh --perf     # plus the performance table
#   ARCH=sm_80 tests/gpu/run_gemm_harness.sh # another architecture (default: this GPU's)
#
# Exit status 0 when every check passed. Needs nvcc and cuBLAS (the CUDA toolkit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
BUILD="${BUILD_DIR:-$ROOT/build/gpu_harness}"
mkdir -p "$BUILD/include"
# The device headers include each other as "tilec/<name>.cuh" (their names inside NVRTC).
ln -sfn "$ROOT/src/device/cuda" "$BUILD/include/tilec"
if [[ -z "${ARCH:-}" ]]; then
  CC="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.[:space:]')"
  case "$CC" in
    90) ARCH=sm_90a ;;
    "") ARCH=sm_90a ;;
    *) ARCH="sm_$CC" ;;
  esac
fi
echo "building for $ARCH with $NVCC"
"$NVCC" -O3 -std=c++17 -arch="$ARCH" -lineinfo -I"$BUILD/include" \
  "$ROOT/tests/gpu/gemm_device_harness.cu" -lcublas -o "$BUILD/gemm_device_harness"
exec "$BUILD/gemm_device_harness" "$@"
