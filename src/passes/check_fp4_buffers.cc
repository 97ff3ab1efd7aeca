// Pass check_fp4_buffers (CUDA): float4_e2m1 buffers can be stored two elements per byte.
//
// Input:  a verified PrimFunc (runs right after verify and simplify on the CUDA pipeline).
// Output: the same function, unchanged; or a UserError naming the first float4_e2m1 buffer
//         (parameter, shared, fragment or local allocation) whose innermost extent is an odd
//         constant. The CUDA back end stores element 2k in the low nibble and 2k + 1 in the
//         high nibble of byte k of each row (torch's float4_e2m1fn_x2), and writes whole
//         bytes only (codegen: pairs of consecutive elements by one thread), so every row
//         must hold an even number of elements. Symbolic innermost extents are left to the
//         runtime's shape check (a float4_e2m1fn_x2 tensor always has an even one).
// Runs after: verify, simplify (which keeps buffers as they are). Nothing depends on it.
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"
#include "tilec/support/diag.h"

namespace tilec::passes {

using namespace ir;

namespace {

void check_buffer(const Buffer& b, const char* what) {
  if (!b->dtype.is_float4() || b->shape.empty()) return;
  const int64_t* inner = as_const_int(b->shape.back());
  TILEC_USER_CHECK(inner == nullptr || *inner % 2 == 0, b->loc,
                   "give it an even innermost extent (pad it by one element)")
      << "float4_e2m1 " << what << " '" << b->name << "' has an odd innermost extent (" << (inner ? *inner : 0)
      << "); the CUDA back end packs two float4 elements per byte along the innermost dimension, so it must be even";
}

class Fp4BufferChecker : public IRVisitor {
 protected:
  void visit_Allocate(const AllocateNode* op) override {
    check_buffer(op->buffer, "buffer");
    IRVisitor::visit_Allocate(op);
  }
};

PrimFunc check(const PrimFunc& f, PassContext&) {
  for (const auto& p : f->params)
    if (p.is_buffer()) check_buffer(p.buffer, "tensor");
  Fp4BufferChecker().visit(f->body);
  return f;
}

}  // namespace

Pass check_fp4_buffers_pass() { return {"check_fp4_buffers", check}; }

}  // namespace tilec::passes
