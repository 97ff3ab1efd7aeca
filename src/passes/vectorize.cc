// Pass vectorize: vectorized loops -> vector memory accesses, or unrolled loops.
//
// Input:  lowered IR after legalize_bounds. Global accesses use logical indices; shared and
//         local buffers are 1-D.
// Output: no For of kind Vectorized. A vectorized loop `for v in [m, m + V)` (V, m constant)
//         becomes its body on V-lane vectors when
//           - the body is a sequence of BufferStores and vector atomic adds (no If, Let, loop
//             or other call statement): `tl.atomic_add(tl.address_of(B[..v..]), value)` as a
//             statement (old value unused) where kVectorAtomicAdds has B's dtype and V for the
//             target and B's memory (float x2 / x4 in global memory on sm_90+, half / bfloat16
//             x2); it becomes tl.atomic_add(tl.address_of(B[Ramp]), vector value),
//           - every access is contiguous in v: v appears (affinely) in one index only, with
//             coefficient 1, in a dimension of stride 1 — or not at all (a loop-invariant
//             scalar access, broadcast),
//           - every vector access has V * element bytes of 4, 8 or 16 (float4_e2m1: V even,
//             2..32, so 1 to 16 bytes),
//           - every vector access starts aligned: its flat offset at v = m is a multiple of V
//             (arith::Analyzer / constant factors). For global buffers whose alignment
//             depends on symbolic strides, a runtime check selects between the vector code
//             and the unrolled loop; for shared and local buffers it must be proved,
//           - the value is lane-wise: arithmetic, compares, casts, selects (whose branches
//             read no global memory: both branches of a vector select are evaluated),
//             pure math calls,
//           - a buffer both stored and loaded in the loop is accessed at one index only
//             (no dependence between iterations).
//         Vector accesses have a Ramp(base, 1, V) index; loop-invariant operands become
//         Broadcasts; uses of v become Ramp(m, 1, V). Any other vectorized loop becomes
//         kind Unrolled, unchanged otherwise — except one that writes float4_e2m1 (two a
//         byte, stored in whole bytes only), which becomes `for p: <body on 2 lanes>` where
//         that vectorizes (a pair of a row-major fp4 tensor is aligned when its innermost
//         index is even: rows have even lengths).
// Config: tl.disable_vectorize (or tir.disable_vectorize): every vectorized loop unrolled
//         (a loop writing float4_e2m1 still goes by pairs).
// Runs after: legalize_bounds (whose fast paths are plain). Runs before: flatten_buffers.
// Base pointers: shared buffers are 128-byte aligned (plan_shared_memory), local arrays
// get alignas (codegen), global tensors are checked by the runtime against the plan's
// alignment_bytes (the widest vector access, see split_host_device.cc).
#include <functional>
#include <unordered_set>

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

using namespace ir;

namespace {

bool vector_bytes_ok(int64_t bytes) { return bytes == 4 || bytes == 8 || bytes == 16; }

// A vector access of `lanes` elements of `t`: 4, 8 or 16 bytes; float4_e2m1 (two elements a
// byte) also 1 and 2 bytes, with an even lane count, so that its stores write whole bytes.
bool vector_access_ok(DataType t, int64_t lanes) {
  if (t.is_float4()) return lanes % 2 == 0 && lanes >= 2 && lanes <= 32;
  return vector_bytes_ok(lanes * back::element_bytes(t));
}

// Vector atomic adds the device library turns into one instruction (tilec/atomic.cuh).
struct VectorAtomicAdd {
  DataType dtype;
  int64_t lanes;
  int min_arch;      // compute capability * 10
  bool global_only;  // sm_90's float2 / float4 atomicAdd take global addresses only
};
const VectorAtomicAdd kVectorAtomicAdds[] = {
    {DataType::Float(32), 2, 90, true},
    {DataType::Float(32), 4, 90, true},
    {DataType::Float(16), 2, 80, false},
    {DataType::BFloat16(), 2, 80, false},
};

bool vector_atomic_add_ok(const Buffer& b, int64_t lanes, int arch) {
  for (const auto& row : kVectorAtomicAdds)
    if (row.dtype == b->dtype && row.lanes == lanes && arch >= row.min_arch &&
        (!row.global_only || b->scope == Scope::kGlobal))
      return true;
  return false;
}

// `tl.atomic_add(tl.address_of(B[...]), value)` as a statement: the address's load, else null.
const BufferLoadNode* atomic_add_target(const Stmt& s, const CallNode** atomic) {
  auto* ev = s.as<EvaluateNode>();
  auto* c = ev ? ev->value.as<CallNode>() : nullptr;
  if (!c || c->op != "tl.atomic_add" || c->args.size() != 2) return nullptr;
  auto* addr = c->args[0].as<CallNode>();
  if (!addr || addr->op != "tl.address_of" || addr->args.size() != 1) return nullptr;
  *atomic = c;
  return addr->args[0].as<BufferLoadNode>();
}

class LoopVectorizer {
 public:
  LoopVectorizer(arith::Analyzer& az, const ForNode* loop, int arch)
      : az_(az), v_(loop->loop_var.get()), min_(*as_const_int(loop->min)), lanes_(*as_const_int(loop->extent)),
        arch_(arch) {}

