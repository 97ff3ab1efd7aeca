// Swizzled shared-memory layouts (MODEL.md "Layouts", REFERENCES.md "Swizzle").
//
// The swizzle acts on the byte offset o of a row-major tile exactly like CuTe's
// Swizzle<B, 4, 3>: the B-bit field of 16-byte chunks, o[4, 4+B), is XORed with the
// B-bit field o[7, 7+B) (which 128-byte line, mod 2^B). So with 128-byte rows and the
// 128B mode, chunk c of row r lands at chunk c ^ (r % 8) of the same row. B = 3, 2, 1 for
// the 128B, 64B and 32B modes; each mode maps every span-sized piece of a line onto
// itself, so it is a bijection on any tile whose size is a multiple of the span.
//
// A row wider than the span is cut into column blocks of span bytes that are stored one
// after another (block b holds columns [b * span, (b + 1) * span) of every row), so each
// block is a stack of canonical swizzle atoms: the form TMA boxes and wgmma descriptors
// use, and conflict-free for 8-row ldmatrix reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilec/ir/buffer.h"

namespace tilec::layout {

enum class SwizzleMode : uint8_t { kNone, k32B, k64B, k128B };
int swizzle_span_bytes(SwizzleMode m);  // 0 (none), 32, 64, 128
const char* swizzle_name(SwizzleMode m);  // "none", "32B", "64B", "128B"
// 0 (none), 1 (32B), 2 (64B), 3 (128B): the XOR width in 16-byte chunks as log2, which is
// also the value of CUtensorMapSwizzle and the device tiles' swizzle parameter.
int swizzle_bits(SwizzleMode m);

// True when `mode` can lay out a tile of `shape` (leading dimensions are folded into
// rows) of `dtype`: rows are a multiple of the span, or a divisor of it with the whole
// tile a multiple of the span; element size 1..16 bytes.
bool swizzle_applicable(const std::vector<int64_t>& shape, ir::DataType dtype, SwizzleMode mode);
// The swizzled plain layout (InternalError when not applicable; kNone = row-major).
ir::Layout swizzled_layout(const std::vector<int64_t>& shape, ir::DataType dtype, SwizzleMode mode);
// The widest mode that applies (what a copy / ldmatrix path should ask for by default).
SwizzleMode widest_swizzle(const std::vector<int64_t>& shape, ir::DataType dtype);

// Offset arithmetic used by the layouts above, exposed for tests and device-side checks:
// the swizzled element offset of row-major element offset `x`.
int64_t swizzle_element_offset(int64_t x, int elem_bytes, SwizzleMode mode);

}  // namespace tilec::layout
