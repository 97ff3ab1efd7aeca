// Layouts evaluated at every element, for the layout plots (include/tilec/layout/layout_maps.h).
// Read-only: nothing here changes a layout or a program.
#include "tilec/layout/layout_maps.h"

#include <algorithm>

#include "layout/int_eval.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/visitor.h"
#include "tilec/layout/layout.h"
#include "tilec/support/diag.h"

namespace tilec::layout {

namespace {

using namespace ir;

std::vector<int64_t> checked_shape(const Layout& l) {
  if (!has_const_shape(l)) {
    std::string shape;
    for (size_t i = 0; i < l->input_shape.size(); ++i) shape += (i ? ", " : "") + script(l->input_shape[i]);
    throw_user_error("cannot evaluate a layout over the symbolic shape (" + shape + ")", {},
                     "layouts are plotted over a constant tile shape");
  }
  std::vector<int64_t> shape = const_shape(l);
  int64_t n = 1;
  for (auto e : shape) {
    if (e <= 0) throw_user_error("cannot evaluate a layout over an empty tile", {});
    n *= e;
    if (n > kMaxMappedElements)
      throw_user_error("the layout's tile has more than " + std::to_string(kMaxMappedElements) +
                           " elements, too many to evaluate element by element",
                       {}, "plot a smaller tile");
  }
  return shape;
}

int64_t max_plus_one(const std::vector<int64_t>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end()) + 1;
}

}  // namespace

LayoutMaps evaluate_maps(const Layout& l) {
  LayoutMaps m;
  m.shape = checked_shape(l);
  m.fragment = l->is_fragment();
  if (m.fragment && l->forward_index.size() != 1)
    throw_user_error("a fragment needs exactly one register index expression to be evaluated, this one has " +
                         std::to_string(l->forward_index.size()),
                     {}, "T.Fragment(shape, forward_thread=..., forward_index=lambda i, j: [k])");
  m.text = describe(l);
  if (m.fragment) {
    m.replicate = replicate_factor(l);
    std::vector<Var> slots = l->vars;
    slots.push_back(l->rep_var);
    std::vector<int64_t> box = m.shape;
    box.push_back(1);  // replica 0
    m.thread = eval_box(l->forward_thread, slots, box);
    m.local = eval_box(l->forward_index[0], slots, box);
    m.registers = max_plus_one(m.local);
    m.threads = thread_extent(l);
    return m;
  }
  // Plain: one flat offset, or several outputs flattened row-major over their extents.
  std::vector<std::vector<int64_t>> outputs;
  for (const auto& e : l->forward_index) outputs.push_back(eval_box(e, l->vars, m.shape));
  if (outputs.empty()) {
    m.offset.assign(static_cast<size_t>(num_elements(l)), 0);
  } else {
    m.offset = outputs[0];
    for (size_t o = 1; o < outputs.size(); ++o) {
      const int64_t extent = std::max<int64_t>(1, max_plus_one(outputs[o]));
      for (size_t i = 0; i < m.offset.size(); ++i) m.offset[i] = m.offset[i] * extent + outputs[o][i];
    }
  }
  m.physical_size = max_plus_one(m.offset);
  return m;
}

std::vector<InferredLayout> inferred_layouts(const PrimFunc& f) {
  std::vector<InferredLayout> out;
  for_each_node(f->body, [&](const Node* n) {
    auto* a = dynamic_cast<const AnnotateNode*>(n);
    if (!a || a->key != "layout_map") return;
    if (auto* map = std::get_if<LayoutMap>(&a->value))
      for (const auto& [buffer, layout] : *map) {
        bool seen = false;
        for (const auto& o : out) seen |= o.buffer.get() == buffer.get();
        if (!seen) out.push_back({buffer, layout});
      }
  });
  return out;
}

}  // namespace tilec::layout
