// Layout algebra on ir::Layout (see MODEL.md "Layouts").
//
// A plain layout maps a logical index to a physical position (shared memory); a fragment
// maps it to (thread, register) and may be replicated. Tiles have constant shapes, so
// queries are exact over every element, answered cheaply (src/layout/int_eval.h): maps that
// are sums of one-variable terms (mma and coalesced fragments) along the axes only, others
// (swizzles) by evaluating the whole tile at once. Passes call these queries many times per
// kernel, so none of them may go back to a per-element interpreter loop
// (tests/cpp/compile_speed_test.cc guards the pass time).
//
// Fragments built by tilec (and the mma layouts the gemm lowering builds) have a
// mixed-radix ("digit") structure: every input coordinate is split into digits
// (x // stride) % extent, and each digit goes to the thread or the register index with
// an output stride. `inverse` needs that structure; it is recovered from any fragment by
// enumeration (src/layout/digit_form.h), so user layouts written as expressions work too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tilec/ir/buffer.h"
#include "tilec/ir/type.h"

namespace tilec::layout {

using ir::Expr;
using ir::Layout;
using ir::Var;

// ---- construction ----
using IndexFn = std::function<std::vector<Expr>(const std::vector<Var>& idx)>;
using ThreadFn = std::function<Expr(const std::vector<Var>& idx, const Var& rep)>;
using LocalFn = std::function<Expr(const std::vector<Var>& idx)>;

Layout make_plain(const std::vector<int64_t>& shape, const IndexFn& index);
Layout make_fragment(const std::vector<int64_t>& shape, const ThreadFn& thread, const LocalFn& local,
                     int64_t replicate = 1);
// Row-major plain layout: one flat offset.
Layout row_major(const std::vector<int64_t>& shape);

// ---- queries (constant shapes) ----
bool has_const_shape(const Layout& l);
std::vector<int64_t> const_shape(const Layout& l);  // InternalError when symbolic
int64_t num_elements(const Layout& l);
int64_t replicate_factor(const Layout& frag);
// Registers each thread needs: max register index + 1.
int64_t fragment_local_size(const Layout& frag);
// Threads the fragment touches: max thread + 1.
int64_t thread_extent(const Layout& frag);
// Plain layouts with one output: max offset + 1 (the physical buffer size).
int64_t physical_size(const Layout& plain);

// ---- apply ----
// forward_index / forward_thread with the layout variables replaced by `logical`.
std::vector<Expr> apply_index(const Layout& l, const std::vector<Expr>& logical);
Expr apply_thread(const Layout& frag, const std::vector<Expr>& logical, const Expr& rep = nullptr);
std::vector<int64_t> eval_index(const Layout& l, const std::vector<int64_t>& logical);
int64_t eval_thread(const Layout& frag, const std::vector<int64_t>& logical, int64_t rep = 0);

// ---- inverse ----
struct InverseMap {
  std::vector<Expr> indices;  // the logical index, one per dimension
  Expr valid;                 // null when every (thread, register) pair holds an element
};
// For a fragment used as a loop layout: the element that `thread` holds at register
// `local` (any replica holds it; with `first_replica_only`, `valid` also requires the
// thread to be replica 0). `num_threads` is the block size (it decides which bound
// checks are needed). Nullopt when the fragment has no digit structure.
std::optional<InverseMap> inverse(const Layout& frag, const Expr& thread, const Expr& local,
                                  int64_t num_threads, bool first_replica_only = false);

// ---- comparison ----
// Same mapping for every element (fragments: same register and same set of threads).
bool layout_equal(const Layout& a, const Layout& b);
// Fragments of one constant shape: whether every thread that `readers` gives an element also
// holds it in `holders` (a copy from a `holders` fragment into a `readers` one can then run
// in each thread on its own registers).
bool threads_hold(const Layout& readers, const Layout& holders);
// No two elements share a (thread, register) slot or, for plain layouts, an offset.
bool is_injective(const Layout& l);
// A short human-readable form for error messages.
std::string describe(const Layout& l);

// ---- composition ----
enum class RepeatOn { kThreads, kRegisters };
// Tiles `base` counts[d] times along each dimension: copy c = (c0, c1, ...) holds
// the block x_d = c_d * base_extent_d + b_d and sits at thread offset
// linear(c) * thread_extent(base) (kThreads) or register offset linear(c) *
// fragment_local_size(base) (kRegisters); linear() is row-major over `counts`
// (column-major when `copies_row_major` is false).
// E.g. a warp-level mma accumulator repeated over the tiles each warp computes
// (kRegisters) and then over the warp grid (kThreads).
Layout repeat(const Layout& base, const std::vector<int64_t>& counts, RepeatOn on,
              bool copies_row_major = true);
// Keeps the dimensions `kept` (in that order) and drops the others; the threads that
// held different values of a dropped dimension become replicas. Registers of dropped
// dimensions disappear (register indices are renumbered densely). This is the layout
// of a reduction's output, and of a fragment read by broadcast in a parallel loop.
Layout project(const Layout& frag, const std::vector<int>& kept);
// Adds `factor` replicas at thread offsets r * thread_extent(frag).
Layout replicate(const Layout& frag, int64_t factor);
// New dimension order: result dim i is input dim perm[i].
Layout permute_dims(const Layout& l, const std::vector<int>& perm);

// The layout of a view of a buffer laid out by `l` (constant shape) with shape `to`
// (same element count): view element k in row-major order is the buffer's element k.
// Fragments in digit form come back in clean digit form when the view's dimensions fall
// on digit boundaries.
Layout reshape(const Layout& l, const std::vector<int64_t>& to);

// ---- defaults ----
// Elements per 16-byte (or `bytes`) vector that divide the innermost extent.
int64_t vector_elems(ir::DataType dtype, int64_t innermost_extent, int64_t bytes = 16);
// A loop layout for shape over num_threads: each thread owns `vec` contiguous elements
// of the innermost dimension at a time, consecutive threads own consecutive chunks
// (coalesced), and repeats over the rest in registers. Threads beyond what the shape
// needs stay idle.
Layout coalesced_layout(const std::vector<int64_t>& shape, int64_t num_threads, int64_t vec);
// The default fragment: coalesced_layout with 16-byte chunks of `dtype`.
Layout default_fragment(const std::vector<int64_t>& shape, int64_t num_threads, ir::DataType dtype);
// The default fragment when the thread digits of dimension d may reach only below
// caps[d] (a thread's elements along d differ only in index // caps[d]): those parts go
// to registers; the vector narrows when that leaves threads idle.
Layout default_fragment_within(const std::vector<int64_t>& shape, int64_t num_threads, ir::DataType dtype,
                               const std::vector<int64_t>& caps);
// Whether every thread digit of `frag` stays below caps[d] along its dimension d
// (false for a fragment without a digit form).
bool threads_within(const Layout& frag, const std::vector<int64_t>& caps);

}  // namespace tilec::layout
