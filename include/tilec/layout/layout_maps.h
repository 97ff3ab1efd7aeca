// A layout evaluated at every element of its tile, for people to look at (issue 14, layout
// plots: tilec.plot_layout, kernel.plot_layouts, kernel.layouts()).
//
// A fragment gives, for each logical element, the thread that owns it and its register
// (local) index in that thread; a plain (shared-memory) layout gives its physical element
// offset, from which the 4-byte bank of an element of `b` bytes is (offset * b / 4) % 32.
// Arrays are row-major over the tile's shape. Evaluation goes through eval_box (one vector
// loop per expression node), so a 256x256 tile costs milliseconds.
//
// Also here: the inferred layouts of a program (the "layout_map" annotations that the
// layout_inference pass leaves on each kernel body), paired with their buffers, so that one
// call gives a compiled kernel's layouts by buffer name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilec/ir/buffer.h"
#include "tilec/ir/stmt.h"

namespace tilec::layout {

struct LayoutMaps {
  std::vector<int64_t> shape;  // the logical tile
  bool fragment = false;
  std::string text;            // describe(): the layout's expressions in one line
  // Fragments: per element, the owning thread (replica 0) and its register index.
  int64_t replicate = 1;       // threads holding each element (replicas at thread offsets)
  int64_t threads = 0;         // thread extent (max thread + 1, all replicas)
  int64_t registers = 0;       // registers per thread (max register + 1)
  std::vector<int64_t> thread;
  std::vector<int64_t> local;
  // Plain layouts: per element, the physical element offset (multi-output layouts are
  // flattened row-major over their outputs' extents).
  std::vector<int64_t> offset;
  int64_t physical_size = 0;   // max offset + 1
};

// Largest tile evaluated (elements); a bigger one is a user error (a tile that size does not
// fit on chip anyway).
constexpr int64_t kMaxMappedElements = int64_t{1} << 22;

// UserError when the layout's shape is symbolic or larger than kMaxMappedElements.
LayoutMaps evaluate_maps(const ir::Layout& l);

// The layouts layout_inference chose, in the order of its "layout_map" annotations
// (allocation order, kernel by kernel). `lowered_to_inference` is a PrimFunc after the
// layout_inference pass.
struct InferredLayout {
  ir::Buffer buffer;
  ir::Layout layout;
};
std::vector<InferredLayout> inferred_layouts(const ir::PrimFunc& lowered_to_inference);

}  // namespace tilec::layout
