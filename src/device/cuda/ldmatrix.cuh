// ldmatrix wrappers (sm_75+), destination first.
//
// ldmatrix.m8n8.x{1,2,4}: lanes 8q..8q+7 give the addresses of the 8 rows (16 bytes each)
// of matrix q; lane l receives, for every matrix q, the 32-bit word (l % 4) of row l / 4
// in d[q]. With .trans lane l receives instead the two 16-bit elements (2 (l % 4), l / 4)
// and (2 (l % 4) + 1, l / 4) of the stored matrix (row, col), i.e. a row of the transpose.
// For .x1 only lanes 0-7 and for .x2 only lanes 0-15 give addresses; the others are ignored.
// Row addresses must be 16-byte aligned shared-memory addresses.
#pragma once

namespace tl {

__device__ __forceinline__ unsigned smem_u32addr(const void* smem_ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(smem_ptr));
}

__device__ __forceinline__ void ldmatrix_x1(unsigned* d, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(d[0])
               : "r"(smem_u32addr(smem_row)));
}

__device__ __forceinline__ void ldmatrix_x2(unsigned* d, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(d[0]), "=r"(d[1])
               : "r"(smem_u32addr(smem_row)));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned* d, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_u32addr(smem_row)));
}

__device__ __forceinline__ void ldmatrix_x1_trans(unsigned* d, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(d[0])
               : "r"(smem_u32addr(smem_row)));
}

__device__ __forceinline__ void ldmatrix_x2_trans(unsigned* d, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(d[0]), "=r"(d[1])
               : "r"(smem_u32addr(smem_row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* d, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_u32addr(smem_row)));
}

// The same, with the row address already a 32-bit shared-state-space byte address.
__device__ __forceinline__ void ldmatrix_x2(unsigned* d, unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(d[0]), "=r"(d[1]) : "r"(smem_addr));
}
__device__ __forceinline__ void ldmatrix_x4(unsigned* d, unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned* d, unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(d[0]), "=r"(d[1])
               : "r"(smem_addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* d, unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_addr));
}

}  // namespace tl
