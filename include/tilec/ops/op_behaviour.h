// Tile-op behaviour registry: what each tile op (T.copy, T.fill, T.reduce_*, T.gemm,
// ...) reads and writes, which layouts it demands, and how it lowers — per target.
//
// The schema of an op (its arguments) lives in ir/tile_op.h; this registry attaches the
// back-end behaviour. Several behaviours may be registered for one op (a generic SIMT
// copy, a cp.async copy, an sm_90 TMA copy, ...): each has a target predicate and a
// priority. `access_regions` and `infer_layout` come from the highest-priority
// behaviour that applies and defines them; `lower` tries the applicable behaviours from
// the highest priority down and takes the first that returns a statement (returning
// null means "not my case", e.g. cp.async outside a pipelined loop). So a new
// architecture adds files, it does not edit the op.
//
// Registration: each src/ops/<op>.cc defines `void register_<name>_behaviours()`, listed
// once in src/ops/op_behaviours.def (a static library drops unreferenced static
// registrars, so the table is explicit).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tilec/arith/analyzer.h"
#include "tilec/ir/stmt.h"
#include "tilec/target/target.h"

namespace tilec::ops {

// Strength of a layout demand (MODEL.md "Layout inference").
enum class InferLevel : uint8_t {
  kStrict,  // the instruction fixes it (gemm operands/accumulator, user annotations)
  kCommon,  // follows from layouts already known (copy, reduce, parallel loops)
  kFree,    // a default for what is still unknown
};
const char* infer_level_name(InferLevel level);

struct AccessRegions {
  std::vector<ir::BufferRegion> reads;
  std::vector<ir::BufferRegion> writes;
};

// What every op callback can ask: the target, the threads that run the op (the block,
// or the warpgroups of a warp-specialized role: Annotate "tilec.thread_range"), and the
// boolean pass configs (e.g. "tl.disable_wgmma"; false when not set).
class OpEnv {
 public:
  virtual ~OpEnv() = default;
  virtual const target::Target& target() const = 0;
  virtual int64_t num_threads() const = 0;
  virtual bool config_flag(const std::string& key) const {
    (void)key;
    return false;
  }
  // A string pass config ("" when not set).
  virtual std::string config_string(const std::string& key) const {
    (void)key;
    return "";
  }
};

// What layout inference knows while it runs. Implemented by the layout_inference pass.
class LayoutInferenceState : public OpEnv {
 public:
  // The layout assigned to `b` so far; null when none yet.
  virtual ir::Layout layout_of(const ir::Buffer& b) const = 0;
  bool has_layout(const ir::Buffer& b) const { return layout_of(b).defined(); }
  // Loops enclosing the op being inferred, outermost first.
  virtual const std::vector<const ir::ForNode*>& enclosing_loops() const = 0;
};

// "Buffer `buffer` must have layout `layout`." Proposals for buffers that already have a
// different layout are conflicts (a UserError naming both ops and the buffer). So:
// strict and common proposals state what the op needs even when the buffer already has
// a layout (that is how conflicts are found); free proposals (defaults) are made only for
// buffers that have none yet.
struct LayoutProposal {
  ir::Buffer buffer;
  ir::Layout layout;
};
using LayoutProposals = std::vector<LayoutProposal>;

// What tile-op lowering can ask while it rewrites one op. Implemented by the
// lower_tile_ops pass.
class LowerContext : public OpEnv {
 public:
  // The linear thread index within the threads that run the op (threadIdx.x +
  // threadIdx.y * X + ..., minus the first thread of an enclosing thread range).
  virtual ir::Expr thread_index() const = 0;
  // The layout inference chose for a fragment or shared buffer (null for others).
  virtual ir::Layout layout_of(const ir::Buffer& b) const = 0;
  // The buffer that stands for `b` in lowered IR: a fragment's per-thread register array
  // (Scope::kLocal, shape (registers,)), a shared buffer's 1-D physical buffer, else `b`.
  virtual ir::Buffer lowered_buffer(const ir::Buffer& b) const = 0;
  // Index into lowered_buffer(b) for a logical element: the (swizzled) offset for shared
  // memory, the register for a fragment (the executing thread must hold the element),
  // the logical indices unchanged for global buffers.
  virtual std::vector<ir::Expr> physical_index(const ir::Buffer& b, const std::vector<ir::Expr>& logical) = 0;
  ir::Expr load(const ir::Buffer& b, const std::vector<ir::Expr>& logical);
  ir::Stmt store(const ir::Buffer& b, const std::vector<ir::Expr>& logical, const ir::Expr& value);

