// Pass flatten_buffers: multi-dimensional global accesses -> 1-D.
//
// Input:  lowered IR after vectorize: global parameters keep their logical indices (any
//         rank; a vector access has a Ramp in one index); local/shared buffers are 1-D.
// Output: every load/store/address-of of a global parameter has one index,
//           sum_d index_d * stride_d
//         with the parameter's strides (its explicit strides, else row-major over its shape;
//         symbolic allowed). A Ramp index stays a Ramp (base and stride scaled). The buffer
//         parameters are replaced by 1-D buffers of the same name and dtype; the originals,
//         each with the layout (logical index -> flat offset), are kept in param order in
//         attr kUnflattenedParamsAttr (the LaunchPlan needs their shapes). Index
//         arithmetic (per tensor) is int64 when any index, dimension or stride is int64,
//         or when the dimensions whose size and stride are both constants already make
//         the span 1 + sum_d (shape_d - 1) * |stride_d| reach 2^31 elements (a lower
//         bound of the span: symbolic dimensions add >= 0); otherwise int32. The 1-D
//         buffer's extent has the index type: build_launch_plan reads it from there, and
//         the runtime rejects arguments of int32-indexed tensors whose actual span
//         reaches 2^31 (runtime::kMaxInt32Span), so int32 offsets never wrap silently.
//         Config tl.config_index_bitwidth = 64 (TileLang's key; default 32) makes every
//         tensor parameter's offsets int64, for launches whose spans reach 2^31.
//         T.make_tensor buffers (global, at a kernel address: BufferNode::data) are flattened
//         the same way at their Allocate, which then declares the 1-D buffer (same address);
//         their offsets are int32 only when every dimension and stride is a constant and
//         the span fits (no launch check bounds a symbolic span), else int64.
// Runs after: vectorize (vector decisions use the logical indices). Runs once: a function
//         that already has the attr is returned unchanged.

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/runtime/launch_plan.h"

namespace tilec::passes {

using namespace ir;

namespace {

struct FlatInfo {
  Buffer flat;
  std::vector<Expr> strides;
  DataType index_type;
};

Expr to_type(const Expr& e, DataType t) {
  if (e->dtype.element_of() == t) return e;
  if (auto* c = as_const_int(e)) return int_imm(*c, t);
  if (auto* r = e.as<RampNode>()) return ramp(to_type(r->base, t), to_type(r->stride, t), r->lanes);
  return cast(t.with_lanes(e->dtype.lanes()), e);
}

// a + b where either may be a Ramp (lanes must agree).
Expr add_lanes(const Expr& a, const Expr& b) {
  auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
  if (ra && rb) {
    TILEC_ICHECK(ra->lanes == rb->lanes) << "ramps of different lanes in one access";
    return ramp(back::add(ra->base, rb->base), back::add(ra->stride, rb->stride), ra->lanes);
  }
  if (ra) return ramp(back::add(ra->base, b), ra->stride, ra->lanes);
  if (rb) return ramp(back::add(a, rb->base), rb->stride, rb->lanes);
  return back::add(a, b);
}

Expr scale_lanes(const Expr& a, const Expr& s) {
  if (auto* r = a.as<RampNode>()) return ramp(back::mul(r->base, s), back::mul(r->stride, s), r->lanes);
  TILEC_ICHECK(a->dtype.is_scalar()) << "vector index that is not a Ramp: flatten needs Ramp indices";
  return back::mul(a, s);
}

int64_t constant_span_lower_bound(const Buffer& b, const std::vector<Expr>& strides);
bool has_int64(const std::vector<Expr>& xs);

bool all_constant(const std::vector<Expr>& xs) {
  for (const auto& x : xs)
    if (!as_const_int(x)) return false;
  return true;
}

class Flattener : public IRMutator {
 public:
  std::unordered_map<const BufferNode*, FlatInfo> info;
  std::unordered_set<const BufferNode*> wide;  // buffers indexed with int64 somewhere (IndexWidth)

  Expr flat_index(const FlatInfo& fi, const std::vector<Expr>& indices) const {
    Expr acc;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr term = scale_lanes(to_type(indices[d], fi.index_type), fi.strides[d]);
      acc = acc ? add_lanes(acc, term) : term;
    }
    return acc ? acc : int_imm(0, fi.index_type);
  }

  // The 1-D form of a global buffer: strides, index type and flat buffer (same address).
  static FlatInfo flat_info(const Buffer& b, bool wide) {
    FlatInfo fi;
    fi.strides = back::strides_of(b);
    wide = wide || has_int64(fi.strides) || has_int64(b->shape) ||
           constant_span_lower_bound(b, fi.strides) > runtime::kMaxInt32Span;
    fi.index_type = wide ? Int64() : Int32();
    for (auto& s : fi.strides) s = to_type(s, fi.index_type);
    // Extent of the flat view: 1 + sum (shape_d - 1) * stride_d (= numel when row-major).
    Expr extent = int_imm(1, fi.index_type);
    for (int d = 0; d < b->ndim(); ++d)
      extent = back::add(extent, back::mul(back::sub(to_type(b->shape[d], fi.index_type), int_imm(1, fi.index_type)),
                                           fi.strides[d]));
    TILEC_ICHECK(extent->dtype == fi.index_type) << "flat extent of '" << b->name << "' lost the index type";
    fi.flat = b->data ? make_pointer_tensor(b->name, {extent}, b->dtype, {}, b->data, b->loc)
                      : make_buffer(b->name, {extent}, b->dtype, Scope::kGlobal, {}, b->loc);
    return fi;
  }

