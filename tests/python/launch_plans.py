"""Launch plans (include/tilec/runtime/plan_text.h) of hand-written kernels that several runtime
tests compile with tilec.kernel.compile_cuda: the CPU tests with empty bodies (they stop before
the GPU), the GPU tests with real ones."""

# C[n, 4] = A + B (float32, symbolic n).
ADD_SOURCE = 'extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {}'
ADD_PLAN = """tilec-launch-plan 1
kernel add
symbol n int32
tensor A float32 shape=[n,4] align=16
tensor B float32 shape=[n,4] align=16
tensor C float32 shape=[n,4] output=1
arg tensor 0
arg tensor 1
arg tensor 2
arg symbol n int32
grid n
block 32 1 1
"""

# Z[n] = v with a 64-bit n: `fill(v, n)` allocates Z (its size can exceed the device).
FILL_PLAN = """tilec-launch-plan 1
kernel fill
symbol n int64
tensor Z float32 shape=[n] output=1 index=int64
scalar v float32
scalar n int64
param scalar 0
param scalar 1
param tensor 0
arg tensor 0
arg scalar 0
arg symbol n int64
grid (// (+ n 255:int64) 256:int64)
block 256 1 1
"""
