// Shared tiles in the form the Hopper async units use: the layout that TMA writes (tensor
// map swizzle 32B / 64B / 128B, or none) and wgmma reads through matrix descriptors.
//
// A buffer's last two dimensions are one tile of rows x cols elements stored like
// layout::swizzled_layout (rows of exactly one span — a tile wider than the span is cut
// into column blocks of one span, stored one after another — 16-byte chunks XORed with
// the row mod 2^B); leading dimensions (pipeline versions) index whole tiles, one tile
// stride apart, the stride rounded up to the swizzle period (8 rows of a span) so every
// tile starts on it. With no swizzle the tile is row-major. A 1-D buffer is one row (no swizzle).
// Unlike the mma.sync operand layouts, a row is never narrower than the span (the folded
// form of swizzled_layout is not something a TMA box or a descriptor can express).
#pragma once

#include <optional>

#include "tilec/ir/buffer.h"
#include "tilec/layout/swizzle.h"

namespace tilec::ops {

struct SmemTileForm {
  layout::SwizzleMode mode = layout::SwizzleMode::kNone;
  int64_t rows = 0, cols = 0;  // the tile (the buffer's last two dimensions)
  int64_t tile_stride = 0;     // elements between consecutive tiles of the leading dimensions
};

// Whether `mode` can store a rows x cols tile of `dtype` in this form: rows of whole spans,
// and whole 8-row swizzle periods per column block (the hardware XORs with the address's
// row-in-period bits, so every column block must start a period).
bool smem_tile_mode_fits(int64_t rows, int64_t cols, ir::DataType dtype, layout::SwizzleMode mode);
// The widest swizzle that fits the tile, each row `min_span_cols` columns (a unit every
// reader starts at) or wider; kNone when none does.
layout::SwizzleMode widest_smem_tile_mode(int64_t rows, int64_t cols, int64_t min_span_cols, ir::DataType dtype);
// The layout of buffer `b` (constant shape, 2-D or more) in this form.
ir::Layout smem_tile_layout(const ir::Buffer& b, layout::SwizzleMode mode);
// Recognizes a layout smem_tile_layout made (or one equal to it); nullopt otherwise.
std::optional<SmemTileForm> smem_tile_form(const ir::Buffer& b, const ir::Layout& l);

}  // namespace tilec::ops
