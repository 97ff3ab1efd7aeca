// Helpers shared by the elementwise tile ops (see op_util.h).
#include "ops/op_util.h"

#include "layout/digit_form.h"
#include "ops/parallel_loop.h"
#include "tilec/passes/cuda_back_passes.h"

namespace tilec::ops {

using namespace ir;

std::vector<int64_t> nonunit_extents(const BufferRegion& r, const std::string& what, const SourceLoc& loc) {
  std::vector<int64_t> out;
  for (const auto& rg : r.region) {
    auto* c = as_const_int(rg.extent);
    TILEC_USER_CHECK(c && *c > 0, loc, "tile regions need constant extents (block sizes)")
        << what << ": the region of '" << r.buffer->name << "' has a non-constant extent";
    if (*c != 1) out.push_back(*c);
  }
  return out;
}

RegionLoop region_loop(const BufferRegion& r, const std::string& what, const SourceLoc& loc) {
  RegionLoop l;
  static const char* kNames[] = {"i", "j", "k", "l", "m", "n"};
  for (auto e : nonunit_extents(r, what, loc)) {
    size_t n = l.vars.size();
    l.vars.push_back(make_var(n < 6 ? kNames[n] : "i" + std::to_string(n), DataType::Int(32), loc));
    l.extents.push_back(e);
  }
  return l;
}

void ensure_nonempty(RegionLoop& loop) {
  if (!loop.vars.empty()) return;
  loop.vars.push_back(make_var("i"));
  loop.extents.push_back(1);
}

std::vector<Expr> region_indices(const BufferRegion& r, const std::vector<Var>& vars) {
  std::vector<Expr> idx;
  size_t k = 0;
  for (const auto& rg : r.region) {
    if (is_one(rg.extent)) {
      idx.push_back(rg.min);
    } else {
      TILEC_ICHECK(k < vars.size()) << "region has more non-unit dimensions than loop variables";
      idx.push_back(layout::idx_add(rg.min, vars[k++]));
    }
  }
  return idx;
}

bool region_is_full(const BufferRegion& r) {
  for (size_t d = 0; d < r.region.size(); ++d)
    if (!is_zero(r.region[d].min) || !as_const_int(r.region[d].extent) || !as_const_int(r.buffer->shape[d]) ||
        *as_const_int(r.region[d].extent) != *as_const_int(r.buffer->shape[d]))
      return false;
  return true;
}

bool has_const_shape(const Buffer& b) {
  for (const auto& e : b->shape)
    if (!as_const_int(e)) return false;
  return true;
}

bool has_wgmma(const target::Target& t) { return t.has_wgmma(); }

std::vector<int64_t> const_shape(const Buffer& b) {
  std::vector<int64_t> s;
  for (const auto& e : b->shape) {
    auto* c = as_const_int(e);
    TILEC_USER_CHECK(c, b->loc, "on-chip buffers need constant extents") << "'" << b->name << "' has a symbolic shape";
    s.push_back(*c);
  }
  return s;
}

Expr typed_const(double v, DataType t) {
  if (t.is_float()) return float_imm(v, t);
  if (t.is_bool()) return bool_imm(v != 0);
  return int_imm(static_cast<int64_t>(v), t);
}

std::string extents_str(const std::vector<int64_t>& e) {
  std::string s = "(";
  for (size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + std::to_string(e[i]);
  return s + (e.size() == 1 ? ",)" : ")");
}

Layout loop_layout_for_fragment(const std::vector<Var>& vars, const std::vector<int64_t>& extents, const Buffer& frag,
                                const std::vector<Expr>& indices, const Layout& layout) {
  ParallelNest nest;
  nest.vars = vars;
  nest.extents = extents;
  nest.body = buffer_store(frag, indices, typed_const(0, frag->dtype));
  auto accesses = collect_accesses(nest);
  if (accesses.empty()) return nullptr;
  if (extents.size() == 1 && extents[0] == 1) {
    // A scalar region: the single iteration runs on the element's holders.
    bool uses_var = false;
    for (int d : accesses[0].loop_dim) uses_var |= d >= 0;
    if (!uses_var) {
      auto f = layout::fit_digit_form(layout);
      if (!f) return nullptr;
      // Shape (1,): keep the holders of element `indices` only when it does not depend
      // on which element (else the owner is dynamic).
      for (const auto& g : f->digits)
        if (g.on_thread && g.dim != layout::kRepDim) return nullptr;
      layout::DigitForm one;
      one.shape = {1};
      one.replicate = f->replicate;
      for (const auto& g : f->digits)
        if (g.dim == layout::kRepDim) one.digits.push_back(g);
      return layout::to_layout(one);
    }
  }
  return loop_layout_from_fragment(nest, accesses[0], layout);
}

Stmt mark_disjoint_nest(const Stmt& s) {
  auto* f = s.as<ForNode>();
  if (!f) return s;
  auto n = std::make_shared<ForNode>(*f);
  n->body = mark_disjoint_nest(f->body);
  if (!find_attr(n->annotations, passes::kDisjointIterationsKey))
    n->annotations.emplace_back(passes::kDisjointIterationsKey, true);
  return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
}

}  // namespace tilec::ops