 protected:
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode* op) override {
    const Buffer& b = op->buffer;
    if (b->data && !info.count(b.get()))
      info[b.get()] = flat_info(b, !all_constant(b->shape) || !all_constant(b->strides) || wide.count(b.get()));
    return IRMutator::mutate_Allocate(s, op);
  }
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = info.find(b.get());
    return it == info.end() ? b : it->second.flat;
  }
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode* op) override {
    auto it = info.find(op->buffer.get());
    if (it == info.end()) return IRMutator::mutate_BufferLoad(e, op);
    bool changed = false;
    auto idx = mutate_all(op->indices, &changed);
    return buffer_load(it->second.flat, {flat_index(it->second, idx)}, e->loc);
  }
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) override {
    auto it = info.find(op->buffer.get());
    if (it == info.end()) return IRMutator::mutate_BufferStore(s, op);
    bool changed = false;
    auto idx = mutate_all(op->indices, &changed);
    return buffer_store(it->second.flat, {flat_index(it->second, idx)}, mutate(op->value), s->loc);
  }
};

// Lower bound of 1 + sum_d (shape_d - 1) * |stride_d| from the dimensions whose size and
// stride are constants; 0 for a tensor with a constant 0 dimension (nothing is accessed).
// Saturates at INT64_MAX.
int64_t constant_span_lower_bound(const Buffer& b, const std::vector<Expr>& strides) {
  std::vector<int64_t> sizes, steps;  // the constant dimensions (a constant empty one: any stride)
  for (int d = 0; d < b->ndim(); ++d) {
    auto* size = as_const_int(b->shape[d]);
    auto* stride = as_const_int(strides[d]);
    if (size && (stride || *size <= 0)) sizes.push_back(*size), steps.push_back(stride ? *stride : 0);
  }
  return runtime::tensor_span(static_cast<int>(sizes.size()), sizes.data(), steps.data());
}

bool has_int64(const std::vector<Expr>& xs) {
  for (const auto& x : xs)
    if (x->dtype.is_integer() && x->dtype.bits() == 64) return true;
  return false;
}

class IndexWidth : public IRMutator {
 public:
  std::unordered_set<const BufferNode*> wide;  // buffers indexed with int64 somewhere

 protected:
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode* op) override {
    if (has_int64(op->indices)) wide.insert(op->buffer.get());
    return IRMutator::mutate_BufferLoad(e, op);
  }
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) override {
    if (has_int64(op->indices)) wide.insert(op->buffer.get());
    return IRMutator::mutate_BufferStore(s, op);
  }
};

PrimFunc flatten(const PrimFunc& f, bool all_wide) {
  if (find_attr(f->attrs, kUnflattenedParamsAttr)) return f;
  IndexWidth width;
  width.mutate(f->body);
  Flattener flattener;
  flattener.wide = width.wide;
  LayoutMap originals;
  std::vector<Param> params;
  for (const auto& p : f->params) {
    if (!p.is_buffer()) {
      params.push_back(p);
      continue;
    }
    const Buffer& b = p.buffer;
    FlatInfo fi = Flattener::flat_info(b, all_wide || width.wide.count(b.get()) > 0);
    std::vector<Var> vars;
    std::vector<Expr> var_exprs;
    for (int d = 0; d < b->ndim(); ++d) {
      vars.push_back(make_var("i" + std::to_string(d), fi.index_type));
      var_exprs.push_back(vars.back());
    }
    Layout layout = make_layout(b->shape, vars, {flattener.flat_index(fi, var_exprs)});
    originals.emplace_back(b, layout);
    params.push_back(Param{nullptr, fi.flat});
    flattener.info[b.get()] = std::move(fi);
  }
  Stmt body = flattener.mutate(f->body);
  AttrMap attrs = f->attrs;
  attrs.emplace_back(kUnflattenedParamsAttr, originals);
  return make_prim_func(f->name, std::move(params), body, std::move(attrs), f->loc);
}

}  // namespace

Pass flatten_buffers_pass() {
  return {"flatten_buffers", [](const PrimFunc& f, PassContext& ctx) {
            const int64_t bits = ctx.get_int("tl.config_index_bitwidth");
            TILEC_USER_CHECK(bits == 32 || bits == 64, f->loc, "pass 32 (the default) or 64")
                << "tl.config_index_bitwidth must be 32 or 64, got " << bits;
            return flatten(f, bits == 64);
          }};
}

}  // namespace tilec::passes
