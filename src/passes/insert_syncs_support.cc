// insert_syncs_support.h: the global tensors a kernel writes, the shared arena's byte ranges,
// and named barriers for roles.
#include "passes/insert_syncs_support.h"

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

}  // namespace tilec::passes::syncs
