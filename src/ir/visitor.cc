#include "tilec/ir/visitor.h"

#include <functional>

namespace tilec::ir {

void IRVisitor::visit(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
#define TILEC_EXPR(Kind, NodeClass)                         \
  case NodeKind::k##Kind:                                   \
    visit_##Kind(static_cast<const NodeClass*>(e.get())); \
    return;
#define TILEC_BINARY(Kind, Symbol, Category)                 \
  case NodeKind::k##Kind:                                    \
    visit_binary(static_cast<const BinaryNode*>(e.get())); \
    return;
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "statement kind in expression position";
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
#define TILEC_STMT(Kind, NodeClass)                         \
  case NodeKind::k##Kind:                                   \
    visit_##Kind(static_cast<const NodeClass*>(s.get())); \
    return;
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "expression kind in statement position";
  }
}

void IRVisitor::visit_region(const BufferRegion& r) {
  for (const auto& rg : r.region) {
    visit(rg.min);
    visit(rg.extent);
  }
}

void IRVisitor::visit_IntImm(const IntImmNode*) {}
void IRVisitor::visit_FloatImm(const FloatImmNode*) {}
void IRVisitor::visit_StringImm(const StringImmNode*) {}
void IRVisitor::visit_Var(const VarNode*) {}
void IRVisitor::visit_binary(const BinaryNode* op) {
  visit(op->a);
  visit(op->b);
}
void IRVisitor::visit_Not(const NotNode* op) { visit(op->a); }
void IRVisitor::visit_Select(const SelectNode* op) {
  visit(op->cond);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit_Cast(const CastNode* op) { visit(op->value); }
void IRVisitor::visit_Ramp(const RampNode* op) {
  visit(op->base);
  visit(op->stride);
}
void IRVisitor::visit_Broadcast(const BroadcastNode* op) { visit(op->value); }
void IRVisitor::visit_BufferLoad(const BufferLoadNode* op) {
  for (const auto& i : op->indices) visit(i);
}
void IRVisitor::visit_Call(const CallNode* op) {
  for (const auto& a : op->args) visit(a);
}

void IRVisitor::visit_Seq(const SeqNode* op) {
  for (const auto& s : op->stmts) visit(s);
}
void IRVisitor::visit_For(const ForNode* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_While(const WhileNode* op) {
  visit(op->cond);
  visit(op->body);
}
void IRVisitor::visit_If(const IfNode* op) {
  visit(op->cond);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit_Let(const LetNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_BufferStore(const BufferStoreNode* op) {
  for (const auto& i : op->indices) visit(i);
  visit(op->value);
}
void IRVisitor::visit_Evaluate(const EvaluateNode* op) { visit(op->value); }
void IRVisitor::visit_Allocate(const AllocateNode* op) { visit(op->body); }
void IRVisitor::visit_KernelLaunch(const KernelLaunchNode* op) {
  for (const auto& g : op->grid) visit(g);
  visit(op->body);
}
void IRVisitor::visit_TileOp(const TileOpNode* op) {
  for (const auto& a : op->args) {
    if (auto* e = std::get_if<Expr>(&a)) visit(*e);
    else visit_region(std::get<BufferRegion>(a));
  }
  for (const auto& [k, v] : op->attrs)
    if (auto* e = std::get_if<Expr>(&v)) visit(*e);
}
void IRVisitor::visit_Annotate(const AnnotateNode* op) {
  if (auto* e = std::get_if<Expr>(&op->value)) visit(*e);
  visit(op->body);
}

namespace {
class FnVisitor : public IRVisitor {
 public:
  explicit FnVisitor(const std::function<void(const Node*)>& fn) : fn_(fn) {}
  void run(const Stmt& s) { visit(s); }

 protected:
#define TILEC_EXPR(Kind, NodeClass)             \
  void visit_##Kind(const NodeClass* op) override { \
    fn_(op);                                    \
    IRVisitor::visit_##Kind(op);                \
  }
#define TILEC_BINARY(Kind, Symbol, Category)
#define TILEC_STMT(Kind, NodeClass) TILEC_EXPR(Kind, NodeClass)
#include "tilec/ir/nodes.def"
  void visit_binary(const BinaryNode* op) override {
    fn_(op);
    IRVisitor::visit_binary(op);
  }

 private:
  const std::function<void(const Node*)>& fn_;
};
}  // namespace

void for_each_node(const Stmt& s, const std::function<void(const Node*)>& fn) { FnVisitor(fn).run(s); }

}  // namespace tilec::ir
