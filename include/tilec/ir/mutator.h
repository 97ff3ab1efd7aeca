// Copy-on-write rewriting of the IR: a node whose children did not change is returned
// as the same object, so unchanged subtrees are shared and cheap to compare.
#pragma once

#include <unordered_map>

#include "tilec/ir/stmt.h"

namespace tilec::ir {

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  Expr mutate(const Expr& e);
  Stmt mutate(const Stmt& s);
  virtual BufferRegion mutate_region(const BufferRegion& r);
  // Buffers are leaves; override to substitute buffers everywhere they are referenced.
  virtual Buffer mutate_buffer(const Buffer& b) { return b; }

 protected:
#define TILEC_EXPR(Kind, NodeClass) virtual Expr mutate_##Kind(const Expr& e, const NodeClass* op);
#define TILEC_BINARY(Kind, Symbol, Category)
#define TILEC_STMT(Kind, NodeClass) virtual Stmt mutate_##Kind(const Stmt& s, const NodeClass* op);
#include "tilec/ir/nodes.def"
  virtual Expr mutate_binary(const Expr& e, const BinaryNode* op);
  std::vector<Expr> mutate_all(const std::vector<Expr>& xs, bool* changed);
  AttrValue mutate_attr(const AttrValue& v, bool* changed);
};

// Replace variables by expressions (by identity): vmap[var.get()] = replacement.
using VarMap = std::unordered_map<const VarNode*, Expr>;
Expr substitute(const Expr& e, const VarMap& vmap);
Stmt substitute(const Stmt& s, const VarMap& vmap);

}  // namespace tilec::ir
