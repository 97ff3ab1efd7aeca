// The tile-op registry and schema checking (see tile_op.h).
#include "tilec/ir/tile_op.h"

#include <algorithm>

#include "ir/tile_op_checks.h"
#include <map>
#include <mutex>

namespace tilec::ir {

namespace {

TileOpSchema reduce_schema(const std::string& name) {
  return {name,
          {{"buffer", ArgKind::kRegion}, {"out", ArgKind::kRegion}},
          {{"dim", AttrKind::kInt, int64_t{-1}},
           {"clear", AttrKind::kBool, true},
           {"nan_propagate", AttrKind::kBool, false},
           // defer_row_sums: "own_registers" (each thread combines only the elements it holds;
           // the holders of a row keep partials) or "across_threads" (combines the partials in
           // `out`; `buffer` gives the layout). Default "all".
           {"stage", AttrKind::kString, std::string("all")}}};
}

std::vector<TileOpSchema> builtin_schemas() {
  std::vector<TileOpSchema> v;
  v.push_back({"copy",
               {{"src", ArgKind::kRegion}, {"dst", ArgKind::kRegion}},
               {{"disable_tma", AttrKind::kBool, false},
                {"prefer_instruction", AttrKind::kString, {}},
                {"eviction_policy", AttrKind::kString, {}},
                {"coalesced_width", AttrKind::kInt, {}}}});
  // T.async_copy: a global -> shared copy with cp.async. Inside a pipelined loop the
  // pipeline pass issues the commit/wait groups (no_implicit_commit_wait=True) and may
  // give a `guard`: when false the copy reads nothing (the destination gets zeros).
  // Written by hand it commits and waits for itself.
  v.push_back({"async_copy",
               {{"src", ArgKind::kRegion}, {"dst", ArgKind::kRegion}},
               {{"no_implicit_commit_wait", AttrKind::kBool, false}, {"guard", AttrKind::kExpr, {}}}});
  // T.tma_copy(..., cluster_mask=m): TMA multicast. Every CTA of the mask issues one copy of
  // the same size into the same place of every CTA of the mask, completing on the barrier
  // at the same offset in each, so each CTA's barrier expects popcount(m) such copies.
  v.push_back({"tma_copy",
               {{"src", ArgKind::kRegion}, {"dst", ArgKind::kRegion}},
               {{"barrier", AttrKind::kExpr, {}},
                {"eviction_policy", AttrKind::kString, {}},
                {"cluster_mask", AttrKind::kInt, {}},
                // Set by warp_specialize on a producer load it does not multicast: why (for explain).
                {"multicast_declined", AttrKind::kString, {}}}});
  v.push_back({"gemm",
               {{"A", ArgKind::kRegion}, {"B", ArgKind::kRegion}, {"C", ArgKind::kRegion}},
               {{"transpose_A", AttrKind::kBool, false},
                {"transpose_B", AttrKind::kBool, false},
                {"policy", AttrKind::kString, std::string("Square")},
                {"clear_accum", AttrKind::kBool, false},
                {"k_pack", AttrKind::kInt, int64_t{1}},
                {"wg_wait", AttrKind::kInt, int64_t{0}},
                {"instruction", AttrKind::kString, {}},
                // A run-time condition: when it holds, C is cleared first (fuse_clear_into_gemm
                // folds `if c: T.clear(C)` before the gemm into it).
                {"clear_if", AttrKind::kExpr, {}}}});
  // T.gemm_sp: C (+)= dense(A) @ B, A given 2:4-compressed (the kept values and their
  // metadata E). lower_sparse_gemm rebuilds dense A in shared memory and runs a T.gemm.
  v.push_back({"gemm_sp",
               {{"A_sparse", ArgKind::kRegion}, {"E", ArgKind::kRegion}, {"B", ArgKind::kRegion},
                {"C", ArgKind::kRegion}},
               {{"transpose_A", AttrKind::kBool, false},
                {"transpose_E", AttrKind::kBool, false},
                {"transpose_B", AttrKind::kBool, false},
                {"policy", AttrKind::kString, std::string("Square")},
                {"clear_accum", AttrKind::kBool, false},
                {"k_pack", AttrKind::kInt, int64_t{1}},
                {"wg_wait", AttrKind::kInt, int64_t{0}}}});
  v.push_back({"fill", {{"buffer", ArgKind::kRegion}, {"value", ArgKind::kExpr}}, {}});
  for (const char* r : {"reduce_max", "reduce_min", "reduce_sum", "reduce_abssum", "reduce_absmax"})
    v.push_back(reduce_schema(r));
  v.push_back({"cumsum",
               {{"src", ArgKind::kRegion}, {"dst", ArgKind::kRegion}},
               {{"dim", AttrKind::kInt, int64_t{0}}, {"reverse", AttrKind::kBool, false},
                {"op", AttrKind::kString, std::string("sum")}}});
  for (const char* a : {"atomic_add", "atomic_max", "atomic_min"})
    v.push_back({a, {{"dst", ArgKind::kRegion}, {"value", ArgKind::kRegionOrExpr}}, {}});
  // T.alloc_barrier(arrive_count=[...]) initialises its mbarriers with this op.
  v.push_back({"barrier_init", {{"barrier", ArgKind::kRegion}}, {{"arrive_count", AttrKind::kIntList, {}}}});
  attach_builtin_checks(v);
  return v;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, TileOpSchema> ops;
  Registry() {
    for (auto& s : builtin_schemas()) ops.emplace(s.name, std::move(s));
  }
};
Registry& registry() {
  static Registry r;
  return r;
}

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::kBool: return "a bool";
    case AttrKind::kInt: return "an int";
    case AttrKind::kFloat: return "a float";
    case AttrKind::kString: return "a string";
    case AttrKind::kExpr: return "an expression";
    case AttrKind::kBuffer: return "a buffer";
    case AttrKind::kIntList: return "a list of ints";
    case AttrKind::kAny: return "any value";
  }
  return "?";
}

