// CPU target: statements. Every loop kind runs serially in order (T.Parallel, T.serial,
// T.Pipelined, unrolled, vectorized, while); T.Kernel runs its blocks one after another (x
// fastest), each with fresh on-chip buffers (a kernel that calls T.sync_grid() runs its blocks
// in turns instead: grid_sync.cc); thread-bound loops and T.ws are thread-level
// code and raise "not supported on target=cpu", as does T.make_tensor (device addresses).
#include "target/cpu/machine.h"
#include "tilec/passes/passes.h"

namespace tilec::cpu {

namespace {

void exec_for(Machine& m, const ForNode* f) {
  if (f->for_kind == ForKind::kThreadBinding)
    m.not_supported("a loop bound to " + (f->thread_tag.empty() ? std::string("a thread index") : f->thread_tag),
                    f->loc, "write the loop as T.Parallel (the CPU target runs a block as one)");
  int64_t lo = m.eval_int(f->min), n = m.eval_int(f->extent);
  DataType t = f->loop_var->dtype;
  VarScope scope(m, f->loop_var.get(), from_int(t, lo));
  for (int64_t i = 0; i < n; ++i) {
    scope.set(from_int(t, lo + i));
    m.exec(f->body);
  }
}

}  // namespace

void exec_kernel(Machine& m, const KernelLaunchNode* k) {
  std::vector<int64_t> grid;
  int64_t blocks = 1;
  for (const Expr& g : k->grid) {
    grid.push_back(m.eval_int(g));
    blocks *= std::max<int64_t>(grid.back(), 0);
  }
  for (const Var& t : k->thread_vars) m.thread_vars_.insert(t.get());
  if (passes::contains_grid_sync(k->body)) {
    exec_kernel_cooperative(m, k, grid, blocks);
    for (const Var& t : k->thread_vars) m.thread_vars_.erase(t.get());
    return;
  }
  std::vector<int64_t> block(grid.size(), 0);
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t rest = b;
    for (size_t d = 0; d < grid.size(); ++d) {
      block[d] = rest % grid[d];
      rest /= grid[d];
      m.bind(k->block_vars[d].get(), from_int(k->block_vars[d]->dtype, block[d]));
    }
    if (m.options_.on_block) m.options_.on_block(block);
    m.exec(k->body);
  }
  for (const Var& v : k->block_vars) m.unbind(v.get());
  for (const Var& t : k->thread_vars) m.thread_vars_.erase(t.get());
}

void Machine::exec(const Stmt& s) {
  switch (s->kind) {
    case NodeKind::kSeq:
      for (const Stmt& c : s.as<SeqNode>()->stmts) exec(c);
      return;
    case NodeKind::kFor: exec_for(*this, s.as<ForNode>()); return;
    case NodeKind::kWhile: {
      auto* n = s.as<WhileNode>();
      while (eval_bool(n->cond)) exec(n->body);
      return;
    }
    case NodeKind::kIf: {
      auto* n = s.as<IfNode>();
      if (eval_bool(n->cond)) exec(n->then_case);
      else if (n->else_case) exec(n->else_case);
      return;
    }
    case NodeKind::kLet: {
      auto* n = s.as<LetNode>();
      Value v = eval(n->value);
      if (n->value->dtype != n->var->dtype) v = convert(v, n->value->dtype, n->var->dtype);
      VarScope scope(*this, n->var.get(), v);
      exec(n->body);
      return;
    }
    case NodeKind::kBufferStore: {
      auto* n = s.as<BufferStoreNode>();
      std::vector<int64_t> idx;
      idx.reserve(n->indices.size());
      for (const Expr& i : n->indices) idx.push_back(eval_int(i));
      Value v = eval(n->value);
      if (n->value->dtype != n->buffer->dtype) v = convert(v, n->value->dtype, n->buffer->dtype);
      store(n->buffer, idx, v, s->loc);
      return;
    }
    case NodeKind::kEvaluate: eval(s.as<EvaluateNode>()->value); return;
    case NodeKind::kAllocate: {
      auto* n = s.as<AllocateNode>();
      if (n->buffer->data) {  // T.make_tensor: only over a pointer parameter (bind_pointer_tensor)
        bind_pointer_tensor(n->buffer, s->loc);
        exec(n->body);
        release(n->buffer);
        return;
      }
      allocate(n->buffer, s->loc);
      exec(n->body);
      release(n->buffer);
      return;
    }
    case NodeKind::kKernelLaunch: exec_kernel(*this, s.as<KernelLaunchNode>()); return;
    case NodeKind::kTileOp: tile_op(s.as<TileOpNode>()); return;
    case NodeKind::kAnnotate: {
      auto* n = s.as<AnnotateNode>();
      if (n->key == "ws")
        not_supported("T.ws (a warp-group role)", s->loc,
                      "warp specialization is thread-level; write the tile-level program without T.ws");
      exec(n->body);  // layouts, swizzles, rasterization: how, not what
      return;
    }
    default: break;
  }
  TILEC_UNREACHABLE() << "statement kind " << node_kind_name(s->kind);
}

}  // namespace tilec::cpu
