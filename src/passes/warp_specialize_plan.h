// The analysis half of warp_specialize (warp_specialize.cc): which loop it rewrites and how.
//
// find_spine       the kernel's one pipelined loop and the wrappers (Lets, Allocates,
//                  Annotates) on the way to it
// Plan             the loop's producers (stage-0 TMA-able copies), consumers (the rest) and
//                  versioned buffers (filled by warp_specialize.cc's plan_loop)
// copy_groups      copies sharing one full/empty barrier pair (same first and last reader)
// defer_release    whether a GEMM-only step can release its slot one iteration late
// rotation         the rotated attention step (tilec.intra_wg_overlap)
// pingpong_gemm    the consumer statement the consumer warpgroups take turns at (tilec.pingpong)
// with_wg_wait     a gemm tile op with its wg_wait attribute replaced
// want_persistent, tile_loop_parts, wrap_in_tile_loop: the persistent tile loop
//                  (warp_specialize_tiles.cc)
// rewrite_kernel   the producer / consumer form of a qualifying kernel
//                  (warp_specialize_rewrite.cc)
// Pure functions of the tile IR and the pass context.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "passes/pipeline_body.h"
#include "tilec/ir/stmt.h"
#include "tilec/passes/pass.h"

namespace tilec::passes::ws {

// The loop and the wrappers on the way to it.
struct Spine {
  const ir::ForNode* loop = nullptr;
  std::vector<const ir::StmtNode*> wrappers;  // Let / Allocate / Annotate nodes, outermost first
  ir::VarMap let_values;                      // each wrapper Let's variable -> its value in block indices
  std::vector<ir::Stmt> before;               // the statements that run before the loop: the
                                              // siblings ahead of the path in each Seq on it
};

struct Plan {
  const ir::ForNode* loop = nullptr;
  pipeline::Body body;
  std::vector<size_t> producers;  // stage-0 copies, in body order
  std::vector<size_t> consumers;  // the rest
  std::unordered_map<const ir::BufferNode*, ir::Buffer> versioned;  // copied buffer -> (S, ...) buffer
  int stages = 0;
  int widest_atom = 0;  // the widest wgmma N of the loop's gemms
  // stage_output_tiles staged a result tile over one of the copied buffers (kStagedOverStagesAttr):
  // the tile's name and that buffer (a key of `versioned`); empty / null otherwise.
  std::string over_tile;
  const ir::BufferNode* over_host = nullptr;
};

// Copies whose buffers the same consumer statements first and last read share one pair of
// barriers (a GEMM's A and B); others get their own (attention's K, read by S = Q K^T, and
// V, read by O += P V: K's slot refills while P V still reads V).
struct CopyGroup {
  std::vector<size_t> producers;  // indices into the body, in body order
  size_t first_reader = 0, last_reader = 0;  // indices into p.consumers
  bool waits_pending = false;                // a reader leaves its wgmmas running (wg_wait != 0)
  bool thread_readers = false;               // a reader is not a gemm: the threads' own loads
  ir::Buffer full, empty;
};

// The rotated form of a consumer step S = gemm1(...); <B>; O += gemm2(P, V) (attention).
struct Rotation {
  size_t first_gemm = 0;      // index into p.consumers
  size_t touches_second = 0;  // the first statement after gemm1 touching gemm2's buffers
  size_t first_group = 0, second_group = 0;  // the copy groups gemm1 / gemm2 read
  // Statements of [touches_second, last) that only update gemm2's accumulator (attention's
  // O *= scale) and run one step later, right after gemm1 is issued (tilec.defer_accumulator_updates).
  std::vector<size_t> deferred;
};

// The grid dimension a kernel's cluster spans and its size: dim -1 without a cluster (size
// 1), -2 when the cluster spans several dimensions.
struct ClusterAxis {
  int dim = -1;
  int64_t size = 1;
};
ClusterAxis cluster_axis(const ir::KernelLaunchNode& kernel);

// The persistent form's tile loop.
struct TileLoop {
  ir::Var start;               // the hardware block index: the block's first tile
  ir::Expr total;              // tiles = the original grid's blocks
  std::vector<ir::Expr> grid;  // the original grid
  std::vector<ir::Var> block_vars;
  std::vector<const ir::LetNode*> lets;  // the spine's Lets, recomputed per tile
  // Uneven tiles (the loop's trip count depends on block index `work_dim`, as in causal
  // attention): that index varies slowest, so tiles run in the order of their work, and the
  // blocks take them in a snake (round r gives tile r G + start, or r G + G - 1 - start when
  // r is odd), which pairs each round's longer tiles with the next round's shorter ones.
  int work_dim = -1;
  // A cluster along one dimension (never with uneven tiles): the launch's clusters of
  // `cluster.size` consecutive blocks take cluster tiles, each block the tile of its rank.
  ClusterAxis cluster;
};

const ir::TileOpNode* tile_op(const ir::Stmt& s);
// "T.copy at line 12" (for the reasons a loop is left alone).
std::string describe(const ir::Stmt& st);
// Global buffers the kernel reads and never writes (tilec.ws_indirect_copies: a producer copy's
// region, or a value the loop depends on, may read them — a paged cache's block table).
using ReadOnly = std::unordered_set<const ir::BufferNode*>;
ReadOnly read_only_globals(const ir::Stmt& kernel_body);
// Whether `e` reads no memory but the buffers in `read_only` (none when it is null).
bool reads_only(const ir::Expr& e, const ReadOnly* read_only);
// "" when `st` is a T.copy global -> shared that the producer can issue as TMA (no disable_tma
// or other prefer_instruction, TMA-able, regions computed without memory reads but of
// `read_only`); else why not.
std::string why_not_producer_copy(const ir::Stmt& st, const ReadOnly* read_only = nullptr);
// The copies ahead of the loop that the producer can issue (attention's Q): T.copy global ->
// shared that TMA can do, from regions computed without memory reads, into a shared buffer
// that only the loop's gemms read and that nothing else writes. They load once per tile
// through their own full/empty barrier pair.
std::vector<ir::Stmt> head_copies(const Spine& sp, const Plan& p, const ir::Stmt& kernel_body,
                                  const ReadOnly* read_only = nullptr);
std::optional<Spine> find_spine(const ir::Stmt& body);
bool defer_release(const Plan& p);
std::vector<CopyGroup> copy_groups(const Plan& p, bool single);
bool rotation(const Plan& p, const std::vector<CopyGroup>& groups, const PassContext& ctx, Rotation* out);
ir::Stmt with_wg_wait(const ir::Stmt& st, int64_t n);
// At most this many consumer warpgroups take turns: named barriers 16 - groups .. 15 are theirs.
constexpr int64_t kMaxTurnGroups = 3;
std::optional<size_t> pingpong_gemm(const Plan& p, int64_t threads, const PassContext& ctx);
// Why the producer copy `copy` of `kernel` is not multicast to the cluster ("" when it is):
// no cluster, a cluster along more than one grid dimension or of more than 16 blocks (a
// multicast mask's width), tilec.tma_multicast off, a source that differs between the blocks
// of a cluster (its region starts read with `lets` substituted; cluster_invariance.h), or a tile that does not split
// into one band of whole 8-row groups per block (ops::tma_row_band). The rewrite multicasts
// exactly when it is ""; explain() prints the reason.
std::string why_not_multicast(const ir::KernelLaunchNode& kernel, const ir::TileOpNode& copy, const ir::VarMap& lets,
                              const PassContext& ctx);

// The producer warpgroup's threads.
inline constexpr int64_t kProducerThreads = 128;

// The rewritten kernel (warp_specialize_rewrite.cc), the blocks per SM its register budget was
// planned for, and whether it became persistent.
struct RewriteResult {
  ir::Stmt kernel;
  int min_blocks = 1;
  bool persistent = false;
  bool uneven = false;  // persistent over tiles of different step counts (a snake)
  // The result tile staged over a copied buffer may share its bytes: the producer refills the
  // buffer after the tile's TMA store read it (persistent), or no tile loop keeps both alive.
  bool staged_over_kept = false;
};
RewriteResult rewrite_kernel(const ir::KernelLaunchNode* kernel, const Spine& sp, const Plan& p, int64_t threads,
                             const PassContext& ctx, const ReadOnly* read_only);

// `over`: the result tile staged over a copied buffer shares its bytes (not counted).
bool want_persistent(const ir::KernelLaunchNode* kernel, const Spine& sp, const Plan& p, const PassContext& ctx,
                     bool over = false);
// The 32-bit registers per thread of `threads` that the kernel's fragments take together.
int64_t fragment_registers(const ir::KernelLaunchNode* kernel, int64_t threads);
// The bytes of the kernel's shared buffers (the copied ones with their stage versions) laid
// side by side: an upper bound of what plan_shared_memory will give the block. `over`: the
// result tile staged over a copied buffer (Plan::over_tile) is not counted.
int64_t unshared_bytes(const ir::KernelLaunchNode* kernel, const Plan& p, bool over = false);
// The block index the loop's trip count depends on (uneven tiles), -1 when it depends on none,
// -2 when on several or when the loop's start depends on one.
int work_dim(const ir::KernelLaunchNode* kernel, const Spine& sp, const Plan& p);
TileLoop tile_loop_parts(const ir::KernelLaunchNode* kernel, const Spine& sp, const Plan& p, const SourceLoc& loc);
ir::Stmt wrap_in_tile_loop(const TileLoop& t, const ir::Stmt& body, const ir::Var& tile_i, bool fresh,
                           const SourceLoc& loc);

}  // namespace tilec::passes::ws
