// Helpers shared by the elementwise tile ops (copy, fill, atomics) and reductions.
#pragma once

#include <string>
#include <vector>

#include "tilec/ir/stmt.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

// What T.atomic_add / max / min(dst, value) reads and writes: dst (and the value region) read,
// dst written. Every lowering of an atomic shares it (atomic.cc, the TMA reduce-add of copy_tma.cc).
AccessRegions atomic_access(const ir::TileOpNode& op);

// The iteration space of a region: one loop variable per dimension whose extent is not 1
// (TileLang's MakeIterVars). Extents must be constants (UserError naming `what`).
struct RegionLoop {
  std::vector<ir::Var> vars;
  std::vector<int64_t> extents;
};
RegionLoop region_loop(const ir::BufferRegion& r, const std::string& what, const SourceLoc& loc);
// Non-unit extents of a region, in order (the shape copy pairs up between two sides).
std::vector<int64_t> nonunit_extents(const ir::BufferRegion& r, const std::string& what, const SourceLoc& loc);
// Logical indices of the region's elements: min + var for the non-unit dimensions (in
// order, consuming `vars`), min for the others.
std::vector<ir::Expr> region_indices(const ir::BufferRegion& r, const std::vector<ir::Var>& vars);
bool region_is_full(const ir::BufferRegion& r);
std::vector<int64_t> const_shape(const ir::Buffer& b);
// Whether every extent of `b` is a constant (const_shape's precondition, as a test).
bool has_const_shape(const ir::Buffer& b);
// The behaviours of the wgmma instruction family (sm_90): their OpBehaviour::applies.
bool has_wgmma(const target::Target& t);
ir::Expr typed_const(double v, ir::DataType t);
std::string extents_str(const std::vector<int64_t>& e);

// The loop layout of an elementwise nest over (vars, extents) that accesses fragment
// `frag` (layout `layout`) at `indices`: each thread runs the iterations whose element
// it holds. Null when the indices are not plain loop variables / invariant values.
ir::Layout loop_layout_for_fragment(const std::vector<ir::Var>& vars, const std::vector<int64_t>& extents,
                                    const ir::Buffer& frag, const std::vector<ir::Expr>& indices,
                                    const ir::Layout& layout);

// An empty nest (scalar region) still needs one iteration: extents {1}, one unused var.
void ensure_nonempty(RegionLoop& loop);

// The loop nest `s` (a For and the Fors that are its whole body, recursively) with every
// loop annotated tilec.disjoint_iterations: its iterations touch different elements, so
// insert_syncs needs no barrier between them.
ir::Stmt mark_disjoint_nest(const ir::Stmt& s);

}  // namespace tilec::ops