  // Lowers an elementwise nest `for vars in T.Parallel(extents): body` (body written
  // against logical buffers) by distributing it with `loop_layout`, a fragment over
  // `extents`: registers of fragments it touches become register indices, shared
  // accesses go through their layouts. With `first_replica_only`, a replicated loop
  // layout runs each iteration once (for side effects such as global stores, atomics).
  virtual ir::Stmt lower_parallel(const std::vector<ir::Var>& vars, const std::vector<int64_t>& extents,
                                  const ir::Stmt& body, const ir::Layout& loop_layout,
                                  bool first_replica_only = false) = 0;
  // A loop layout for an elementwise nest over `extents` that touches the given
  // buffers: coalesced, 16-byte vectors along the innermost dimension where the
  // extents allow.
  virtual ir::Layout coalesced_loop_layout(const std::vector<int64_t>& extents,
                                           const std::vector<ir::Buffer>& buffers) const = 0;
  // A new buffer alive around the lowered op (e.g. a shared scratch for a reduction).
  // Shared buffers are 1-D; `shape` must be 1-D for them.
  virtual ir::Buffer alloc_buffer(const std::string& name, const std::vector<int64_t>& shape, ir::DataType dtype,
                                  ir::Scope scope) = 0;
  // Loops enclosing the op, outermost first (before lowering: T.Pipelined loops are
  // still ForKind::kPipelined).
  virtual const std::vector<const ir::ForNode*>& enclosing_loops() const = 0;
  virtual arith::Analyzer& analyzer() = 0;
  // Declares in `an` what is known about the variables around the op: block and thread
  // indices in [0, extent), the values of enclosing Lets (e.g. rasterized block indices).
  // For ops that prove facts with an Analyzer of their own (bounds of a copy).
  virtual void bind_known_ranges(arith::Analyzer& an) const { (void)an; }
};

using AccessFn = std::function<AccessRegions(const ir::TileOpNode& op)>;
using InferFn =
    std::function<LayoutProposals(const ir::TileOpNode& op, const LayoutInferenceState& state, InferLevel level)>;
using LowerFn = std::function<ir::Stmt(const ir::TileOpNode& op, LowerContext& ctx)>;
// Whether a behaviour takes this op at all (e.g. the wgmma GEMM only when selection picks
// wgmma); a behaviour that does not claim the op is skipped for infer_layout and lower.
using ClaimFn = std::function<bool(const ir::TileOpNode& op, const OpEnv& env)>;

struct OpBehaviour {
  OpBehaviour() = default;
  // `claims` may be left out: most behaviours take every op they apply to (a constructor,
  // so that brace lists without it do not trip -Wmissing-field-initializers).
  OpBehaviour(std::string op, std::string variant, std::function<bool(const target::Target&)> applies, int priority,
              AccessFn access_regions, InferFn infer_layout, LowerFn lower, ClaimFn claims = nullptr)
      : op(std::move(op)),
        variant(std::move(variant)),
        applies(std::move(applies)),
        priority(priority),
        access_regions(std::move(access_regions)),
        infer_layout(std::move(infer_layout)),
        lower(std::move(lower)),
        claims(std::move(claims)) {}

  std::string op;       // tile-op name, as in the schema ("copy", "gemm", "reduce_max")
  std::string variant;  // for dumps and errors: "simt", "cp.async", "mma.sync", ...
  std::function<bool(const target::Target&)> applies;  // null: every target
  int priority = 0;     // higher is tried first
  AccessFn access_regions;
  InferFn infer_layout;
  LowerFn lower;
  ClaimFn claims;       // null: claims every op it applies to
};

void register_op_behaviour(OpBehaviour b);
// Applicable behaviours of `op` for `t`, highest priority first.
std::vector<const OpBehaviour*> find_op_behaviours(const std::string& op, const target::Target& t);

// Dispatch helpers used by the passes. They raise a UserError (at the op's source
// location) when no behaviour handles the op for this target.
AccessRegions access_regions(const ir::TileOpNode& op, const target::Target& t);
LayoutProposals infer_layout(const ir::TileOpNode& op, const LayoutInferenceState& state, InferLevel level);
ir::Stmt lower(const ir::TileOpNode& op, LowerContext& ctx);

// "T.copy at kernel.py:12:5" — how errors name an op.
std::string describe_op(const ir::TileOpNode& op);

}  // namespace tilec::ops
