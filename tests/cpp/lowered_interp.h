// A CPU interpreter for lowered IR (docs/LOWERED_IR.md), for tests without a GPU.
//
// Runs every block of the kernel; within a block all threads execute in lockstep one
// statement at a time (values are vectors over the threads, control flow uses masks),
// which is the SIMT model with a barrier after every statement: it checks what the
// first half of the pipeline computes, not the placement of barriers. Warp shuffles
// read the other lanes' values of the same statement; atomics apply thread by thread.
// Block-wide device calls: tl.gemm_ss / tl.gemm_rs compute C (+)= A * B through the layout
// formulas of gemm_sm80_layout.cuh (what the fragments mean, not how the device code gets
// there); cp.async copies complete at once (commit / wait / barriers are no-ops).
// Every access is bounds-checked (an out-of-bounds access throws).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tilec/ir/stmt.h"

namespace tilec::testing {

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;  // row-major (or the buffer's own strides)
  explicit HostTensor(std::vector<int64_t> s = {}, double fill = 0.0) : shape(std::move(s)) {
    int64_t n = 1;
    for (auto e : shape) n *= e;
    data.assign(static_cast<size_t>(n), fill);
  }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  double& at(std::initializer_list<int64_t> idx);
};

// Runs `f` (lowered IR) with tensors bound to its buffer parameters by name and scalar
// parameters / symbolic dimensions by name (symbolic dimensions that appear in a
// tensor's shape are bound from it).
void run_lowered(const ir::PrimFunc& f, const std::map<std::string, HostTensor*>& tensors,
                 const std::map<std::string, int64_t>& scalars = {});

// Deterministic pseudo-random values in [lo, hi).
std::vector<double> random_values(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0);

}  // namespace tilec::testing
