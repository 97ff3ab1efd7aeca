// Device code for single wgmma instructions (see wgmma_atoms.h).
//
// PTX forms (wgmma.mma_async, PTX ISA "warpgroup MMA"):
//   f16/bf16:  wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T  d, a-desc|{a}, b-desc, scale-d,
//              imm-scale-a, imm-scale-b[, imm-trans-a], imm-trans-b      (trans-a: desc A only)
//   tf32/fp8:  ... .m64nNk{8,32}.f32.A.B  d, a-desc|{a}, b-desc, scale-d, imm-scale-a, imm-scale-b
//   int8:      ... .m64nNk32.s32.A.B      d, a-desc, b-desc, scale-d
// scale-d is a predicate (false: D = A * B, the first step of a cleared accumulator); the
// transposes are immediates, so they come in as template parameters with "n" constraints.
#include "target/cuda/wgmma_atoms.h"

#include "target/cuda/wgmma_kinds.h"

#include <sstream>

#include "tilec/support/diag.h"

namespace tilec::cuda {

namespace {

// "{%0, %1, ..., %(n-1)}" and the matching "+f"(d[i]) list.
std::string reg_list(int first, int count) {
  std::ostringstream os;
  os << "{";
  for (int i = 0; i < count; ++i) os << (i ? ", " : "") << "%" << first + i;
  os << "}";
  return os.str();
}
std::string acc_constraints(int count, bool integer) {
  std::ostringstream os;
  for (int i = 0; i < count; ++i) os << (i ? ", " : "") << (integer ? "\"+r\"(d[" : "\"+f\"(d[") << i << "])";
  return os.str();
}

}  // namespace

std::string wgmma_atom_definition(int n, int kind) {
  const WgmmaKind& r = wgmma_kind(kind);
  const int regs = n / 2;
  const std::string acc_type = r.integer ? "int" : "float";
  std::ostringstream shape;
  shape << "wgmma.mma_async.sync.aligned.m64n" << n << "k" << r.k << "." << (r.integer ? "s32" : "f32") << "." << r.ptx_a
        << "." << r.ptx_b;
  std::ostringstream os;
  os << "namespace tl {\ntemplate <>\nstruct WgmmaAtom<" << n << ", " << kind << "> {\n";
  // ss: d, a-desc, b-desc, scale-d [, imm-scale-a, imm-scale-b [, imm-trans-a, imm-trans-b]]
  {
    const int da = regs, db = regs + 1, sd = regs + 2, ta = regs + 3, tb = regs + 4;
    os << "  template <int TA, int TB>\n"
       << "  static __device__ __forceinline__ void ss(" << acc_type << "* d, uint64 desc_a, uint64 desc_b, int scale_d) {\n";
    if (!r.sixteen_bit) os << "    static_assert(TA == 0 && TB == 0, \"this wgmma type reads K-major operands only\");\n";
    os << "    asm volatile(\n"
       << "        \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << sd << ", 0;\\n\"\n"
       << "        \"" << shape.str() << " " << reg_list(0, regs) << ", %" << da << ", %" << db << ", p";
    if (!r.integer) os << ", 1, 1";
    if (r.sixteen_bit) os << ", %" << ta << ", %" << tb;
    os << ";\\n}\\n\"\n"
       << "        : " << acc_constraints(regs, r.integer) << "\n"
       << "        : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d)";
    if (r.sixteen_bit) os << ", \"n\"(TA), \"n\"(TB)";
    os << ");\n  }\n";
  }
  if (!r.integer) {
    // rs: d, {a0..a3}, b-desc, scale-d, imm-scale-a, imm-scale-b[, imm-trans-b (16-bit only)]
    const int a0 = regs, db = regs + 4, sd = regs + 5, tb = regs + 6;
    os << "  template <int TB>\n"
       << "  static __device__ __forceinline__ void rs(" << acc_type
       << "* d, const uint32* a, uint64 desc_b, int scale_d) {\n";
    if (!r.sixteen_bit) os << "    static_assert(TB == 0, \"this wgmma type reads B K-major only\");\n";
    os << "    asm volatile(\n"
       << "        \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << sd << ", 0;\\n\"\n"
       << "        \"" << shape.str() << " " << reg_list(0, regs) << ", " << reg_list(a0, 4) << ", %" << db
       << ", p, 1, 1";
    if (r.sixteen_bit) os << ", %" << tb;
    os << ";\\n}\\n\"\n"
       << "        : " << acc_constraints(regs, r.integer) << "\n"
       << "        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc_b), \"r\"(scale_d)";
    if (r.sixteen_bit) os << ", \"n\"(TB)";
    os << ");\n  }\n";
  }
  os << "};\n}  // namespace tl\n";
  return os.str();
}

}  // namespace tilec::cuda
