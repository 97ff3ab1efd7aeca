// T.sync_grid(): a barrier over every thread of every block of the grid.
//
// Why cooperative groups and not a barrier of our own: a grid barrier needs a counter in
// global memory that every launch finds in a known state. The driver already keeps one per
// cooperative launch (the grid workspace, handed to the kernel in environment registers) and
// cooperative_groups::this_grid().sync() is its documented user: a block barrier, then one
// thread per block arrives on the workspace counter with a release fence and waits for the
// generation to change with an acquire fence, then a block barrier again — so every write of
// any thread before the barrier is visible to every thread after it. Our own counter would need
// a workspace argument the runtime allocates, resets and keeps per stream. The header compiles
// under NVRTC without -rdc (since CUDA 11 the grid barrier is inline code, no device runtime) for
// sm_80 and sm_90a; _CG_LIMIT_INCLUDED_DEPENDENCIES keeps it from pulling libcu++ in (an NVRTC
// compile stays well under a second). It is only correct in a cooperative launch, which the
// runtime does for every kernel that calls it (LaunchPlan::cooperative), after checking that all
// of its blocks fit on the GPU at once.
#pragma once

#ifndef _CG_LIMIT_INCLUDED_DEPENDENCIES
#define _CG_LIMIT_INCLUDED_DEPENDENCIES
#endif
#include <cooperative_groups.h>

namespace tl {

TL_DEVICE void sync_grid() { cooperative_groups::this_grid().sync(); }

}  // namespace tl
