// CPU target: tile ops on whole regions, one function per op in a table keyed by the op's
// name. A region is evaluated to a box (min and extent per dimension); two regions are
// paired element by element in row-major order once their extents other than 1 agree
// (TileLang's pairing of the non-unit dimensions). Reads complete before writes, so a
// tile op sees the tile as it was before it (a copy within one buffer included).
//
//   copy / async_copy   elementwise, cast to the destination dtype (async_copy's guard
//                       false: zeros); global accesses outside the tensor read 0 / write
//                       nothing (as on the GPU)
//   fill                the value, cast to the buffer's dtype
//   gemm                C (+)= op(A) op(B), accumulated in float64 and rounded once to C's
//                       dtype; leading dimensions of extent 1 are ignored; the policy,
//                       k_pack, wg_wait and instruction keywords say how, not what
//   gemm_sp             the same on A rebuilt from its 2:4 compressed values and metadata
//                       (src/ir/gemm_sp_format.h)
//   reduce_*            along `dim` into the output (clear=False combines with it), in
//                       float64, rounded once
//   cumsum              inclusive prefix sums along `dim` (from the end with reverse)
//   atomic_add/max/min  elementwise read-modify-write
// tma_copy and barrier_init belong to thread-level programs: "not supported on target=cpu".
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "ir/gemm_sp_format.h"
#include "target/cpu/machine.h"

namespace tilec::cpu {

namespace {

struct Box {
  Buffer buffer;
  std::vector<int64_t> min, ext;
  std::vector<bool> unit;  // the extent is the constant 1 in the IR
  SourceLoc loc;
  int64_t count() const {
    int64_t n = 1;
    for (auto e : ext) n *= e;
    return n;
  }
  std::vector<int64_t> nonunit() const {
    std::vector<int64_t> out;
    for (size_t d = 0; d < ext.size(); ++d)
      if (!unit[d]) out.push_back(ext[d]);
    return out;
  }
};

Box box_of(Machine& m, const BufferRegion& r) {
  Box b;
  b.buffer = r.buffer;
  b.loc = r.loc;
  for (const Range& rg : r.region) {
    b.min.push_back(m.eval_int(rg.min));
    b.ext.push_back(m.eval_int(rg.extent));
    b.unit.push_back(is_one(rg.extent));
  }
  return b;
}

// Calls fn(index) for every element of the box in row-major order.
void for_each_index(const Box& b, const std::function<void(const std::vector<int64_t>&)>& fn) {
  if (b.count() <= 0) return;
  std::vector<int64_t> idx = b.min;
  size_t n = idx.size();
  while (true) {
    fn(idx);
    size_t d = n;
    while (d > 0) {
      --d;
      if (++idx[d] < b.min[d] + b.ext[d]) break;
      idx[d] = b.min[d];
      if (d == 0) return;
    }
    if (n == 0) return;
  }
}

std::vector<Value> read_box(Machine& m, const Box& b, const SourceLoc& loc) {
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(b.count(), 0)));
  for_each_index(b, [&](const std::vector<int64_t>& i) { out.push_back(m.load(b.buffer, i, loc)); });
  return out;
}

void write_box(Machine& m, const Box& b, const std::vector<Value>& vals, const SourceLoc& loc) {
  size_t k = 0;
  for_each_index(b, [&](const std::vector<int64_t>& i) { m.store(b.buffer, i, vals[k++], loc); });
}

std::string extents_str(const std::vector<int64_t>& e) { return index_str(e); }

// The two boxes cover the same tile (extents other than 1 equal, in order).
void check_paired(Machine& m, const std::string& op, const Box& a, const Box& b, const SourceLoc& loc) {
  auto strip = [](std::vector<int64_t> e) {
    e.erase(std::remove(e.begin(), e.end(), 1), e.end());
    return e;
  };
  std::vector<int64_t> ea = strip(a.ext), eb = strip(b.ext);
  TILEC_USER_CHECK(ea == eb, loc, "make both regions cover the same tile (extents of 1 are ignored)")
      << "target=cpu: kernel '" << m.kernel_name() << "': T." << op << ": the region of '" << a.buffer->name
      << "' has extents " << extents_str(a.ext) << " but the region of '" << b.buffer->name << "' has "
      << extents_str(b.ext);
}

void convert_all(std::vector<Value>& vals, DataType from, DataType to) {
  if (from == to) return;
  for (auto& v : vals) v = convert(v, from, to);
}

