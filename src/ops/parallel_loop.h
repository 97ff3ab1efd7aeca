// T.Parallel nests: analysis, layout derivations, ownership checks and lowering.
//
// A nest is a maximal chain of directly nested ForKind::kParallel loops. Its loop layout
// (a fragment over the nest's extents) says which thread runs which iteration; lowering
// turns it into `for k in registers: (i, j, ...) = inverse(thread, k); body`.
// Layout inference (src/passes/layout_inference.cc) and tile-op lowering share this code:
// T.copy / T.fill / T.atomic_* lower through an elementwise nest too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tilec/ir/stmt.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

struct ParallelNest {
  const ir::ForNode* outer = nullptr;  // null for nests built by tile-op lowering
  std::vector<ir::Var> vars;           // outermost first
  std::vector<int64_t> extents;
  ir::Stmt body;
  SourceLoc loc;
  int ndim() const { return static_cast<int>(vars.size()); }
};

// Collects the nest rooted at a Parallel loop. UserError for a non-constant extent, a
// non-zero start, or a Parallel loop nested deeper inside the body.
ParallelNest collect_nest(const ir::ForNode* outer);

inline constexpr int kInvariantDim = -1;  // index does not use the nest's variables
inline constexpr int kComplexDim = -2;    // any other function of them

struct NestAccess {
  ir::Buffer buffer;
  std::vector<ir::Expr> indices;
  bool is_write = false;
  std::vector<int> loop_dim;  // per buffer dimension: nest position, kInvariantDim or kComplexDim
  SourceLoc loc;
  // Every nest variable appears as a whole index (once) and nothing is complex.
  bool full_rank(int nest_ndim) const;
  // Only whole nest variables and invariant indices, not all variables.
  bool partial_rank(int nest_ndim) const;
  bool has_complex() const;
};

// Every buffer load and store in the body (including nested serial loops and ifs).
std::vector<NestAccess> collect_accesses(const ParallelNest& nest);

// How a complex index (kComplexDim) reads one nest variable v of extent E, when it does:
//   v // c             (c > 1 a constant):                   div = c
//   v + off, off + v   (off free of the nest variables and a
//                       multiple of E, e.g. an outer loop's
//                       `jj * E`):                            offset = true
struct IndexReading {
  int q = 0;          // the nest position of v
  int64_t div = 1;
  bool offset = false;
};
std::optional<IndexReading> read_index(const ParallelNest& nest, const ir::Expr& index);

// Per buffer dimension, how far the thread digits of a fragment may reach (a thread holds
// elements whose index along the dimension differ only below the cap) so that this access
// can run under some loop layout: 1 for an invariant index, E for `v + off`, the extent
// otherwise.
std::vector<int64_t> thread_caps(const ParallelNest& nest, const NestAccess& a);

// ---- layout derivations (null when the access pattern does not allow it) ----
// The loop layout a full-rank access of `frag` implies (each thread runs the iterations
// whose elements it holds). Indices `v + off` (read_index) count as v: the loop follows
// the fragment's first E elements along that dimension, whose thread digits must stay
// below E.
ir::Layout loop_layout_from_fragment(const ParallelNest& nest, const NestAccess& a, const ir::Layout& frag);
// The fragment layout a loop layout implies for an access (full or partial rank; the
// nest variables the access does not use become replication). Indices `v // c` take v's
// digits above c (the threads below become replicas); indices `v + off` take v's digits
// within each block of E elements, the blocks in registers.
ir::Layout fragment_from_loop_layout(const ParallelNest& nest, const NestAccess& a, const ir::Layout& loop);
// A loop layout under which every thread holding frag[...] runs the iterations that read
// it: the fragment's replicas spread the nest variables the access does not use.
ir::Layout extend_to_loop(const ParallelNest& nest, const NestAccess& a, const ir::Layout& frag, int64_t vec);
// A coalesced loop layout for the nest: 16-byte vectors of the narrowest element type
// among accesses indexed by the innermost variable in their last dimension.
ir::Layout coalesced_nest_layout(const ParallelNest& nest, const std::vector<NestAccess>& accesses,
                                 int64_t num_threads);
int64_t nest_vector_elems(const ParallelNest& nest, const std::vector<NestAccess>& accesses);

// Empty when every thread that runs an iteration holds the fragment element it touches
// (and, for writes, every holder runs it); else a sentence describing the first
// element that breaks it. Indices may also read the variables of `outer` (the enclosing
// serial loops, constant bounds): every value of theirs is checked.
std::string check_ownership(const ParallelNest& nest, const NestAccess& a, const ir::Layout& loop,
                            const ir::Layout& frag, const std::vector<const ir::ForNode*>& outer = {});

// Lowers `for vars in T.Parallel(extents): body` with `loop` (see
// LowerContext::lower_parallel).
ir::Stmt lower_parallel_nest(const std::vector<ir::Var>& vars, const std::vector<int64_t>& extents,
                             const ir::Stmt& body, const ir::Layout& loop, bool first_replica_only,
                             LowerContext& ctx, const SourceLoc& loc);

}  // namespace tilec::ops