  // The vectorized statements, or null when the loop cannot be vectorized. `align_cond` gets
  // the runtime alignment check the vector code needs (null: none).
  Stmt run(const Stmt& body, Expr* align_cond) {
    std::vector<Stmt> stmts;
    if (auto* q = body.as<SeqNode>()) stmts = q->stmts;
    else stmts = {body};
    std::vector<Stmt> out;
    for (const auto& s : stmts) {
      const CallNode* atomic = nullptr;
      if (const BufferLoadNode* target = atomic_add_target(s, &atomic)) {
        Stmt v = vector_atomic_add(s, atomic, target);
        if (!v.defined()) return Stmt();
        out.push_back(v);
        continue;
      }
      auto* st = s.as<BufferStoreNode>();
      if (!st) return Stmt();
      auto idx = access(st->buffer, st->indices);
      if (!idx || !any_vector(*idx)) return Stmt();  // a store must be contiguous
      auto value = vec(st->value);
      if (!value) return Stmt();
      Expr v = is_vector(*value) ? *value : broadcast(*value, static_cast<int>(lanes_), st->value->loc);
      stored_.push_back({st->buffer.get(), st->indices});
      out.push_back(buffer_store(st->buffer, *idx, v, s->loc));
    }
    // No dependence between iterations: a stored buffer is touched at one index only.
    for (const auto& [b, idx] : stored_) {
      for (const auto& [b2, idx2] : touched_) {
        if (b2 != b) continue;
        for (size_t d = 0; d < idx.size(); ++d)
          if (!back::same_expr(idx[d], idx2[d])) return Stmt();
      }
      for (const auto& [b2, idx2] : stored_) {
        if (b2 != b) continue;
        for (size_t d = 0; d < idx.size(); ++d)
          if (!back::same_expr(idx[d], idx2[d])) return Stmt();
      }
    }
    *align_cond = align_cond_;
    return seq(out, body->loc);
  }

 private:
  // One atomic add of the loop's lanes to consecutive elements, or null.
  Stmt vector_atomic_add(const Stmt& s, const CallNode* atomic, const BufferLoadNode* target) {
    if (!vector_atomic_add_ok(target->buffer, lanes_, arch_)) return Stmt();
    auto idx = access(target->buffer, target->indices);
    if (!idx || !any_vector(*idx)) return Stmt();
    auto value = vec(atomic->args[1]);
    if (!value) return Stmt();
    stored_.push_back({target->buffer.get(), target->indices});
    const int lanes = static_cast<int>(lanes_);
    Expr addr = call(DataType::Handle(), "tl.address_of", {buffer_load(target->buffer, *idx, s->loc)}, s->loc);
    return evaluate(call(atomic->dtype.with_lanes(lanes), "tl.atomic_add", {addr, widen(*value)}, s->loc), s->loc);
  }

