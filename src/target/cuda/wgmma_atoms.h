// The wgmma instructions a kernel uses, as device code (tl::WgmmaAtom<N, KIND> of
// tilec/gemm_sm90.cuh). One wgmma names every accumulator register in its asm statement
// (up to 128 for m64n256 with f32), so instead of a header with every shape and type the
// generated source defines exactly the atoms its kernel needs, from a table of the
// operand types (PTX type names, K, accumulator type, which immediates the form takes).
#pragma once

#include <string>

namespace tilec::cuda {

// C++ text of `template <> struct tl::WgmmaAtom<n, kind> {...};` with its ss (both operands
// from shared memory) and, for floating-point operands, rs (A from registers) functions.
std::string wgmma_atom_definition(int n, int kind);

}  // namespace tilec::cuda
