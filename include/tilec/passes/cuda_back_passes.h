// The second half of the CUDA pipeline: lowered IR (docs/LOWERED_IR.md) -> IR ready for
// CUDA codegen, plus the LaunchPlan. Run in this order; each file under src/passes/ opens
// with its full contract.
#pragma once

#include "tilec/ir/stmt.h"
#include "tilec/passes/pass.h"
#include "tilec/runtime/launch_plan.h"

namespace tilec::passes {

// Guards every global load/store not proved in bounds: stores get an If, loads a Select
// (0 out of bounds). Unrolled/vectorized loop nests get one hoisted check with a fast,
// unguarded copy and a guarded fallback. (src/passes/legalize_bounds.cc)
ir::PrimFunc legalize_bounds(const ir::PrimFunc& f, PassContext& ctx);

// For kind Vectorized with constant extent V -> vector accesses (Ramp indices, V lanes)
// when contiguous, aligned and V * element bytes is 4, 8 or 16; else kind Unrolled.
// Config "tl.disable_vectorize". (src/passes/vectorize.cc)
ir::PrimFunc vectorize(const ir::PrimFunc& f, PassContext& ctx);

// Multi-dimensional global accesses -> 1-D through the parameters' strides; parameters
// become 1-D buffers and the originals are kept in attr kUnflattenedParamsAttr.
// (src/passes/flatten_buffers.cc)
ir::PrimFunc flatten_buffers(const ir::PrimFunc& f, PassContext& ctx);

// Packs every shared.dyn buffer into one dynamic arena with lifetime reuse.
// (src/passes/plan_shared_memory.cc)
ir::PrimFunc plan_shared_memory(const ir::PrimFunc& f, PassContext& ctx);

// Inserts tl.syncthreads where shared memory accesses of different threads conflict.
// (src/passes/insert_syncs.cc)
ir::PrimFunc insert_syncs(const ir::PrimFunc& f, PassContext& ctx);

// Checks the host/device boundary (every variable the kernel uses is a parameter, a symbolic
// dimension or bound inside). (src/passes/split_host_device.cc)
ir::PrimFunc split_host_device(const ir::PrimFunc& f, PassContext& ctx);
// The LaunchPlan of a function that went through the passes above.
runtime::LaunchPlan build_launch_plan(const ir::PrimFunc& lowered);

// The passes above as pipeline entries, in order.
std::vector<Pass> cuda_back_passes();

// ---- attribute and annotation keys shared with the first half and codegen ----

// PrimFunc attr (LayoutMap): the global parameters as they were before flattening, in the
// order of the buffer parameters, each with the layout (logical index -> flat offset).
inline constexpr const char* kUnflattenedParamsAttr = "tilec.unflattened_params";
// PrimFunc attr (int64): bytes of the dynamic shared memory arena.
inline constexpr const char* kDynamicSharedBytesAttr = "tilec.dynamic_shared_bytes";
// Annotate(kSmemOffsetKey, Expr byte_offset) directly around the Allocate of a shared.dyn
// buffer: the buffer lives at tilec_smem + byte_offset.
inline constexpr const char* kSmemOffsetKey = "tilec.smem_offset";
// Annotate(kSwizzle128BKey, Buffer) anywhere in the kernel: that shared buffer holds
// 128-byte-swizzled atoms and is placed at a 1024-byte aligned offset.
inline constexpr const char* kSwizzle128BKey = "tilec.swizzle_128b";
// Annotate(kAssumeAlignedPrefix + "16", Buffer) anywhere in the kernel: the kernel accesses
// that global parameter in units needing 16-byte aligned addresses (e.g. cp.async of 16
// bytes); the LaunchPlan makes the runtime check the tensor's base pointer accordingly.
// (Vector loads/stores are found by the plan builder itself.)
inline constexpr const char* kAssumeAlignedPrefix = "tilec.assume_aligned:";

}  // namespace tilec::passes