  bool is_vector(const Expr& e) const { return e->dtype.lanes() > 1; }
  bool any_vector(const std::vector<Expr>& xs) const {
    for (const auto& x : xs)
      if (is_vector(x)) return true;
    return false;
  }

  Expr at_min(const Expr& e) const {
    auto aff = back::affine_in(e, v_);
    if (aff) return back::add(aff->rest, int_imm(aff->coeff * min_, e->dtype));
    VarMap m;
    m[v_] = int_imm(min_, v_->dtype);
    return substitute(e, m);
  }

  // The indices of a vector access of `b` (one Ramp), the unchanged indices of an invariant
  // access, or nullopt when the access is neither.
  std::optional<std::vector<Expr>> access(const Buffer& b, const std::vector<Expr>& indices) {
    touched_.push_back({b.get(), indices});
    std::vector<Expr> strides = back::strides_of(b);
    int vector_dim = -1;
    std::vector<back::AffineInVar> forms;
    for (size_t d = 0; d < indices.size(); ++d) {
      auto aff = back::affine_in(indices[d], v_);
      if (!aff) return std::nullopt;
      if (aff->coeff != 0) {
        if (vector_dim >= 0 || aff->coeff != 1 || !is_one(strides[d])) return std::nullopt;
        vector_dim = static_cast<int>(d);
      }
      forms.push_back(*aff);
    }
    if (vector_dim < 0) return indices;  // loop invariant
    if (!vector_access_ok(b->dtype, lanes_)) return std::nullopt;
    // Alignment of the first element.
    Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr term = back::mul(at_min(indices[d]), strides[d]);
      flat = flat ? back::add(flat, term) : term;
    }
    // A row-major float4_e2m1 tensor has an even innermost extent (check_fp4_buffers, and the
    // runtime takes it from torch's float4_e2m1fn_x2, whose elements come in pairs), so every
    // row starts on a byte: a pair is aligned when its innermost index is even.
    const bool fp4_pair = lanes_ == 2 && b->dtype.is_float4() && b->strides.empty() &&
                          vector_dim == static_cast<int>(indices.size()) - 1;
    if (fp4_pair && back::provably_divisible(az_, at_min(indices[vector_dim]), 2)) {
      // aligned
    } else if (!back::provably_divisible(az_, flat, lanes_)) {
      if (b->scope != Scope::kGlobal) return std::nullopt;
      Expr rest = back::non_divisible_part(flat, lanes_);
      TILEC_ICHECK(rest.defined()) << "non-divisible offset without a non-divisible part";
      if (as_const_int(rest)) return std::nullopt;  // misaligned by a constant: never aligned
      Expr check = binary(NodeKind::kEQ, floormod(rest, int_imm(lanes_, rest->dtype)), int_imm(0, rest->dtype));
      bool dup = false;
      for (const auto& c : back::split_conjuncts(align_cond_)) dup |= back::same_expr(c, check);
      if (!dup) align_cond_ = back::conj(align_cond_, check);
    }
    std::vector<Expr> out = indices;
    out[vector_dim] = ramp(at_min(indices[vector_dim]), int_imm(1, indices[vector_dim]->dtype), static_cast<int>(lanes_));
    return out;
  }

  Expr widen(const Expr& e) const {
    return is_vector(e) ? e : broadcast(e, static_cast<int>(lanes_), e->loc);
  }

  static void for_each_load(const Expr& e, const std::function<void(const BufferLoadNode*)>& fn) {
    struct Finder : IRVisitor {
      const std::function<void(const BufferLoadNode*)>* fn;
      void visit_BufferLoad(const BufferLoadNode* op) override {
        (*fn)(op);
        IRVisitor::visit_BufferLoad(op);
      }
    } f;
    f.fn = &fn;
    f.visit(e);
  }

