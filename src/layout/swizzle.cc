// Swizzled shared-memory layouts (see swizzle.h for the definition).
#include "tilec/layout/swizzle.h"

#include "layout/digit_form.h"
#include "tilec/layout/layout.h"

namespace tilec::layout {

using namespace ir;

int swizzle_span_bytes(SwizzleMode m) {
  switch (m) {
    case SwizzleMode::kNone: return 0;
    case SwizzleMode::k32B: return 32;
    case SwizzleMode::k64B: return 64;
    case SwizzleMode::k128B: return 128;
  }
  return 0;
}

const char* swizzle_name(SwizzleMode m) {
  switch (m) {
    case SwizzleMode::kNone: return "none";
    case SwizzleMode::k32B: return "32B";
    case SwizzleMode::k64B: return "64B";
    case SwizzleMode::k128B: return "128B";
  }
  return "?";
}

int swizzle_bits(SwizzleMode m) {
  switch (m) {
    case SwizzleMode::k32B: return 1;
    case SwizzleMode::k64B: return 2;
    case SwizzleMode::k128B: return 3;
    default: return 0;
  }
}

namespace {

struct Geometry {
  int64_t rows = 1, cols = 1;
  int elem_bytes = 0;
};
Geometry geometry(const std::vector<int64_t>& shape, DataType dtype) {
  Geometry g;
  for (size_t i = 0; i + 1 < shape.size(); ++i) g.rows *= shape[i];
  g.cols = shape.empty() ? 1 : shape.back();
  g.elem_bytes = dtype.bits() * dtype.lanes() / 8;
  return g;
}
}  // namespace

int64_t swizzle_element_offset(int64_t x, int elem_bytes, SwizzleMode mode) {
  int b = swizzle_bits(mode);
  if (b == 0) return x;
  int64_t chunk_elems = 16 / elem_bytes, line_elems = 128 / elem_bytes;
  int64_t mask = (int64_t{1} << b) - 1;
  int64_t chunk = (x / chunk_elems) & mask;
  int64_t line = (x / line_elems) & mask;
  return x + ((chunk ^ line) - chunk) * chunk_elems;
}

bool swizzle_applicable(const std::vector<int64_t>& shape, DataType dtype, SwizzleMode mode) {
  if (mode == SwizzleMode::kNone) return true;
  Geometry g = geometry(shape, dtype);
  if (dtype.bits() * dtype.lanes() % 8 != 0 || g.elem_bytes < 1 || g.elem_bytes > 16) return false;
  int64_t span = swizzle_span_bytes(mode);
  int64_t row_bytes = g.cols * g.elem_bytes;
  if (row_bytes % span == 0) return true;
  return span % row_bytes == 0 && (g.rows * row_bytes) % span == 0;
}

SwizzleMode widest_swizzle(const std::vector<int64_t>& shape, DataType dtype) {
  for (auto m : {SwizzleMode::k128B, SwizzleMode::k64B, SwizzleMode::k32B})
    if (swizzle_applicable(shape, dtype, m)) {
      // Narrow rows folded into lines only pay off when a row is at least a chunk.
      Geometry g = geometry(shape, dtype);
      if (g.cols * g.elem_bytes >= 16) return m;
    }
  return SwizzleMode::kNone;
}

Layout swizzled_layout(const std::vector<int64_t>& shape, DataType dtype, SwizzleMode mode) {
  if (mode == SwizzleMode::kNone) return row_major(shape);
  TILEC_ICHECK(swizzle_applicable(shape, dtype, mode))
      << swizzle_name(mode) << " swizzle does not apply to this tile";
  Geometry g = geometry(shape, dtype);
  int b = swizzle_bits(mode);
  int64_t span_elems = swizzle_span_bytes(mode) / g.elem_bytes;
  int64_t chunk_elems = 16 / g.elem_bytes, line_elems = 128 / g.elem_bytes;
  int64_t mask = (int64_t{1} << b) - 1;
  return make_plain(shape, [&](const std::vector<Var>& v) {
    // Row index over the folded leading dimensions, column in the last.
    Expr row = nullptr;
    int64_t stride = 1;
    for (size_t d = shape.size() - 1; d-- > 0;) {
      row = idx_add(idx_mul(v[d], stride), row);
      stride *= shape[d];
    }
    if (!row) row = int_imm(0);
    Expr col = v.back();
    Expr block_base = nullptr, x;
    if (g.cols > span_elems) {
      // Column blocks of one span each, stored one after another.
      block_base = idx_mul(idx_div(col, span_elems), g.rows * span_elems);
      x = idx_add(idx_mul(row, span_elems), idx_mod(col, span_elems));
    } else {
      x = idx_add(idx_mul(row, g.cols), col);
    }
    Expr chunk = idx_mod(idx_div(x, chunk_elems), mask + 1);
    Expr line = idx_mod(idx_div(x, line_elems), mask + 1);
    Expr swapped = call(DataType::Int(32), "tl.bitwise_xor", {chunk, line});
    // x with its chunk field replaced: (x // (chunk_elems * 2^b)) * ... + swapped * chunk_elems + x % chunk_elems
    Expr hi = idx_mul(idx_div(x, chunk_elems * (mask + 1)), chunk_elems * (mask + 1));
    Expr off = idx_add(idx_add(hi, idx_mul(swapped, chunk_elems)), idx_mod(x, chunk_elems));
    return std::vector<Expr>{idx_add(block_base, off)};
  });
}

}  // namespace tilec::layout