bool attr_matches(const AttrValue& v, AttrKind k) {
  switch (k) {
    case AttrKind::kBool: return std::holds_alternative<bool>(v);
    case AttrKind::kInt: return std::holds_alternative<int64_t>(v);
    case AttrKind::kFloat: return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
    case AttrKind::kString: return std::holds_alternative<std::string>(v);
    case AttrKind::kExpr: return std::holds_alternative<Expr>(v);
    case AttrKind::kBuffer: return std::holds_alternative<Buffer>(v);
    case AttrKind::kIntList: return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrKind::kAny: return true;
  }
  return false;
}

}  // namespace

void register_tile_op(TileOpSchema schema) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.ops[schema.name] = std::move(schema);
}

const TileOpSchema* find_tile_op(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : &it->second;
}

std::vector<std::string> tile_op_names() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [k, v] : r.ops) names.push_back(k);
  return names;
}

Stmt make_tile_op(const std::string& op, std::vector<TileArg> args, AttrMap attrs, SourceLoc loc) {
  const TileOpSchema* schema = find_tile_op(op);
  if (!schema) throw_user_error("unknown tile op 'T." + op + "'", loc, "see docs/LANGUAGE.md for the T primitives");
  // Positional arguments given by keyword move into place.
  if (schema->args_by_keyword) {
    for (size_t i = args.size(); i < schema->args.size(); ++i) {
      auto it = std::find_if(attrs.begin(), attrs.end(), [&](auto& kv) { return kv.first == schema->args[i].name; });
      if (it == attrs.end()) break;
      if (auto* e = std::get_if<Expr>(&it->second)) args.emplace_back(*e);
      else if (auto* b = std::get_if<Buffer>(&it->second)) args.emplace_back(BufferRegion::full(*b));
      else throw_user_error("argument '" + schema->args[i].name + "' of T." + op + " has the wrong kind", loc);
      attrs.erase(it);
    }
  }
  size_t required = 0;
  for (const auto& a : schema->args) required += a.optional ? 0 : 1;
  if (args.size() < required || args.size() > schema->args.size()) {
    throw_user_error("T." + op + " takes " + std::to_string(required) +
                         (required == schema->args.size() ? "" : "-" + std::to_string(schema->args.size())) +
                         " positional arguments but " + std::to_string(args.size()) + " were given",
                     loc, "");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& spec = schema->args[i];
    bool is_region = std::holds_alternative<BufferRegion>(args[i]);
    if (spec.kind == ArgKind::kRegion && !is_region)
      throw_user_error("argument '" + spec.name + "' of T." + op + " must be a buffer or a buffer region", loc,
                       "pass a buffer (A_shared) or a region (A[i, j] / A[0:64, k])");
    if (spec.kind == ArgKind::kExpr && is_region)
      throw_user_error("argument '" + spec.name + "' of T." + op + " must be a scalar expression, not a buffer", loc);
  }
  AttrMap ordered;
  for (const auto& spec : schema->attrs) {
    auto it = std::find_if(attrs.begin(), attrs.end(), [&](auto& kv) { return kv.first == spec.name; });
    if (it != attrs.end()) {
      AttrValue v = it->second;
      if (spec.kind == AttrKind::kFloat)
        if (auto* i = std::get_if<int64_t>(&v)) v = static_cast<double>(*i);
      if (!attr_matches(v, spec.kind))
        throw_user_error("keyword '" + spec.name + "' of T." + op + " must be " + attr_kind_name(spec.kind), loc);
      ordered.emplace_back(spec.name, std::move(v));
      attrs.erase(it);
    } else if (!std::holds_alternative<std::monostate>(spec.default_value)) {
      ordered.emplace_back(spec.name, spec.default_value);
    }
  }
  if (!attrs.empty()) {
    std::string known;
    for (const auto& spec : schema->attrs) known += (known.empty() ? "" : ", ") + spec.name;
    throw_user_error("T." + op + " got an unexpected keyword argument '" + attrs.front().first + "'", loc,
                     known.empty() ? "it takes no keywords" : "its keywords are: " + known);
  }
  check_region_ranks(op, args, loc);
  if (schema->check) schema->check(args, ordered, loc);
  auto n = std::make_shared<TileOpNode>();
  n->op = op;
  n->args = std::move(args);
  n->attrs = std::move(ordered);
  n->loc = std::move(loc);
  return Stmt(std::shared_ptr<const TileOpNode>(std::move(n)));
}