void op_copy(Machine& m, const TileOpNode* op) {
  Box src = box_of(m, region_arg(*op, 0)), dst = box_of(m, region_arg(*op, 1));
  check_paired(m, op->op, src, dst, op->loc);
  std::vector<Value> vals;
  bool zero = false;
  if (op->op == "async_copy") {
    if (auto* g = find_attr(op->attrs, "guard"); g && std::holds_alternative<Expr>(*g))
      zero = !m.eval_bool(std::get<Expr>(*g));
  }
  if (zero) vals.assign(static_cast<size_t>(dst.count()), from_int(dst.buffer->dtype, 0));
  else vals = read_box(m, src, op->loc);
  if (!zero) convert_all(vals, src.buffer->dtype, dst.buffer->dtype);
  write_box(m, dst, vals, op->loc);
}

void op_fill(Machine& m, const TileOpNode* op) {
  Box dst = box_of(m, region_arg(*op, 0));
  const Expr& e = expr_arg(*op, 1);
  Value v = convert(m.eval(e), e->dtype, dst.buffer->dtype);
  for_each_index(dst, [&](const std::vector<int64_t>& i) { m.store(dst.buffer, i, v, op->loc); });
}

// A 2-D view of a gemm operand: the last two dimensions of its region, the leading ones of
// extent 1.
struct Matrix {
  Box box;
  int64_t rows = 0, cols = 0;
  std::vector<double> data;  // row-major rows x cols
  double at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
};

Matrix matrix_of(Machine& m, const TileOpNode* op, size_t arg, const char* name) {
  Matrix mat;
  mat.box = box_of(m, region_arg(*op, arg));
  size_t n = mat.box.ext.size();
  TILEC_USER_CHECK(n >= 2, op->loc, "pass 2-D tiles") << "T.gemm: " << name << " is not a matrix";
  for (size_t d = 0; d + 2 < n; ++d)
    TILEC_USER_CHECK(mat.box.ext[d] == 1, op->loc, "pass 2-D tiles (leading dimensions of extent 1 are allowed)")
        << "target=cpu: T.gemm: " << name << " ('" << mat.box.buffer->name << "') has extents "
        << extents_str(mat.box.ext) << ", not a matrix";
  mat.rows = mat.box.ext[n - 2];
  mat.cols = mat.box.ext[n - 1];
  DataType t = mat.box.buffer->dtype;
  for (const Value& v : read_box(m, mat.box, op->loc)) mat.data.push_back(as_double(t, v));
  return mat;
}

// C (+)= A @ op(B) with A given as (M, K) values, row-major; `op` names what is written.
void gemm_accumulate(Machine& m, const TileOpNode* op, const std::vector<double>& a, int64_t M, int64_t K,
                     const Matrix& B, bool tb, const Matrix& C) {
  int64_t Kb = tb ? B.cols : B.rows, N = tb ? B.rows : B.cols;
  TILEC_USER_CHECK(K == Kb && M == C.rows && N == C.cols, op->loc, "A is (M, K), B is (K, N), C is (M, N)")
      << "target=cpu: kernel '" << m.kernel_name() << "': T." << op->op << " shapes do not fit: A gives M=" << M
      << ", K=" << K << ", B gives K=" << Kb << ", N=" << N << ", C is " << C.rows << " x " << C.cols;
  const Expr clear_if = attr_expr(*op, "clear_if");
  const bool clear = attr_bool(*op, "clear_accum") || (clear_if && m.eval_bool(clear_if));
  DataType ct = C.box.buffer->dtype;
  std::vector<Value> out(C.data.size());
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = clear ? 0.0 : C.at(i, j);
      for (int64_t k = 0; k < K; ++k) acc += a[static_cast<size_t>(i * K + k)] * (tb ? B.at(j, k) : B.at(k, j));
      out[static_cast<size_t>(i * N + j)] = from_double(ct, acc);
    }
  }
  write_box(m, C.box, out, op->loc);
}

void op_gemm(Machine& m, const TileOpNode* op) {
  bool ta = attr_bool(*op, "transpose_A"), tb = attr_bool(*op, "transpose_B");
  Matrix A = matrix_of(m, op, 0, "A"), B = matrix_of(m, op, 1, "B"), C = matrix_of(m, op, 2, "C");
  int64_t M = ta ? A.cols : A.rows, K = ta ? A.rows : A.cols;
  std::vector<double> a(static_cast<size_t>(M * K));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) a[static_cast<size_t>(i * K + k)] = ta ? A.at(k, i) : A.at(i, k);
  gemm_accumulate(m, op, a, M, K, B, tb, C);
}

