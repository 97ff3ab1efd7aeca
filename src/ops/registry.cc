// The tile-op behaviour registry (see ops/op_behaviour.h).
#include <algorithm>
#include <map>
#include <mutex>

#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

#define TILEC_OP_BEHAVIOURS(fn) void fn();
#include "ops/op_behaviours.def"

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::vector<OpBehaviour>> by_op;
};

Registry& raw_registry() {
  static Registry r;
  return r;
}

void add(OpBehaviour b) {
  auto& r = raw_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& v = r.by_op[b.op];
  v.push_back(std::move(b));
  std::stable_sort(v.begin(), v.end(), [](const OpBehaviour& x, const OpBehaviour& y) { return x.priority > y.priority; });
}

// Runs the table of registration functions exactly once.
Registry& registry() {
  static std::once_flag once;
  std::call_once(once, [] {
#define TILEC_OP_BEHAVIOURS(fn) fn();
#include "ops/op_behaviours.def"
  });
  return raw_registry();
}

}  // namespace

const char* infer_level_name(InferLevel level) {
  switch (level) {
    case InferLevel::kStrict: return "strict";
    case InferLevel::kCommon: return "common";
    case InferLevel::kFree: return "free";
  }
  return "?";
}

void register_op_behaviour(OpBehaviour b) {
  TILEC_ICHECK(!b.op.empty()) << "behaviour without an op name";
  add(std::move(b));
}

std::vector<const OpBehaviour*> find_op_behaviours(const std::string& op, const target::Target& t) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const OpBehaviour*> out;
  auto it = r.by_op.find(op);
  if (it == r.by_op.end()) return out;
  for (const auto& b : it->second)
    if (!b.applies || b.applies(t)) out.push_back(&b);
  return out;
}

std::string describe_op(const ir::TileOpNode& op) {
  std::string s = "T." + op.op;
  if (op.loc.known()) s += " at " + op.loc.str();
  return s;
}

namespace {
[[noreturn]] void no_behaviour(const ir::TileOpNode& op, const target::Target& t, const char* what) {
  throw_user_error(describe_op(op) + " is not supported on " + t.str() + " (no " + what + " for it)", op.loc,
                   "use another op or target");
}
}  // namespace

AccessRegions access_regions(const ir::TileOpNode& op, const target::Target& t) {
  for (const auto* b : find_op_behaviours(op.op, t))
    if (b->access_regions) return b->access_regions(op);
  no_behaviour(op, t, "access description");
}

LayoutProposals infer_layout(const ir::TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  auto bs = find_op_behaviours(op.op, state.target());
  if (bs.empty()) no_behaviour(op, state.target(), "lowering");
  for (const auto* b : bs)
    if (b->infer_layout && (!b->claims || b->claims(op, state))) return b->infer_layout(op, state, level);
  return {};
}

ir::Stmt lower(const ir::TileOpNode& op, LowerContext& ctx) {
  for (const auto* b : find_op_behaviours(op.op, ctx.target())) {
    if (!b->lower || (b->claims && !b->claims(op, ctx))) continue;
    ir::Stmt s = b->lower(op, ctx);
    if (s) return s;
  }
  no_behaviour(op, ctx.target(), "lowering");
}

ir::Expr LowerContext::load(const ir::Buffer& b, const std::vector<ir::Expr>& logical) {
  return ir::buffer_load(lowered_buffer(b), physical_index(b, logical));
}

ir::Stmt LowerContext::store(const ir::Buffer& b, const std::vector<ir::Expr>& logical, const ir::Expr& value) {
  return ir::buffer_store(lowered_buffer(b), physical_index(b, logical), value);
}

}  // namespace tilec::ops
