// Helpers for layout / lowering tests: run passes and read their results.
#pragma once

#include <string>
#include <vector>

#include "tilec/ir/builder.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::testing {

inline ir::PrimFunc run_layout_inference(const ir::PrimFunc& f, target::Target t = {}) {
  passes::PassContext ctx(t);
  return passes::layout_inference_pass().run(f, ctx);
}

inline ir::PrimFunc run_lowering(const ir::PrimFunc& f, target::Target t = {}) {
  passes::PassContext ctx(t);
  // Through the pass manager, so TILEC_DUMP_IR shows the stages.
  return passes::run_passes({passes::layout_inference_pass(), passes::lower_tile_ops_pass()}, f, ctx);
}

inline ir::LayoutMap layout_map_of(const ir::PrimFunc& f) {
  ir::LayoutMap out;
  ir::for_each_node(f->body, [&](const ir::Node* n) {
    if (n->kind != ir::NodeKind::kAnnotate) return;
    auto* a = static_cast<const ir::AnnotateNode*>(n);
    if (a->key == "layout_map")
      if (auto* m = std::get_if<ir::LayoutMap>(&a->value)) out = *m;
  });
  return out;
}

inline ir::Layout layout_of(const ir::PrimFunc& f, const ir::Buffer& b) {
  for (const auto& [buf, l] : layout_map_of(f))
    if (buf.same_as(b)) return l;
  return nullptr;
}

// Loop layouts of the T.Parallel nests, in program order.
inline std::vector<ir::Layout> loop_layouts_of(const ir::PrimFunc& f) {
  std::vector<ir::Layout> out;
  ir::for_each_node(f->body, [&](const ir::Node* n) {
    if (n->kind != ir::NodeKind::kFor) return;
    auto* l = static_cast<const ir::ForNode*>(n);
    if (auto* v = ir::find_attr(l->annotations, "loop_layout"))
      if (auto* lay = std::get_if<ir::Layout>(v)) out.push_back(*lay);
  });
  return out;
}

inline SourceLoc line(int n) { return SourceLoc{"kernel.py", n, 5}; }

// The message of the UserError `fn` raises ("" when none).
template <typename Fn>
std::string user_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tilec::testing
