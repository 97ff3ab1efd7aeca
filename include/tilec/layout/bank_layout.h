// The layout of a shared buffer that no instruction constrains (no gemm, TMA or ldmatrix
// reads it; only T.Parallel nests touch it), chosen from how the first warp touches it.
//
// Candidates: row-major; the 128B / 64B / 32B swizzles (16-byte chunks XORed with the row:
// vector accesses stay whole); a word XOR swizzle (4-byte words XORed with the row modulo
// the row's words, up to 32: a column read by 32 lanes lands in 32 banks, at the price of
// vector accesses along rows). Each is scored by the shared-memory wavefronts its accesses
// take — register slots grouped into the vectors vectorize would emit, served in 128-byte
// phases, each phase as many wavefronts as the most distinct words one bank serves — then by
// instructions; ties keep the earlier (simpler) candidate, so a conflict-free buffer stays
// row-major. A transpose through a 32 x 32 float tile (256 threads): 132 wavefronts per warp
// row-major (its column reads are 32-way conflicts), 8 with the word XOR.
//
// Sampling needs constant nest extents (at most 65536 points) and indices that are integer
// functions of the nest variables (other variables — block indices, enclosing serial loops —
// are taken at 0) inside the buffer; otherwise the buffer stays row-major.
#pragma once

#include <string>
#include <vector>

#include "tilec/ir/buffer.h"
#include "tilec/ir/type.h"

namespace tilec::layout {

// One T.Parallel nest's access to the buffer.
struct SharedAccess {
  std::vector<ir::Var> vars;      // the nest's variables, outermost first
  std::vector<int64_t> extents;   // their extents
  ir::Layout loop_layout;         // the nest's loop layout (a fragment over `extents`)
  std::vector<ir::Expr> indices;  // the buffer index, in terms of `vars` (and others, taken at 0)
};

struct SharedLayoutChoice {
  ir::Layout layout;
  std::string name;                  // "row-major", "128B swizzle", "word XOR swizzle", ...
  int64_t row_major_wavefronts = 0;  // the sampled accesses' wavefronts under row-major
  int64_t wavefronts = 0;            // and under the chosen layout
};

SharedLayoutChoice choose_shared_layout(const std::vector<int64_t>& shape, ir::DataType dtype,
                                        const std::vector<SharedAccess>& accesses);

}  // namespace tilec::layout
