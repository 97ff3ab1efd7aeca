// Shared pieces of the second half of the CUDA pipeline (lowered IR, docs/LOWERED_IR.md ->
// IR ready for CUDA codegen, plus the LaunchPlan).
#pragma once

#include "tilec/ir/stmt.h"
#include "tilec/passes/pass.h"
#include "tilec/runtime/launch_plan.h"

namespace tilec::passes {

// The passes themselves are declared in tilec/passes/passes.h (legalize_bounds_pass,
// vectorize_pass, flatten_buffers_pass, plan_shared_memory_pass, insert_syncs_pass,
// split_host_device_pass). This header holds what they share with other code.

// The LaunchPlan of a function that went through the CUDA pipeline (split_host_device.cc).
runtime::LaunchPlan build_launch_plan(const ir::PrimFunc& lowered);

// A TMA tensor map the kernel takes as a parameter: the call
//   tl.tma_descriptor(StringImm tensor_name, swizzle, box_0, ..., box_{rank-1})
// (swizzle as CUtensorMapSwizzle, box innermost first) stands for the map over the tensor
// parameter of that name; build_launch_plan gives every distinct one a TmaDescSpec and a
// kernel argument, and codegen prints the call as that parameter.
inline constexpr const char* kTmaDescriptorOp = "tl.tma_descriptor";
runtime::TmaDescSpec tma_descriptor_spec(const ir::CallNode& call, const runtime::LaunchPlan& plan);

// ---- attribute and annotation keys shared with the first half and codegen ----

// Annotate(kThreadRangeKey, std::vector<int64_t>{first, count, barrier_id}) around code that
// only threads [first, first + count) of the block run (a warp-specialized role, T.ws):
// layout inference and tile-op lowering see `count` threads whose index is the thread
// index minus `first`; insert_syncs plans the region on its own and its block barriers
// become named barrier `barrier_id` over `count` threads when count is not the whole block.
inline constexpr const char* kThreadRangeKey = "tilec.thread_range";
// The fourth value of a kThreadRangeKey annotation, when present and 1: a role the program
// wrote (T.ws, an if / elif chain on the thread index), whose hand-offs the compiler does
// not model; warp_specialize's own roles have three values.
inline constexpr int64_t kUserRole = 1;

// PrimFunc attr (LayoutMap): the global parameters as they were before flattening, in the
// order of the buffer parameters, each with the layout (logical index -> flat offset).
inline constexpr const char* kUnflattenedParamsAttr = "tilec.unflattened_params";
// PrimFunc attr (int64): bytes of the dynamic shared memory arena.
inline constexpr const char* kDynamicSharedBytesAttr = "tilec.dynamic_shared_bytes";
// For annotation (bool): the iterations of this loop, in all threads, touch pairwise
// different elements of every buffer the body accesses (the register loop of a T.copy
// between two buffers): insert_syncs carries no conflict across its back edge.
inline constexpr const char* kDisjointIterationsKey = "tilec.disjoint_iterations";
// PrimFunc attr (int64 B): the kernel's register budget assumes B blocks per SM (warp
// specialization with setmaxnreg): codegen prints __launch_bounds__(threads, B).
inline constexpr const char* kMinBlocksPerSmAttr = "tilec.min_blocks_per_sm";
// PrimFunc attr (string): why warp_specialize left a kernel's pipelined loop on the plain
// path (kernel.explain() reports it).
inline constexpr const char* kNotWarpSpecializedAttr = "tilec.not_warp_specialized";
// stage_output_tiles: why a result copy (fragment -> global) stays as written, "F: reason"
// per copy, "; "-separated (kernel.explain() reports it at the copy).
inline constexpr const char* kOutputNotStagedAttr = "tilec.output_not_staged";
// stage_output_tiles: a result tile staged over the last pipelined buffer of the kernel's loop
// ("staged tile: pipelined buffer"; FlashAttention-3's O over V). warp_specialize keeps it
// when it orders the two (a persistent kernel's producer refills the buffer only after the
// TMA store read the tile) or when they do not live at once (no tile loop), and drops it
// otherwise; plan_shared_memory places the staged tile at the buffer's offset.
inline constexpr const char* kStagedOverStagesAttr = "tilec.staged_over_stages";
// layout_inference: the bank-aware layouts it chose for shared buffers only T.Parallel loops
// touch, "name: choice, costs" per buffer, "; "-separated (kernel.explain() reports them).
inline constexpr const char* kSharedLayoutChoicesAttr = "tilec.shared_layout_choices";
// PrimFunc attr (int64 B): a persistent kernel (warp_specialize): its grid[0] counts tiles
// and the runtime launches at most SMs x B blocks (LaunchPlan::persistent_blocks_per_sm).
inline constexpr const char* kPersistentAttr = "tilec.persistent_blocks_per_sm";
// PrimFunc attr (string): how a persistent kernel's blocks take its tiles, for
// kernel.explain() ("strided", or "snake" when the tiles' step counts differ).
inline constexpr const char* kPersistentOrderAttr = "tilec.persistent_order";
// PrimFunc attr (int64 A): the arena's base must be A-byte aligned in the shared window
// (1024: swizzled TMA / wgmma tiles); the arena size includes A bytes of slack for it.
inline constexpr const char* kSmemBaseAlignAttr = "tilec.smem_base_align";
// Annotate(kSmemOffsetKey, Expr byte_offset) directly around the Allocate of a shared.dyn
// buffer: the buffer lives at tilec_smem + byte_offset.
inline constexpr const char* kSmemOffsetKey = "tilec.smem_offset";
// Annotate(kSwizzle128BKey, Buffer) anywhere in the kernel: that shared buffer holds
// swizzle atoms (128B, or the 64B / 32B ones TMA and wgmma use) and is placed at a
// 1024-byte aligned offset.
inline constexpr const char* kSwizzle128BKey = "tilec.swizzle_128b";
// Annotate(kAssumeAlignedPrefix + "16", Buffer) anywhere in the kernel: the kernel accesses
// that global parameter in units needing 16-byte aligned addresses (e.g. cp.async of 16
// bytes); the LaunchPlan makes the runtime check the tensor's base pointer accordingly.
// (Vector loads/stores are found by the plan builder itself.)
inline constexpr const char* kAssumeAlignedPrefix = "tilec.assume_aligned:";
// Annotate(kGemmFragmentWordsKey, int64 F) directly around the Evaluate of a tl.gemm_ss call
// (from T.gemm's lowering): the call's operand fragments take F 32-bit registers per
// thread (tl::gemm_detail::GemmSsCore::kFragWords), which overlap_gemm_mainloop needs to
// keep them in a local array across loop iterations. Dropped by that pass.
inline constexpr const char* kGemmFragmentWordsKey = "tilec.gemm_fragment_words";
// Annotate(kWgmmaAtomKey, std::vector<int64_t>{N, KIND}) around a tl.wgmma_gemm_* call: the
// call needs tl::WgmmaAtom<N, KIND> (one wgmma instruction), which codegen defines in the
// kernel source for exactly the atoms the kernel uses (src/target/cuda/wgmma_atoms.h).
inline constexpr const char* kWgmmaAtomKey = "tilec.wgmma_atom";

}  // namespace tilec::passes