Stmt with_attr(const TileOpNode& op, const std::string& key, AttrValue value) {
  AttrMap attrs;
  for (const auto& kv : op.attrs)
    if (kv.first != key) attrs.push_back(kv);
  attrs.emplace_back(key, std::move(value));
  return make_tile_op(op.op, op.args, std::move(attrs), op.loc);
}

const BufferRegion& region_arg(const TileOpNode& op, size_t i) {
  TILEC_ICHECK(i < op.args.size() && std::holds_alternative<BufferRegion>(op.args[i]))
      << "T." << op.op << " argument " << i << " is not a region";
  return std::get<BufferRegion>(op.args[i]);
}
const Expr& expr_arg(const TileOpNode& op, size_t i) {
  TILEC_ICHECK(i < op.args.size() && std::holds_alternative<Expr>(op.args[i]))
      << "T." << op.op << " argument " << i << " is not an expression";
  return std::get<Expr>(op.args[i]);
}
bool attr_bool(const TileOpNode& op, const std::string& key, bool fallback) {
  auto* v = find_attr(op.attrs, key);
  return v && std::holds_alternative<bool>(*v) ? std::get<bool>(*v) : fallback;
}
int64_t attr_int(const TileOpNode& op, const std::string& key, int64_t fallback) {
  auto* v = find_attr(op.attrs, key);
  return v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : fallback;
}
std::string attr_string(const TileOpNode& op, const std::string& key, const std::string& fallback) {
  auto* v = find_attr(op.attrs, key);
  return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : fallback;
}
Expr attr_expr(const TileOpNode& op, const std::string& key) {
  auto* v = find_attr(op.attrs, key);
  return v && std::holds_alternative<Expr>(*v) ? std::get<Expr>(*v) : Expr();
}

}  // namespace tilec::ir
