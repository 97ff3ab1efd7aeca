// Argument checks of the built-in tile ops, run when a tile op is made (make_tile_op), so a
// shape mismatch is reported at the user's line, before any pass runs.
//
//  copy / tma_copy  an all-index side (A[i, j]: every extent 1) takes its extents from the
//                   other side, aligned at the last dimension; then the two shapes, unit
//                   dimensions dropped, must be equal where they are constant.
//  gemm             A is (M, K) ((K, M) with transpose_A), B is (K, N) ((N, K) with
//                   transpose_B), C is (M, N), leading unit dimensions ignored; constant M, N,
//                   K must agree.
//  gemm_sp          src/ir/gemm_sp_checks.cc (the 2:4 compressed shapes and dtypes).
//  fill             the value becomes the buffer's dtype (an immediate is rewritten, anything
//                   else is cast).
//  reduce_*         dim in [-rank, rank); out has the input's shape without dim (or with a 1
//                   there).
//  cumsum, atomic_* source and destination shapes agree.
//  barrier_init     a barrier buffer with one arrive count per barrier.
//
// Symbolic extents are not compared (layout inference and lowering see them later).
#include "ir/tile_op_checks.h"

#include <optional>
#include <sstream>

#include "tilec/ir/printer.h"

namespace tilec::ir {

bool attr_is_true(const AttrMap& attrs, const char* key) {
  auto* v = find_attr(attrs, key);
  return v && std::holds_alternative<bool>(*v) && std::get<bool>(*v);
}

namespace {

using Extents = std::vector<Expr>;

Extents region_extents(const BufferRegion& r) {
  Extents out;
  for (const auto& rg : r.region) out.push_back(rg.extent);
  return out;
}

std::optional<int64_t> const_of(const Expr& e) {
  if (auto* p = as_const_int(e)) return *p;
  return std::nullopt;
}

bool all_unit(const Extents& e) {
  for (const auto& x : e)
    if (!is_one(x)) return false;
  return true;
}

Extents drop_units(const Extents& e) {
  Extents out;
  for (const auto& x : e)
    if (!is_one(x)) out.push_back(x);
  return out;
}

std::string shape_str(const Extents& e) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < e.size(); ++i) {
    if (i) os << ", ";
    if (auto c = const_of(e[i])) os << *c;
    else os << script(e[i]);
  }
  os << (e.size() == 1 ? ",)" : ")");
  return os.str();
}

// Equal when every pair is constant and equal; unknown (true) when a pair is symbolic.
bool shapes_may_match(const Extents& a, const Extents& b) {
  if (a.size() != b.size()) {
    // Different ranks only mismatch for sure when everything is constant.
    for (const auto& x : a)
      if (!const_of(x)) return true;
    for (const auto& x : b)
      if (!const_of(x)) return true;
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = const_of(a[i]), y = const_of(b[i]);
    if (x && y && *x != *y) return false;
  }
  return true;
}

// The other side's extents, fitted to `point` (its rank), right-aligned.
BufferRegion expand_point(const BufferRegion& point, const Extents& other, const std::string& op,
                          const SourceLoc& loc) {
  Extents ext = other;
  size_t n = point.region.size();
  while (ext.size() > n && is_one(ext.front())) ext.erase(ext.begin());
  TILEC_USER_CHECK(ext.size() <= n, loc,
                   "index every dimension with a slice (A[i:i + m, j:j + n]) to give the region explicitly")
      << "T." << op << ": '" << point.buffer->name << "' has " << n << " dimensions, too few for a copy of shape "
      << shape_str(other);
  BufferRegion out = point;
  size_t pad = n - ext.size();
  for (size_t i = 0; i < ext.size(); ++i) out.region[pad + i].extent = ext[i];
  return out;
}

std::string side_name(const BufferRegion& r) { return "'" + r.buffer->name + "'"; }

void check_copy(const std::string& op, std::vector<TileArg>& args, const SourceLoc& loc) {
  auto& src = std::get<BufferRegion>(args[0]);
  auto& dst = std::get<BufferRegion>(args[1]);
  Extents se = region_extents(src), de = region_extents(dst);
  bool src_point = all_unit(se), dst_point = all_unit(de);
  if (src_point && !dst_point) src = expand_point(src, de, op, loc);
  else if (dst_point && !src_point) dst = expand_point(dst, se, op, loc);
  se = drop_units(region_extents(src));
  de = drop_units(region_extents(dst));
  TILEC_USER_CHECK(shapes_may_match(se, de), loc, "copy between regions of the same shape (unit dimensions aside)")
      << "T." << op << ": the source " << side_name(src) << " has shape " << shape_str(region_extents(src))
      << " but the destination " << side_name(dst) << " has shape " << shape_str(region_extents(dst));
}

