// Shared tiles for TMA and wgmma (see smem_tile.h).
#include "ops/smem_tile.h"

#include <mutex>
#include <unordered_map>

#include "ops/op_util.h"
#include "tilec/layout/layout.h"

namespace tilec::ops {

using namespace ir;

namespace {

// Layouts made here, by identity: recognizing them again needs no element-wise comparison.
struct MadeLayouts {
  std::mutex mu;
  std::unordered_map<const LayoutNode*, std::pair<std::weak_ptr<const LayoutNode>, SmemTileForm>> forms;
};
MadeLayouts& made() {
  static MadeLayouts m;
  return m;
}

// The tile's rows: the next-to-last dimension; a 1-D tile is one row.
int64_t tile_rows(const std::vector<int64_t>& shape) { return shape.size() == 1 ? 1 : shape[shape.size() - 2]; }

SmemTileForm form_of(const Buffer& b, layout::SwizzleMode mode) {
  std::vector<int64_t> shape = const_shape(b);
  SmemTileForm f;
  f.mode = mode;
  f.rows = tile_rows(shape);
  f.cols = shape.back();
  const int64_t elem = b->dtype.bytes();
  const int64_t span = layout::swizzle_span_bytes(mode);
  const int64_t period = std::max<int64_t>(128, 8 * span) / elem;  // elements
  f.tile_stride = (f.rows * f.cols + period - 1) / period * period;
  return f;
}

}  // namespace

bool smem_tile_mode_fits(int64_t rows, int64_t cols, DataType dtype, layout::SwizzleMode mode) {
  const int64_t row_bytes = cols * dtype.bytes();
  if (dtype.bits() % 8 != 0 || dtype.lanes() != 1) return false;
  if (mode == layout::SwizzleMode::kNone) return row_bytes % 16 == 0;
  return row_bytes % layout::swizzle_span_bytes(mode) == 0 && rows % 8 == 0;
}

layout::SwizzleMode widest_smem_tile_mode(int64_t rows, int64_t cols, int64_t min_span_cols, DataType dtype) {
  for (auto m : {layout::SwizzleMode::k128B, layout::SwizzleMode::k64B, layout::SwizzleMode::k32B}) {
    if (!smem_tile_mode_fits(rows, cols, dtype, m)) continue;
    if (min_span_cols * dtype.bytes() % layout::swizzle_span_bytes(m) != 0) continue;
    return m;
  }
  return layout::SwizzleMode::kNone;
}

Layout smem_tile_layout(const Buffer& b, layout::SwizzleMode mode) {
  const SmemTileForm f = form_of(b, mode);
  TILEC_ICHECK(smem_tile_mode_fits(f.rows, f.cols, b->dtype, mode))
      << layout::swizzle_name(mode) << " tile form does not fit buffer " << b->name;
  Layout tile = layout::swizzled_layout({f.rows, f.cols}, b->dtype, mode);
  std::vector<int64_t> shape = const_shape(b);
  const int nd = static_cast<int>(shape.size());
  Layout l = tile;
  if (nd == 1) {
    l = layout::make_plain(shape, [&](const std::vector<Var>& v) {
      return layout::apply_index(tile, {int_imm(0, v[0]->dtype), v[0]});
    });
  } else if (nd > 2) {
    l = layout::make_plain(shape, [&](const std::vector<Var>& v) {
      Expr lead = nullptr;
      for (int d = 0; d + 2 < nd; ++d) lead = lead ? lead * shape[d] + v[d] : Expr(v[d]);
      std::vector<Expr> in = layout::apply_index(tile, {v[nd - 2], v[nd - 1]});
      return std::vector<Expr>{lead * f.tile_stride + in[0]};
    });
  }
  auto& m = made();
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.forms.size() > 4096) m.forms.clear();
  m.forms[l.get()] = {std::weak_ptr<const LayoutNode>(l.shared()), f};
  return l;
}

std::optional<SmemTileForm> smem_tile_form(const Buffer& b, const Layout& l) {
  if (!l || l->is_fragment() || b->ndim() < 1) return std::nullopt;
  {
    auto& m = made();
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.forms.find(l.get());
    if (it != m.forms.end() && it->second.first.lock().get() == l.get()) return it->second.second;
  }
  for (const Expr& e : b->shape)
    if (!as_const_int(e)) return std::nullopt;
  const std::vector<int64_t> shape = const_shape(b);
  for (auto mode : {layout::SwizzleMode::k128B, layout::SwizzleMode::k64B, layout::SwizzleMode::k32B,
                    layout::SwizzleMode::kNone}) {
    if (!smem_tile_mode_fits(tile_rows(shape), shape.back(), b->dtype, mode)) continue;
    if (layout::layout_equal(l, smem_tile_layout(b, mode))) return form_of(b, mode);
  }
  return std::nullopt;
}

}  // namespace tilec::ops
