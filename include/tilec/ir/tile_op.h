// The tile-op registry: each tile op (copy, gemm, fill, reduce, ...) is registered once
// with its schema — the names and kinds of its positional arguments and the keywords
// it accepts. `make_tile_op` checks a call against the schema and raises a UserError
// that names the op and the argument.
//
// Behaviour (access regions, layout inference, lowering) is attached by the back end
// in src/ops through the OpBehaviour registry, keyed by op name and target.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tilec/ir/stmt.h"

namespace tilec::ir {

enum class ArgKind : uint8_t { kRegion, kExpr, kRegionOrExpr };
enum class AttrKind : uint8_t { kBool, kInt, kFloat, kString, kExpr, kBuffer, kIntList, kAny };

struct TileOpArgSpec {
  std::string name;
  ArgKind kind;
  bool optional = false;
};
struct TileOpAttrSpec {
  std::string name;
  AttrKind kind;
  AttrValue default_value;  // monostate = no default (absent unless given)
};

struct TileOpSchema {
  std::string name;  // as written after "T.", e.g. "copy", "gemm", "reduce_max"
  std::vector<TileOpArgSpec> args;
  std::vector<TileOpAttrSpec> attrs;
  // Positional arguments that may also be given by keyword, e.g. T.reduce_max(A, B, dim=1).
  bool args_by_keyword = true;
  // Optional: run by make_tile_op after the schema check. It may complete the arguments
  // (T.copy takes the extents of an all-index region from the other side; T.fill converts
  // the value to the buffer's dtype) and raises a UserError when they do not fit together
  // (shape mismatch). The built-in ones live in src/ir/tile_op_checks.cc.
  std::function<void(std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc)> check = nullptr;
};

// Registers the built-in ops on first use; later registrations add to them.
void register_tile_op(TileOpSchema schema);
const TileOpSchema* find_tile_op(const std::string& name);
std::vector<std::string> tile_op_names();

// Builds a TileOp statement after checking it against the op's schema. Attributes are
// stored in schema order with defaults filled in, so printing is canonical.
Stmt make_tile_op(const std::string& op, std::vector<TileArg> args, AttrMap attrs, SourceLoc loc = {});

// Typed access to a checked tile op.
const BufferRegion& region_arg(const TileOpNode& op, size_t i);
const Expr& expr_arg(const TileOpNode& op, size_t i);
bool attr_bool(const TileOpNode& op, const std::string& key, bool fallback = false);
int64_t attr_int(const TileOpNode& op, const std::string& key, int64_t fallback = 0);
std::string attr_string(const TileOpNode& op, const std::string& key, const std::string& fallback = "");
// An expression attribute (T.gemm's clear_if), or a null Expr when it is absent.
Expr attr_expr(const TileOpNode& op, const std::string& key);
// The same tile op with attribute `key` set to `value` (replaced when present).
Stmt with_attr(const TileOpNode& op, const std::string& key, AttrValue value);

}  // namespace tilec::ir
