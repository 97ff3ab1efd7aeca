// stmatrix wrappers (sm_90): the copy_stmatrix lowering of T.copy (fragment -> shared memory,
// 16-bit).
//
// stmatrix.m8n8.x4: lanes 8q..8q+7 give the addresses of the 8 rows (16 bytes each) of matrix
// q; lane l supplies, for every matrix q, the 32-bit word (l % 4) of row l / 4 in its register
// q. Row addresses must be 16-byte aligned shared-memory addresses.
#pragma once

namespace tl {

// regs: the lane's four 32-bit words (eight 16-bit elements, matrix q in regs[2q], regs[2q + 1]).
template <typename T>
__device__ __forceinline__ void stmatrix_x4_one(T* smem_row, const T* regs) {
  static_assert(sizeof(T) == 2, "stmatrix stores 16-bit elements");
  const unsigned* w = reinterpret_cast<const unsigned*>(regs);
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem_row));
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(w[0]),
               "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
}

// Group g of the registers (regs[8 g .. 8 g + 7]) to the row address rows[g], g = 0, 1, ...
template <typename T, typename... Rows>
__device__ __forceinline__ void stmatrix_x4(const T* regs, Rows*... rows) {
  int g = 0;
  (stmatrix_x4_one(rows, regs + 8 * g++), ...);
}

}  // namespace tl