// The last two extents after dropping leading unit dimensions; nullopt when fewer remain.
std::optional<std::pair<Expr, Expr>> matrix_shape(const BufferRegion& r) {
  Extents e = region_extents(r);
  while (e.size() > 2 && is_one(e.front())) e.erase(e.begin());
  if (e.size() != 2) return std::nullopt;
  return std::make_pair(e[0], e[1]);
}

bool may_equal(const Expr& a, const Expr& b) {
  auto x = const_of(a), y = const_of(b);
  return !(x && y && *x != *y);
}

std::string num(const Expr& e) {
  auto c = const_of(e);
  return c ? std::to_string(*c) : script(e);
}

void check_gemm(std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc) {
  const auto& A = std::get<BufferRegion>(args[0]);
  const auto& B = std::get<BufferRegion>(args[1]);
  const auto& C = std::get<BufferRegion>(args[2]);
  bool ta = attr_is_true(attrs, "transpose_A"), tb = attr_is_true(attrs, "transpose_B");
  for (const auto* r : {&A, &B, &C}) {
    TILEC_USER_CHECK(matrix_shape(*r).has_value(), loc, "pass 2-D tiles (leading dimensions of extent 1 are allowed)")
        << "T.gemm: " << side_name(*r) << " has shape " << shape_str(region_extents(*r)) << ", not a matrix";
  }
  auto [a0, a1] = *matrix_shape(A);
  auto [b0, b1] = *matrix_shape(B);
  auto [c0, c1] = *matrix_shape(C);
  Expr M = ta ? a1 : a0, Ka = ta ? a0 : a1;
  Expr Kb = tb ? b1 : b0, N = tb ? b0 : b1;
  const char* a_form = ta ? "(K, M) with transpose_A=True" : "(M, K)";
  const char* b_form = tb ? "(N, K) with transpose_B=True" : "(K, N)";
  TILEC_USER_CHECK(may_equal(Ka, Kb), loc, std::string("A is ") + a_form + " and B is " + b_form)
      << "T.gemm: the K extents differ: " << side_name(A) << " has K = " << num(Ka) << " but " << side_name(B)
      << " has K = " << num(Kb);
  TILEC_USER_CHECK(may_equal(M, c0), loc, std::string("A is ") + a_form + " and C is (M, N)")
      << "T.gemm: the M extents differ: " << side_name(A) << " has M = " << num(M) << " but " << side_name(C)
      << " has M = " << num(c0);
  TILEC_USER_CHECK(may_equal(N, c1), loc, std::string("B is ") + b_form + " and C is (M, N)")
      << "T.gemm: the N extents differ: " << side_name(B) << " has N = " << num(N) << " but " << side_name(C)
      << " has N = " << num(c1);
}

void check_fill(std::vector<TileArg>& args, const AttrMap&, const SourceLoc& loc) {
  const auto& dst = std::get<BufferRegion>(args[0]);
  Expr& value = std::get<Expr>(args[1]);
  DataType t = dst.buffer->dtype;
  if (value->dtype == t) return;
  if (auto* i = value.as<IntImmNode>()) {
    if (t.is_float()) value = float_imm(static_cast<double>(i->value), t, value->loc);
    else if (t.is_integer() || t.is_bool()) value = int_imm(i->value, t, value->loc);
    else value = cast(t, value, loc);
  } else if (auto* f = value.as<FloatImmNode>(); f && t.is_float()) {
    value = float_imm(f->value, t, value->loc);
  } else {
    value = cast(t, value, loc);
  }
}

void check_reduce(const std::string& op, std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc) {
  const auto& in = std::get<BufferRegion>(args[0]);
  const auto& out = std::get<BufferRegion>(args[1]);
  int64_t rank = static_cast<int64_t>(in.region.size());
  int64_t dim = -1;
  if (auto* v = find_attr(attrs, "dim"); v && std::holds_alternative<int64_t>(*v)) dim = std::get<int64_t>(*v);
  TILEC_USER_CHECK(dim >= -rank && dim < rank, loc, "dim counts from 0 (or from the end with -1)")
      << "T." << op << ": dim=" << dim << " is out of range for " << side_name(in) << " of " << rank
      << " dimensions";
  size_t d = static_cast<size_t>(dim < 0 ? dim + rank : dim);
  Extents ie = region_extents(in), oe = region_extents(out);
  Extents dropped = ie, kept = ie;
  dropped.erase(dropped.begin() + static_cast<long>(d));
  kept[d] = int_imm(1, ie[d]->dtype);
  bool ok = shapes_may_match(drop_units(dropped), drop_units(oe)) || shapes_may_match(kept, oe);
  TILEC_USER_CHECK(ok, loc, "the output has the input's shape without the reduced dimension")
      << "T." << op << ": reducing " << side_name(in) << " of shape " << shape_str(ie) << " over dim " << d
      << " gives shape " << shape_str(dropped) << ", but " << side_name(out) << " has shape " << shape_str(oe);
}