  // Every global load in `e` also occurs in `cond`.
  static bool loads_covered_by(const Expr& e, const Expr& cond) {
    std::vector<const BufferLoadNode*> in_cond;
    for_each_load(cond, [&](const BufferLoadNode* l) { in_cond.push_back(l); });
    bool ok = true;
    for_each_load(e, [&](const BufferLoadNode* l) {
      if (l->buffer->scope != Scope::kGlobal) return;
      bool found = false;
      for (auto* c : in_cond) {
        if (c->buffer.get() != l->buffer.get() || c->indices.size() != l->indices.size()) continue;
        bool same = true;
        for (size_t d = 0; d < l->indices.size(); ++d) same &= back::same_expr(c->indices[d], l->indices[d]);
        found |= same;
      }
      ok &= found;
    });
    return ok;
  }

  // The lane-wise form of `e`: a vector, or `e` itself when it does not depend on v.
  std::optional<Expr> vec(const Expr& e) {
    if (!back::uses_var(e, v_)) {
      // Loop invariant: stays a scalar (broadcast where combined with vectors).
      for_each_load(e, [&](const BufferLoadNode* l) { touched_.push_back({l->buffer.get(), l->indices}); });
      return e;
    }
    switch (e->kind) {
      case NodeKind::kVar:
        return ramp(int_imm(min_, e->dtype), int_imm(1, e->dtype), static_cast<int>(lanes_), e->loc);
      case NodeKind::kBufferLoad: {
        auto* l = e.as<BufferLoadNode>();
        auto idx = access(l->buffer, l->indices);
        if (!idx) return std::nullopt;
        return buffer_load(l->buffer, *idx, e->loc);
      }
      case NodeKind::kNot: {
        auto a = vec(e.as<NotNode>()->a);
        if (!a) return std::nullopt;
        return logical_not(widen(*a), e->loc);
      }
      case NodeKind::kSelect: {
        auto* s = e.as<SelectNode>();
        // Both branches of a vector select are evaluated: a global load in a branch must be one
        // the condition makes anyway (legalize_bounds guards possibly out-of-bounds loads
        // with selects whose branches must stay conditional).
        if (!loads_covered_by(s->true_value, s->cond) || !loads_covered_by(s->false_value, s->cond)) return std::nullopt;
        auto c = vec(s->cond), t = vec(s->true_value), f = vec(s->false_value);
        if (!c || !t || !f) return std::nullopt;
        return select(widen(*c), widen(*t), widen(*f), e->loc);
      }
      case NodeKind::kCast: {
        auto a = vec(e.as<CastNode>()->value);
        if (!a) return std::nullopt;
        return cast(e->dtype.with_lanes(static_cast<int>(lanes_)), widen(*a), e->loc);
      }
      case NodeKind::kCall: {
        auto* c = e.as<CallNode>();
        bool user_math = c->op.rfind("tl.", 0) != 0 && c->op.rfind("cuda.", 0) != 0 && back::is_pure_intrinsic(c->op);
        if (!user_math) return std::nullopt;
        std::vector<Expr> args;
        for (const auto& a : c->args) {
          auto x = vec(a);
          if (!x) return std::nullopt;
          args.push_back(widen(*x));
        }
        return call(e->dtype.with_lanes(static_cast<int>(lanes_)), c->op, args, e->loc);
      }
      default:
        if (is_binary_kind(e->kind)) {
          auto* b = e.as<BinaryNode>();
          auto x = vec(b->a), y = vec(b->b);
          if (!x || !y) return std::nullopt;
          return binary(e->kind, widen(*x), widen(*y), e->loc);
        }
        return std::nullopt;  // Ramp / Broadcast already: leave to unrolling
    }
  }

  arith::Analyzer& az_;
  const VarNode* v_;
  int64_t min_, lanes_;
  int arch_;
  Expr align_cond_;
  std::vector<std::pair<const BufferNode*, std::vector<Expr>>> stored_, touched_;
};

class Vectorizer : public IRMutator {
 public:
  Vectorizer(bool disabled, int arch) : disabled_(disabled), arch_(arch) {}

