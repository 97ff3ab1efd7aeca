// insert_syncs_support.h: the global tensors a kernel writes, the shared arena's byte ranges,
// and named barriers for roles.
#include "passes/insert_syncs_support.h"

#include "layout/int_eval.h"

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"

namespace tilec::passes::syncs {

using namespace ir;

namespace {


bool reads_through_tma_descriptor(const std::string& op) {
  return op == "tl.tma_load" || op == "tl.tma_load_multicast" || op == "tl.tma_prefetch_descriptor";
}

}  // namespace

GlobalWrites find_global_writes(const Stmt& body) {
  class Walk : public IRVisitor {
   public:
    GlobalWrites out;

   protected:
    void visit_BufferStore(const BufferStoreNode* op) override {
      out.buffers.insert(op->buffer.get());
      IRVisitor::visit_BufferStore(op);
    }
    void visit_TileOp(const TileOpNode* op) override {
      for (const auto& a : op->args)
        if (auto* r = std::get_if<BufferRegion>(&a)) out.buffers.insert(r->buffer.get());
      IRVisitor::visit_TileOp(op);
    }
    // Reached only where the address does not go straight to a reading call argument.
    void visit_Call(const CallNode* op) override {
      if (op->op == "tl.address_of") {
        if (auto* load = op->args.empty() ? nullptr : op->args[0].as<BufferLoadNode>()) out.buffers.insert(load->buffer.get());
        return IRVisitor::visit_Call(op);
      }
      if (op->op == kTmaDescriptorOp) {
        if (auto* name = op->args.empty() ? nullptr : op->args[0].as<StringImmNode>()) out.tma_names.insert(name->value);
        return IRVisitor::visit_Call(op);
      }
      const std::string& spec = back::intrinsic_effect(op->op);
      for (size_t i = 0; i < op->args.size(); ++i) {
        auto* arg = op->args[i].as<CallNode>();
        bool read_address = arg && arg->op == "tl.address_of" && back::effect_of_arg(spec, i) == 'r';
        bool read_map = arg && arg->op == kTmaDescriptorOp && reads_through_tma_descriptor(op->op);
        if (read_address || read_map) {
          for (const auto& x : arg->args) visit(x);  // the indices (and descriptor operands) only
          continue;
        }
        visit(op->args[i]);
      }
    }
  } w;
  w.visit(body);
  return w.out;
}


// Arena byte ranges of the shared.dyn buffers (from plan_shared_memory's annotations).
std::unordered_map<const BufferNode*, std::pair<int64_t, int64_t>> arena_ranges(const Stmt& body) {
  std::unordered_map<const BufferNode*, std::pair<int64_t, int64_t>> out;
  for_each_node(body, [&](const Node* n) {
    if (n->kind != NodeKind::kAnnotate) return;
    auto* a = static_cast<const AnnotateNode*>(n);
    if (a->key != kSmemOffsetKey) return;
    auto* alloc = a->body.as<AllocateNode>();
    auto* off = std::get_if<Expr>(&a->value);
    if (!alloc || !off || !as_const_int(*off)) return;
    int64_t numel = 1;
    for (const auto& e : alloc->buffer->shape) numel *= as_const_int(e) ? *as_const_int(e) : 1;
    int64_t bytes = (numel * alloc->buffer->dtype.bits() * alloc->buffer->dtype.lanes() + 7) / 8;
    int64_t lo = *as_const_int(*off);
    out[alloc->buffer.get()] = {lo, lo + bytes};
  });
  return out;
}

namespace {

class NamedBarriers : public IRMutator {
 public:
  explicit NamedBarriers(int64_t block_threads) : block_threads_(block_threads) {}

 protected:
  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    if (op->key != kThreadRangeKey) return IRMutator::mutate_Annotate(s, op);
    const auto& r = std::get<std::vector<int64_t>>(op->value);
    roles_.push_back(r);
    Stmt out = IRMutator::mutate_Annotate(s, op);
    roles_.pop_back();
    return out;
  }
  Stmt mutate_Evaluate(const Stmt& s, const EvaluateNode* op) override {
    auto* c = op->value.as<CallNode>();
    if (!c || c->op != "tl.syncthreads" || roles_.empty() || roles_.back()[1] >= block_threads_) return s;
    const auto& r = roles_.back();
    TILEC_ICHECK(r.size() >= 3 && r[1] % 32 == 0 && r[2] > 0 && r[2] < 16)
        << "a barrier inside a role of " << r[1] << " threads (named barriers need whole warps and an id 1..15)";
    return evaluate(call(DataType::Void(), "tl.named_barrier_sync", {int_imm(r[2], Int32()), int_imm(r[1], Int32())}, s->loc),
                    s->loc);
  }

 private:
  int64_t block_threads_;
  std::vector<std::vector<int64_t>> roles_;
};

}  // namespace

Stmt named_barriers(const Stmt& body, int64_t block_threads) { return NamedBarriers(block_threads).mutate(body); }

namespace {

using BufferSet = std::unordered_set<const BufferNode*>;

class LocalBuffers : public IRVisitor {
 public:
  BufferSet out;