// T.gemm_sp: dense A rebuilt from the 2:4 values and metadata (src/ir/gemm_sp_format.h), then
// the gemm. The argument check (check_gemm_sp) ran when the op was made.
void op_gemm_sp(Machine& m, const TileOpNode* op) {
  Matrix A = matrix_of(m, op, 0, "A_sparse"), E = matrix_of(m, op, 1, "E");
  Matrix B = matrix_of(m, op, 2, "B"), C = matrix_of(m, op, 3, "C");
  const int64_t M = A.rows, K = A.cols * sparse24::kGroup / sparse24::kKept;
  const int64_t per_meta = sparse24::groups_per_meta(E.box.buffer->dtype);
  std::vector<double> a(static_cast<size_t>(M * K), 0.0);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t g = 0; g < K / sparse24::kGroup; ++g) {
      const auto word = static_cast<int64_t>(E.at(i, g / per_meta));
      const int64_t bits = (word >> (sparse24::kBitsPerGroup * (g % per_meta))) & 15;
      const int64_t pos[sparse24::kKept] = {bits & 3, bits >> 2};
      for (int64_t v = sparse24::kKept - 1; v >= 0; --v)  // a repeated position keeps the first value
        a[static_cast<size_t>(i * K + g * sparse24::kGroup + pos[v])] = A.at(i, g * sparse24::kKept + v);
    }
  }
  gemm_accumulate(m, op, a, M, K, B, attr_bool(*op, "transpose_B"), C);
}

struct ReduceKind {
  double init;
  double (*combine)(double, double);
  bool abs;
};

const std::map<std::string, ReduceKind>& reduce_kinds() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  static const std::map<std::string, ReduceKind> table = {
      {"reduce_sum", {0.0, [](double a, double b) { return a + b; }, false}},
      {"reduce_abssum", {0.0, [](double a, double b) { return a + b; }, true}},
      {"reduce_max", {-inf, [](double a, double b) { return std::fmax(a, b); }, false}},
      {"reduce_min", {inf, [](double a, double b) { return std::fmin(a, b); }, false}},
      {"reduce_absmax", {0.0, [](double a, double b) { return std::fmax(a, b); }, true}},
  };
  return table;
}

void op_reduce(Machine& m, const TileOpNode* op) {
  const ReduceKind& kind = reduce_kinds().at(op->op);
  Box in = box_of(m, region_arg(*op, 0)), out = box_of(m, region_arg(*op, 1));
  int64_t rank = static_cast<int64_t>(in.ext.size());
  int64_t dim = attr_int(*op, "dim", -1);
  if (dim < 0) dim += rank;
  bool clear = attr_bool(*op, "clear", true);
  // nan_propagate: a NaN operand makes max / min NaN (fmax / fmin ignore it).
  double (*combine)(double, double) = kind.combine;
  if (attr_bool(*op, "nan_propagate", false)) {
    combine = op->op == "reduce_min" ? +[](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::fmin(a, b); }
                                     : +[](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::fmax(a, b); };
  }
  // The input's extents without dim, row-major, pair with the output's elements.
  int64_t inner = 1, outer = 1, n = in.ext[static_cast<size_t>(dim)];
  for (int64_t d = 0; d < rank; ++d) {
    if (d < dim) outer *= in.ext[static_cast<size_t>(d)];
    if (d > dim) inner *= in.ext[static_cast<size_t>(d)];
  }
  TILEC_USER_CHECK(outer * inner == out.count(), op->loc, "the output has the input's shape without dim")
      << "target=cpu: kernel '" << m.kernel_name() << "': T." << op->op << ": reducing '" << in.buffer->name
      << "' of extents " << extents_str(in.ext) << " over dim " << dim << " gives " << outer * inner
      << " values, but '" << out.buffer->name << "' has extents " << extents_str(out.ext);
  DataType it = in.buffer->dtype, ot = out.buffer->dtype;
  std::vector<Value> vals = read_box(m, in, op->loc);
  std::vector<Value> old = clear ? std::vector<Value>{} : read_box(m, out, op->loc);
  std::vector<Value> res(static_cast<size_t>(outer * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = kind.init;
      for (int64_t k = 0; k < n; ++k) {
        double x = as_double(it, vals[static_cast<size_t>((o * n + k) * inner + i)]);
        acc = combine(acc, kind.abs ? std::fabs(x) : x);
      }
      size_t r = static_cast<size_t>(o * inner + i);
      if (!clear) acc = combine(as_double(ot, old[r]), acc);
      res[r] = from_double(ot, acc);
    }
  }
  write_box(m, out, res, op->loc);
}