void check_same_shape(const std::string& op, const BufferRegion& a, const BufferRegion& b, const SourceLoc& loc) {
  Extents ae = region_extents(a), be = region_extents(b);
  TILEC_USER_CHECK(shapes_may_match(drop_units(ae), drop_units(be)), loc, "both regions need the same shape")
      << "T." << op << ": " << side_name(a) << " has shape " << shape_str(ae) << " but " << side_name(b)
      << " has shape " << shape_str(be);
}

void check_barrier_init(std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc) {
  const auto& r = std::get<BufferRegion>(args[0]);
  TILEC_USER_CHECK(r.buffer->scope == Scope::kBarrier, loc, "allocate barriers with T.alloc_barrier(arrive_count)")
      << "T.barrier_init: '" << r.buffer->name << "' is not a barrier buffer";
  auto* v = find_attr(attrs, "arrive_count");
  TILEC_USER_CHECK(v && std::holds_alternative<std::vector<int64_t>>(*v), loc, "arrive_count=[n, ...]")
      << "T.barrier_init needs arrive_count";
  const auto& counts = std::get<std::vector<int64_t>>(*v);
  for (auto c : counts)
    TILEC_USER_CHECK(c > 0, loc, "") << "T.alloc_barrier: arrive counts must be positive, got " << c;
  auto n = r.buffer->ndim() == 1 ? const_of(r.buffer->shape[0]) : std::nullopt;
  TILEC_USER_CHECK(n && *n == static_cast<int64_t>(counts.size()), loc, "give one arrive count per barrier")
      << "T.barrier_init: '" << r.buffer->name << "' holds " << (n ? std::to_string(*n) : "?") << " barriers but "
      << counts.size() << " arrive counts were given";
}

}  // namespace

void check_region_ranks(const std::string& op, const std::vector<TileArg>& args, const SourceLoc& loc) {
  for (const auto& a : args) {
    const auto* r = std::get_if<BufferRegion>(&a);
    if (!r) continue;
    TILEC_USER_CHECK(static_cast<int>(r->region.size()) == r->buffer->ndim(), loc,
                     "give one index or slice per dimension")
        << "T." << op << ": buffer '" << r->buffer->name << "' has " << r->buffer->ndim()
        << " dimensions but is indexed with " << r->region.size();
    for (const auto& rg : r->region) {
      TILEC_USER_CHECK(rg.min->dtype.is_integer() && rg.extent->dtype.is_integer(), loc, "indices are integers")
          << "T." << op << ": buffer '" << r->buffer->name << "' is indexed with a non-integer value";
      auto e = const_of(rg.extent);
      TILEC_USER_CHECK(!e || *e > 0, loc, "a slice lo:hi needs hi > lo")
          << "T." << op << ": the region of '" << r->buffer->name << "' has an empty or negative extent " << *e;
    }
  }
}

void attach_builtin_checks(std::vector<TileOpSchema>& schemas) {
  for (auto& s : schemas) {
    const std::string name = s.name;
    if (name == "copy" || name == "tma_copy") {
      s.check = [name](std::vector<TileArg>& args, const AttrMap&, const SourceLoc& loc) {
        check_copy(name, args, loc);
      };
    } else if (name == "gemm") {
      s.check = check_gemm;
    } else if (name == "gemm_sp") {
      s.check = check_gemm_sp;
    } else if (name == "fill") {
      s.check = check_fill;
    } else if (name.rfind("reduce_", 0) == 0) {
      s.check = [name](std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc) {
        check_reduce(name, args, attrs, loc);
      };
    } else if (name == "cumsum") {
      s.check = [](std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc) {
        const auto& src = std::get<BufferRegion>(args[0]);
        int64_t rank = static_cast<int64_t>(src.region.size());
        int64_t dim = 0;
        if (auto* v = find_attr(attrs, "dim"); v && std::holds_alternative<int64_t>(*v)) dim = std::get<int64_t>(*v);
        TILEC_USER_CHECK(dim >= -rank && dim < rank, loc, "dim counts from 0 (or from the end with -1)")
            << "T.cumsum: dim=" << dim << " is out of range for '" << src.buffer->name << "' of " << rank
            << " dimensions";
        check_same_shape("cumsum", src, std::get<BufferRegion>(args[1]), loc);
      };
    } else if (name.rfind("atomic_", 0) == 0) {
      s.check = [name](std::vector<TileArg>& args, const AttrMap&, const SourceLoc& loc) {
        if (const auto* v = std::get_if<BufferRegion>(&args[1]))
          check_same_shape(name, std::get<BufferRegion>(args[0]), *v, loc);
      };
    } else if (name == "barrier_init") {
      s.check = check_barrier_init;
    }
  }
}

}  // namespace tilec::ir
