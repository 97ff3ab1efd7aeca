// Read-only traversal of the IR. Override the visit_* of the nodes you care about and
// call the base version to keep descending.
#pragma once

#include <functional>

#include "tilec/ir/stmt.h"

namespace tilec::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void visit(const Expr& e);
  void visit(const Stmt& s);
  // Buffer regions and tile-op arguments; visits the region's expressions.
  virtual void visit_region(const BufferRegion& r);

 protected:
#define TILEC_EXPR(Kind, NodeClass) virtual void visit_##Kind(const NodeClass* op);
#define TILEC_BINARY(Kind, Symbol, Category)
#define TILEC_STMT(Kind, NodeClass) virtual void visit_##Kind(const NodeClass* op);
#include "tilec/ir/nodes.def"
  virtual void visit_binary(const BinaryNode* op);  // every binary kind lands here
};

// Calls `fn` on every expression / statement node in pre-order.
void for_each_node(const Stmt& s, const std::function<void(const Node*)>& fn);

}  // namespace tilec::ir
