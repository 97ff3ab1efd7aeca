// Canonical pipelined-loop bodies and statement access sets (see pipeline_body.h).
#include "passes/pipeline_body.h"

#include <functional>

#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"

namespace tilec::passes::pipeline {

using namespace ir;

namespace {

void flatten(const Stmt& s, Body* out, VarMap* lets) {
  if (!s) return;
  if (auto* seq = s.as<SeqNode>()) {
    for (const auto& x : seq->stmts) flatten(x, out, lets);
  } else if (auto* let = s.as<LetNode>()) {
    (*lets)[let->var.get()] = lets->empty() ? let->value : substitute(let->value, *lets);
    flatten(let->body, out, lets);
  } else if (s.as<AllocateNode>() || s.as<AnnotateNode>()) {
    out->wrappers.push_back(s);
    flatten(s.as<AllocateNode>() ? s.as<AllocateNode>()->body : s.as<AnnotateNode>()->body, out, lets);
  } else {
    out->stmts.push_back(lets->empty() ? s : substitute(s, *lets));
  }
}

// Reads and writes of plain statements (and of everything nested in loops / ifs). A view
// (T.reshape) counts as the buffer whose memory it is.
class AccessCollector : public IRVisitor {
 public:
  explicit AccessCollector(Access* a, const std::function<bool(const TileOpNode*)>* skip = nullptr)
      : a_(a), skip_(skip) {}

 protected:
  void visit_BufferLoad(const BufferLoadNode* op) override {
    a_->reads.insert(storage_root(op->buffer.get()));
    IRVisitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    a_->writes.insert(storage_root(op->buffer.get()));
    IRVisitor::visit_BufferStore(op);
  }
  void visit_TileOp(const TileOpNode* op) override {
    if (skip_ && (*skip_)(op)) return;
    // Argument roles of the built-in ops: which region arguments are read (r), written (w)
    // or both (m). Unknown ops: every region is read and written.
    static const std::vector<std::pair<std::string, std::string>> kRoles = {
        {"copy", "rw"},   {"async_copy", "rw"}, {"tma_copy", "rw"},   {"gemm", "rrm"},
        {"fill", "w"},    {"cumsum", "rw"},     {"atomic_add", "mr"}, {"atomic_max", "mr"},
        {"atomic_min", "mr"}};
    std::string roles;
    for (const auto& [name, r] : kRoles)
      if (op->op == name) roles = r;
    if (op->op.rfind("reduce_", 0) == 0) roles = attr_bool(*op, "clear", true) ? "rw" : "rm";
    for (size_t i = 0; i < op->args.size(); ++i) {
      auto* region = std::get_if<BufferRegion>(&op->args[i]);
      if (!region) {
        visit(std::get<Expr>(op->args[i]));
        continue;
      }
      visit_region(*region);
      const char role = i < roles.size() ? roles[i] : 'm';
      if (role == 'r' || role == 'm') a_->reads.insert(storage_root(region->buffer.get()));
      if (role == 'w' || role == 'm') a_->writes.insert(storage_root(region->buffer.get()));
    }
  }

 private:
  Access* a_;
  const std::function<bool(const TileOpNode*)>* skip_;
};

}  // namespace

Body split_body(const Stmt& body) {
  Body out;
  VarMap lets;
  flatten(body, &out, &lets);
  return out;
}

Stmt join_body(const std::vector<Stmt>& wrappers, std::vector<Stmt> stmts) {
  Stmt s = stmts.size() == 1 ? stmts.front() : seq(std::move(stmts));
  for (auto it = wrappers.rbegin(); it != wrappers.rend(); ++it) {
    if (auto* a = it->as<AllocateNode>()) {
      s = allocate(a->buffer, s, a->loc);
    } else {
      auto* n = it->as<AnnotateNode>();
      s = annotate(n->key, n->value, s, n->loc);
    }
  }
  return s;
}

Stmt serial_loop(const ForNode* op, const Body& body, const std::vector<int>& order) {
  std::vector<Stmt> stmts(body.stmts.size());
  for (size_t j = 0; j < body.stmts.size(); ++j) stmts[order[j]] = body.stmts[j];
  return make_for(op->loop_var, op->min, op->extent, ForKind::kSerial, join_body(body.wrappers, std::move(stmts)),
                  op->loc, {}, "", op->annotations);
}

Access accesses(const Stmt& s) {
  Access a;
  AccessCollector c(&a);
  c.visit(s);
  return a;
}

Access accesses_except(const Stmt& s, const std::function<bool(const TileOpNode*)>& skip) {
  Access a;
  AccessCollector c(&a, &skip);
  c.visit(s);
  return a;
}

bool is_global_to_shared_copy(const Stmt& s) {
  auto* op = s.as<TileOpNode>();
  if (!op || (op->op != "copy" && op->op != "async_copy") || op->args.size() < 2) return false;
  auto* src = std::get_if<BufferRegion>(&op->args[0]);
  auto* dst = std::get_if<BufferRegion>(&op->args[1]);
  return src && dst && src->buffer->scope == Scope::kGlobal && is_shared(dst->buffer->scope);
}

std::vector<Expr> VersionAccesses::version_prefix(const Buffer& versioned, const Buffer& original) const {
  if (versioned->ndim() == original->ndim() + 2) return {slot_, int_imm(0, slot_->dtype)};  // a 1-D tile's row
  return {slot_};
}

BufferRegion VersionAccesses::mutate_region(const BufferRegion& r) {
  BufferRegion out = IRMutator::mutate_region(r);
  auto it = map_.find(r.buffer.get());
  if (it == map_.end()) return out;
  out.buffer = it->second;
  std::vector<Range> prefix;
  for (const Expr& e : version_prefix(it->second, r.buffer)) prefix.push_back(Range{e, int_imm(1, slot_->dtype)});
  out.region.insert(out.region.begin(), prefix.begin(), prefix.end());
  return out;
}

Expr VersionAccesses::mutate_BufferLoad(const Expr& e, const BufferLoadNode* op) {
  Expr n = IRMutator::mutate_BufferLoad(e, op);
  auto it = map_.find(op->buffer.get());
  if (it == map_.end()) return n;
  auto* l = n.as<BufferLoadNode>();
  std::vector<Expr> idx = version_prefix(it->second, op->buffer);
  idx.insert(idx.end(), l->indices.begin(), l->indices.end());
  return buffer_load(it->second, idx, op->loc);
}

Stmt VersionAccesses::mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) {
  Stmt n = IRMutator::mutate_BufferStore(s, op);
  auto it = map_.find(op->buffer.get());
  if (it == map_.end()) return n;
  auto* st = n.as<BufferStoreNode>();
  std::vector<Expr> idx = version_prefix(it->second, op->buffer);
  idx.insert(idx.end(), st->indices.begin(), st->indices.end());
  return buffer_store(it->second, idx, st->value, op->loc);
}

}  // namespace tilec::passes::pipeline
