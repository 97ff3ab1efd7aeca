// Helpers of insert_syncs (insert_syncs.cc) that do not need its planner's state.
//
// find_global_writes  the global tensors a kernel may write — by identity, and by name for
//                     tensors written through a TMA tensor map (which names them); the others
//                     are read-only, and loads from them at uniform indices are uniform
//                     (insert_syncs' "Uniform values")
// arena_ranges        the byte range of every shared.dyn buffer in the arena (from
//                     plan_shared_memory's annotations): buffers whose ranges overlap alias
// uniform_locals      the per-thread buffers (T.alloc_var, T.alloc_local) that hold the same
//                     values in every thread: each write stores a uniform value at a uniform
//                     index outside divergent control flow (insert_syncs' "Uniform values")
// named_barriers      block barriers inside a role that is not the whole block become named
//                     barriers over the role's threads (__syncthreads would wait for threads
//                     that never arrive)
// injective_in        whether an index takes distinct values over some variables for every
//                     value of others, by evaluation (insert_syncs' thread_private, for
//                     indices that are not affine: swizzled tiles)
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tilec/ir/stmt.h"

namespace tilec::passes::syncs {

struct GlobalWrites {
  std::unordered_set<const ir::BufferNode*> buffers;
  std::unordered_set<std::string> tma_names;
  bool may_write(const ir::BufferNode* b) const { return buffers.count(b) > 0 || tma_names.count(b->name) > 0; }
};

GlobalWrites find_global_writes(const ir::Stmt& body);
std::unordered_map<const ir::BufferNode*, std::pair<int64_t, int64_t>> arena_ranges(const ir::Stmt& body);
ir::Stmt named_barriers(const ir::Stmt& body, int64_t block_threads);
// For every value of `fixed` (each in [0, fixed_ext)), `index + lane * stride` (lane in
// [0, lanes)) differs for all values of `varying` (each in [0, varying_ext)) and lanes. False
// when it does not, when the index has other variables or cannot be evaluated, or when the
// enumeration would exceed 2^18 points.
bool injective_in(const ir::Expr& index, const std::vector<ir::Var>& varying, const std::vector<int64_t>& varying_ext,
                  const std::vector<ir::Var>& fixed, const std::vector<int64_t>& fixed_ext, int64_t lanes,
                  int64_t stride);
// Candidates are the local / var buffers the body allocates; they may feed each other, so the
// answer is the greatest set that stays consistent (start from all, drop a buffer with a
// write that is not uniform given the others, repeat). `thread_vars` are not uniform;
// `read_only_global` tells the global tensors whose loads at uniform indices are uniform.
std::unordered_set<const ir::BufferNode*> uniform_locals(const ir::Stmt& body,
                                                         const std::unordered_set<const ir::VarNode*>& thread_vars,
                                                         const GlobalWrites& global_writes);

}  // namespace tilec::passes::syncs