 protected:
  void visit_Allocate(const AllocateNode* op) override {
    if (op->buffer->scope == Scope::kLocal || op->buffer->scope == Scope::kVar) out.insert(op->buffer.get());
    IRVisitor::visit_Allocate(op);
  }
};

// One pass over the body: drops from `uniform` every buffer with a write that is not uniform.
class DropDivergentWrites : public IRVisitor {
 public:
  DropDivergentWrites(BufferSet& uniform, std::unordered_set<const VarNode*> divergent, const GlobalWrites& gw)
      : uniform_(uniform), divergent_(std::move(divergent)), gw_(gw) {}
  bool changed = false;

 protected:
  void visit_For(const ForNode* op) override {
    const bool div = op->for_kind == ForKind::kThreadBinding || divergent(op->min) || divergent(op->extent);
    if (div) divergent_.insert(op->loop_var.get());
    control_ += div;
    IRVisitor::visit_For(op);
    control_ -= div;
  }
  void visit_If(const IfNode* op) override {
    const bool div = divergent(op->cond);
    control_ += div;
    IRVisitor::visit_If(op);
    control_ -= div;
  }
  void visit_While(const WhileNode* op) override {
    const bool div = divergent(op->cond);
    control_ += div;
    IRVisitor::visit_While(op);
    control_ -= div;
  }
  void visit_Let(const LetNode* op) override {
    if (divergent(op->value)) divergent_.insert(op->var.get());
    IRVisitor::visit_Let(op);
  }
  void visit_Annotate(const AnnotateNode* op) override {
    const bool role = op->key == kThreadRangeKey;  // only some threads run it
    control_ += role;
    IRVisitor::visit_Annotate(op);
    control_ -= role;
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    bool div = control_ > 0 || divergent(op->value);
    for (const auto& i : op->indices) div = div || divergent(i);
    if (div) drop(op->buffer.get());
    IRVisitor::visit_BufferStore(op);
  }
  void visit_Call(const CallNode* op) override {
    // A local written through its address (or read through it: kept simple) is dropped.
    if (op->op == "tl.address_of" && !op->args.empty())
      if (auto* load = op->args[0].as<BufferLoadNode>()) drop(load->buffer.get());
    IRVisitor::visit_Call(op);
  }

 private:
  void drop(const BufferNode* b) { changed |= uniform_.erase(b) > 0; }
  bool divergent(const Expr& e) const {
    return back::any_node(e, [&](const ExprNode* n) {
      switch (n->kind) {
        case NodeKind::kVar: return divergent_.count(static_cast<const VarNode*>(n)) > 0;
        case NodeKind::kBufferLoad: {
          const BufferNode* b = static_cast<const BufferLoadNode*>(n)->buffer.get();
          return !(b->scope == Scope::kGlobal && !gw_.may_write(b)) && !uniform_.count(b);
        }
        case NodeKind::kCall: return !back::is_pure_call(static_cast<const CallNode*>(n));
        default: return false;
      }
    });
  }
  BufferSet& uniform_;
  std::unordered_set<const VarNode*> divergent_;
  const GlobalWrites& gw_;
  int control_ = 0;
};

}  // namespace

BufferSet uniform_locals(const Stmt& body, const std::unordered_set<const VarNode*>& thread_vars,
                         const GlobalWrites& global_writes) {
  LocalBuffers all;
  all.visit(body);
  BufferSet uniform = std::move(all.out);
  while (true) {
    DropDivergentWrites pass(uniform, thread_vars, global_writes);
    pass.visit(body);
    if (!pass.changed) return uniform;
  }
}

bool injective_in(const ir::Expr& index, const std::vector<ir::Var>& varying, const std::vector<int64_t>& varying_ext,
                  const std::vector<ir::Var>& fixed, const std::vector<int64_t>& fixed_ext, int64_t lanes,
                  int64_t stride) {
  int64_t total = lanes;
  for (int64_t e : varying_ext) total *= e;
  for (int64_t e : fixed_ext) total *= e;
  if (total > (int64_t{1} << 18)) return false;
  std::vector<ir::Var> slots = varying;
  slots.insert(slots.end(), fixed.begin(), fixed.end());
  if (!layout::IntProgram::compiles(index, slots)) return false;
  layout::IntProgram prog(index, slots);
  std::vector<int64_t> values(slots.size(), 0);
  // Odometer over the variables [off, off + ext.size()) of `values`; false when it wraps.
  auto next = [&](const std::vector<int64_t>& ext, size_t off) {
    for (size_t i = 0; i < ext.size(); ++i) {
      if (++values[off + i] < ext[i]) return true;
      values[off + i] = 0;
    }
    return false;
  };
  std::unordered_set<int64_t> seen;
  do {
    seen.clear();
    do {
      const int64_t base = prog.eval(values.data());
      for (int64_t l = 0; l < lanes; ++l)
        if (!seen.insert(base + l * stride).second) return false;
    } while (next(varying_ext, 0));
  } while (next(fixed_ext, varying.size()));
  return true;
}

}  // namespace tilec::passes::syncs
