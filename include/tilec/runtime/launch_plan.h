// LaunchPlan: everything the host side of a kernel does, as data (DESIGN.md section 1).
// Produced by the compiler (split host/device), evaluated by the runtime at each call:
// validate the arguments, bind symbolic dimensions, compute grid / block / shared
// memory, encode TMA descriptors, and pack the kernel's parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilec/ir/expr.h"

namespace tilec::runtime {

// One dimension of a tensor parameter: either a constant or a symbolic variable
// (T.dynamic) that is bound from the first tensor that has it and checked against the rest.
//
// A symbolic dimension may carry a constant factor (`seq_len * heads` with heads a constant:
// upstream's DeepSeek v3.2 indexer): the dimension is scale * symbol, a tensor binds the symbol
// to its size / scale (which must divide evenly) and outputs are allocated scale * symbol.
struct DimSpec {
  int64_t value = -1;       // >= 0: must equal this
  std::string symbol;       // non-empty: bind / check this symbol
  int64_t scale = 1;        // with a symbol: the dimension is scale * symbol (scale >= 1)
};

// "seq_len", or "32*seq_len" for a scaled symbol, or the constant: the launch plan text's
// spelling, also what Kernel::params() reports for the dimension.
std::string dim_spec_text(const DimSpec& d);

struct TensorParam {
  std::string name;
  ir::DataType dtype;
  std::vector<DimSpec> shape;
  std::vector<DimSpec> strides;  // empty: must be contiguous row-major
  int alignment_bytes = 1;       // base pointer alignment the kernel relies on
  bool is_output = false;        // allocated by the runtime (out_idx)
  // Width of the kernel's element-offset arithmetic for this tensor (flatten_buffers
  // decides it). 32: the runtime rejects an argument whose span (see tensor_span) exceeds
  // kMaxInt32Span, since its offsets would wrap; 64: no limit.
  int index_bits = 32;
};

// Largest span an int32-indexed tensor may have: 2^31 - 1 elements. Span, not largest
// offset, because the kernel also computes row-major strides (products of trailing dims,
// up to the element count) in the index type.
constexpr int64_t kMaxInt32Span = 2147483647;

// Elements a tensor's offsets reach: 0 when a dimension is 0, else
// 1 + sum_d (shape_d - 1) * |stride_d| (strides in elements; nullptr: row-major, so the
// span is the element count). Saturates at INT64_MAX instead of overflowing.
int64_t tensor_span(int ndim, const int64_t* shape, const int64_t* strides);

struct ScalarParam {
  std::string name;
  ir::DataType dtype;
};

// A TMA tensor map the runtime encodes at launch (cuTensorMapEncodeTiled) over a tensor
// argument: rank and extents of the tensor itself (dimension 0 the innermost, strides in
// bytes from the tensor's strides), the box the kernel copies per instruction, the
// swizzle; element strides 1, no interleave, L2 promotion 128 B, out-of-bounds elements
// read as zero. Passed to the kernel as a 128-byte `const __grid_constant__` parameter.
struct TmaDescSpec {
  int tensor = 0;              // index into tensors
  std::vector<int64_t> box;    // per dimension, innermost first; size = the tensor's rank
  int swizzle = 0;             // CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B
  friend bool operator==(const TmaDescSpec& a, const TmaDescSpec& b) {
    return a.tensor == b.tensor && a.box == b.box && a.swizzle == b.swizzle;
  }
};

// What goes into each kernel argument slot, in order.
struct KernelArg {
  enum Kind : uint8_t { kTensorData, kScalar, kSymbol, kTmaDesc } kind;
  int index = 0;            // kTensorData: index into tensors; kScalar: into scalars; kTmaDesc: into tma_descs
  std::string symbol;       // kSymbol: the symbol's name (passed as int32 or int64 per dtype)
  ir::DataType dtype = ir::DataType::Int(32);
};

struct LaunchPlan {
  std::string kernel_name;
  std::vector<TensorParam> tensors;   // in the function's parameter order
  std::vector<ScalarParam> scalars;   // in the function's parameter order
  // The function's parameter order: entry i is (true, tensor index) or (false, scalar index).
  std::vector<std::pair<bool, int>> param_order;
  std::vector<std::string> symbols;   // every symbolic dimension name
  std::vector<KernelArg> kernel_args;
  std::vector<TmaDescSpec> tma_descs;
  // Grid extents as expressions over the symbols (Vars named like `symbols`).
  std::vector<ir::Expr> grid;         // 1..3
  std::vector<ir::Var> symbol_vars;   // the Vars the grid expressions use, parallel to symbols
  int64_t block[3] = {1, 1, 1};
  int64_t cluster[3] = {1, 1, 1};
  int64_t dynamic_shared_bytes = 0;
  // > 0: a persistent kernel (its blocks loop over the tiles grid[0] counts, striding by
  // gridDim.x): the runtime launches min(grid[0], SMs x persistent_blocks_per_sm) blocks.
  int64_t persistent_blocks_per_sm = 0;
  // The kernel calls T.sync_grid(): it is launched cooperatively (every block resident at
  // once, which the runtime checks against the device's occupancy before launching; the grid
  // barrier needs the driver's cooperative-launch workspace). Never with clusters or a
  // persistent grid (the compiler keeps such kernels as written).
  bool cooperative = false;
};

// Evaluates an integer expression over symbol values (used for grid extents).
int64_t eval_int(const ir::Expr& e, const std::vector<ir::Var>& vars, const std::vector<int64_t>& values);
// The same without allocation (the launch hot path): values[i] is the value of vars[i],
// values holds vars.size() entries.
int64_t eval_int_unchecked(const ir::Expr& e, const std::vector<ir::Var>& vars, const int64_t* values);

}  // namespace tilec::runtime
