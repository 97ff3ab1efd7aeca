// Buffers, regions and layouts.
//
// A Buffer is a multi-dimensional array in one memory scope. Its identity is the node
// (pointer); two buffers with the same name are different buffers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tilec/ir/expr.h"

namespace tilec::ir {

enum class Scope : uint8_t {
  kGlobal,     // device memory (kernel parameters)
  kShared,     // static shared memory
  kSharedDyn,  // dynamic shared memory (what T.alloc_shared gives by default)
  kFragment,   // a tile distributed over the threads' registers (needs a Fragment layout)
  kLocal,      // per-thread registers / local memory
  kVar,        // a per-thread scalar variable (T.alloc_var), shape (1,)
  kBarrier,    // mbarrier objects in shared memory (T.alloc_barrier)
  kTmem,       // sm_100 tensor memory (not supported yet)
};
const char* scope_name(Scope s);  // "global", "shared", "shared.dyn", "local.fragment", ...
std::optional<Scope> parse_scope(const std::string& name);
bool is_shared(Scope s);

struct LayoutNode;
using Layout = Ref<LayoutNode>;

// Not a tree node (no NodeKind): statements and loads refer to buffers by identity.
struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty = compact row-major
  Scope scope = Scope::kGlobal;
  SourceLoc loc;
  // T.reshape / T.view: this buffer is `viewed`'s memory under another shape. Null for a
  // buffer with memory of its own.
  //  * a fragment or local view: same dtype and element count; element k in row-major order
  //    is `viewed`'s element k; layouts of the two follow each other, lowering gives both
  //    the same registers;
  //  * a shared.dyn view: any dtype, the same bytes; the view has a layout of its own (as in
  //    TileLang, each buffer over the memory is laid out by its own uses) and
  //    plan_shared_memory places it at its storage's offset, over the union of their
  //    lifetimes, so insert_syncs sees the two alias.
  Buffer viewed;
  // T.make_tensor: a global buffer whose first element is at this address (a 64-bit integer
  // variable of the kernel: a Let or a scalar parameter), declared by an Allocate inside the
  // variable's scope. Null for tensor parameters and on-chip buffers. Such a buffer has no
  // tensor map and no launch-time checks: accesses are assumed aligned, as TileLang assumes.
  Var data;
  int ndim() const { return static_cast<int>(shape.size()); }
};

Buffer make_buffer(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
                   std::vector<Expr> strides = {}, SourceLoc loc = {});

// A view of `base` with another shape (T.reshape) and, for a shared.dyn base, possibly
// another dtype (T.view); UserError when the sizes differ, when a register view changes the
// dtype, or when base is global or static shared memory.
Buffer make_view(std::string name, std::vector<Expr> shape, const Buffer& base, SourceLoc loc = {},
                 std::optional<DataType> dtype = std::nullopt);
// The buffer whose memory `b` is: b itself, or the root of its chain of views.
const BufferNode* storage_root(const BufferNode* b);
// T.make_tensor: a global buffer at the address `data` (int64 / uint64); UserError otherwise.
Buffer make_pointer_tensor(std::string name, std::vector<Expr> shape, DataType dtype, std::vector<Expr> strides,
                           Var data, SourceLoc loc = {});
// A global buffer reached through a kernel value (T.make_tensor) rather than a parameter.
inline bool is_pointer_tensor(const BufferNode* b) { return b->data.defined(); }

// Row-major strides of a buffer (its own strides when given).
std::vector<Expr> buffer_strides(const Buffer& b);

struct Range {
  Expr min;
  Expr extent;
};

// A box of a buffer: per dimension a (min, extent).
struct BufferRegion {
  Buffer buffer;
  std::vector<Range> region;
  SourceLoc loc;
  // The whole buffer.
  static BufferRegion full(const Buffer& b);
};

// A layout maps a logical index (i0..in-1) over `input_shape` to physical position(s):
//  * plain layout: `forward_index` gives the physical index (usually one flat offset,
//    possibly swizzled) — for shared memory;
//  * fragment: additionally `forward_thread` gives the owning thread, and
//    `forward_index` the register index within that thread; `replicate` > 1 means each
//    element is held by that many threads, `rep_var` ranging over [0, replicate) is
//    free in forward_thread.
struct LayoutNode {
  std::vector<Expr> input_shape;
  std::vector<Var> vars;            // one per input dimension
  std::vector<Expr> forward_index;  // in terms of vars
  Expr forward_thread;              // null for plain layouts
  Expr replicate;                   // fragments only; IntImm 1 when not replicated
  Var rep_var;                      // fragments only
  bool is_fragment() const { return forward_thread.defined(); }
};
Layout make_layout(std::vector<Expr> input_shape, std::vector<Var> vars,
                   std::vector<Expr> forward_index);
Layout make_fragment(std::vector<Expr> input_shape, std::vector<Var> vars,
                     std::vector<Expr> forward_index, Expr forward_thread,
                     Expr replicate = nullptr, Var rep_var = nullptr);

}  // namespace tilec::ir