void op_cumsum(Machine& m, const TileOpNode* op) {
  Box src = box_of(m, region_arg(*op, 0)), dst = box_of(m, region_arg(*op, 1));
  check_paired(m, "cumsum", src, dst, op->loc);
  int64_t rank = static_cast<int64_t>(src.ext.size());
  int64_t dim = attr_int(*op, "dim", 0);
  if (dim < 0) dim += rank;
  bool reverse = attr_bool(*op, "reverse");
  int64_t inner = 1, outer = 1, n = src.ext[static_cast<size_t>(dim)];
  for (int64_t d = 0; d < rank; ++d) {
    if (d < dim) outer *= src.ext[static_cast<size_t>(d)];
    if (d > dim) inner *= src.ext[static_cast<size_t>(d)];
  }
  DataType st = src.buffer->dtype, dt = dst.buffer->dtype;
  const bool max = attr_string(*op, "op", "sum") == "max";  // T.cummax
  std::vector<Value> vals = read_box(m, src, op->loc), res(vals.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = max ? -HUGE_VAL : 0.0;
      for (int64_t s = 0; s < n; ++s) {
        int64_t k = reverse ? n - 1 - s : s;
        size_t at = static_cast<size_t>((o * n + k) * inner + i);
        const double v = as_double(st, vals[at]);
        acc = max ? std::fmax(acc, v) : acc + v;  // NaN-ignoring, as tl::max
        res[at] = from_double(dt, acc);
      }
    }
  }
  write_box(m, dst, res, op->loc);
}

void op_atomic(Machine& m, const TileOpNode* op) {
  Box dst = box_of(m, region_arg(*op, 0));
  DataType t = dst.buffer->dtype;
  std::vector<Value> vals;
  if (const auto* r = std::get_if<BufferRegion>(&op->args[1])) {
    Box src = box_of(m, *r);
    check_paired(m, op->op, dst, src, op->loc);
    vals = read_box(m, src, op->loc);
    convert_all(vals, src.buffer->dtype, t);
  } else {
    const Expr& e = expr_arg(*op, 1);
    vals.assign(static_cast<size_t>(dst.count()), convert(m.eval(e), e->dtype, t));
  }
  Storage& s = m.storage(dst.buffer, op->loc);
  size_t k = 0;
  for_each_index(dst, [&](const std::vector<int64_t>& idx) {
    const Value& v = vals[k++];
    auto off = m.offset(s, idx, Access::kAtomic, op->loc);
    if (!off) return;
    Value old = s.get(*off);
    if (t.is_float()) {
      double a = old.f, b = v.f;
      double r = op->op == "atomic_add" ? a + b : op->op == "atomic_max" ? std::fmax(a, b) : std::fmin(a, b);
      s.set(*off, Value{round_float(t, r), 0});
    } else {
      int64_t r = op->op == "atomic_add" ? old.i + v.i : op->op == "atomic_max" ? std::max(old.i, v.i)
                                                                                 : std::min(old.i, v.i);
      s.set(*off, Value{0.0, wrap_int(t, r)});
    }
  });
}

using TileOpFn = void (*)(Machine&, const TileOpNode*);

const std::map<std::string, TileOpFn>& tile_op_table() {
  static const std::map<std::string, TileOpFn> table = {
      {"copy", op_copy},           {"async_copy", op_copy},        {"fill", op_fill},
      {"gemm", op_gemm},           {"gemm_sp", op_gemm_sp},        {"reduce_sum", op_reduce},      {"reduce_abssum", op_reduce},
      {"reduce_max", op_reduce},   {"reduce_min", op_reduce},      {"reduce_absmax", op_reduce},
      {"cumsum", op_cumsum},       {"atomic_add", op_atomic},      {"atomic_max", op_atomic},
      {"atomic_min", op_atomic},
  };
  return table;
}

}  // namespace

void Machine::tile_op(const TileOpNode* op) {
  auto& table = tile_op_table();
  auto it = table.find(op->op);
  if (it == table.end())
    not_supported("T." + op->op, op->loc,
                  op->op == "tma_copy" || op->op == "barrier_init"
                      ? "TMA copies and mbarriers are thread-level; use T.copy in the tile-level program"
                      : "");
  it->second(*this, op);
}

}  // namespace tilec::cpu