  // A float4_e2m1 tensor's rows have an even length: the runtime takes such tensors only as
  // torch float4_e2m1fn_x2 (the logical last dimension is twice torch's). A symbolic last
  // dimension N is then 2 * N_half for the proofs of alignment (of the fp4 tensor and of
  // others sharing N).
  void assume_even_fp4_rows(const PrimFunc& f) {
    for (const auto& p : f->params) {
      if (!p.is_buffer() || !p.buffer->dtype.is_float4() || p.buffer->shape.empty()) continue;
      const Expr& n = p.buffer->shape.back();
      if (n->kind != NodeKind::kVar) continue;
      Var v = std::static_pointer_cast<const VarNode>(n.shared());
      if (!even_.insert(v.get()).second) continue;
      Var half = make_var(v->name + "_half", v->dtype, v->loc);
      az_.bind_bound(half, 0, int64_t{1} << 40);
      az_.bind_value(v, back::mul(half, int_imm(2, v->dtype)));
    }
  }

 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    back::bind_kernel_vars(az_, op);
    return IRMutator::mutate_KernelLaunch(s, op);
  }
  Stmt mutate_Let(const Stmt& s, const LetNode* op) override {
    az_.bind_value(op->var, op->value);
    return IRMutator::mutate_Let(s, op);
  }
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    az_.bind_range(op->loop_var, op->min, op->extent);
    Stmt out = IRMutator::mutate_For(s, op);
    if (op->for_kind != ForKind::kVectorized) return out;
    auto* loop = out.as<ForNode>();
    if (!disabled_ && as_const_int(loop->min) && as_const_int(loop->extent) && *as_const_int(loop->extent) > 1) {
      LoopVectorizer lv(az_, loop, arch_);
      Expr align_cond;
      if (Stmt v = lv.run(loop->body, &align_cond); v.defined())
        return align_cond ? if_then_else(align_cond, v, fallback(loop), s->loc) : v;
    }
    return fallback(loop);
  }

 private:
  // What a vectorized loop becomes when it cannot be vectorized whole (or only behind a
  // runtime alignment check): unrolled, except that a loop writing float4_e2m1 (stored in
  // whole bytes only) goes by pairs, `for p: <the body on 2 lanes>`, when that vectorizes.
  Stmt fallback(const ForNode* loop) {
    // (Also under tl.disable_vectorize: fp4 has no single-element store.)
    std::optional<back::PairSplit> split = writes_fp4(loop->body) ? back::split_into_pairs(loop) : std::nullopt;
    if (!split) return unrolled(loop);
    const DataType t = loop->loop_var->dtype;
    az_.bind_range(split->pair, int_imm(0, t), int_imm(split->pairs, t));
    az_.bind_range(split->lane, int_imm(0, t), int_imm(2, t));
    Stmt pair = make_for(split->lane, int_imm(0, t), int_imm(2, t), ForKind::kVectorized, split->body, loop->loc);
    LoopVectorizer lv(az_, pair.as<ForNode>(), arch_);
    Expr align_cond;
    Stmt vec = lv.run(pair.as<ForNode>()->body, &align_cond);
    if (!vec.defined() || align_cond) return unrolled(loop);
    return make_for(split->pair, int_imm(0, t), int_imm(split->pairs, t), ForKind::kUnrolled, vec, loop->loc);
  }

  static bool writes_fp4(const Stmt& body) {
    struct Finder : IRVisitor {
      bool found = false;
      void visit_BufferStore(const BufferStoreNode* st) override {
        found |= st->buffer->dtype.is_float4();
        IRVisitor::visit_BufferStore(st);
      }
    } f;
    f.visit(body);
    return f.found;
  }

  static Stmt unrolled(const ForNode* loop) {
    auto n = std::make_shared<ForNode>(*loop);
    n->for_kind = ForKind::kUnrolled;
    return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
  }

  arith::Analyzer az_;
  bool disabled_;
  int arch_;
  std::unordered_set<const VarNode*> even_;
};

PrimFunc vectorize_func(const PrimFunc& f, PassContext& ctx) {
  bool disabled = back::config_flag(ctx, "tl.disable_vectorize") || back::config_flag(ctx, "tir.disable_vectorize");
  Vectorizer v(disabled, ctx.target().arch);
  v.assume_even_fp4_rows(f);
  return with_body(f, v.mutate(f->body));
}

}  // namespace

Pass vectorize_pass() { return {"vectorize", vectorize_func}; }

}  // namespace tilec::passes
