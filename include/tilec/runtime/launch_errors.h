// What a kernel call says when CUDA refuses it: the texts are built here, apart from the
// driver, so that tests check them on machines without a GPU.
//
// Faults: a kernel that faults (illegal address, trap, ...) leaves a *sticky* error in its
// CUDA context; every later launch or memory operation in that context fails, for the rest
// of the process (CUDA's rule). Launches are asynchronous, so the fault usually surfaces at a
// later call; the runtime therefore remembers which kernel it launched last on each device,
// and the message names it next to the kernel being launched.
#pragma once

#include <cstdint>
#include <string>

#include "tilec/ir/type.h"

namespace tilec::runtime {

// Whether `code` (a CUresult) is one of CUDA's sticky errors: the context that raised it
// can run nothing more.
bool is_sticky_cuda_error(int code);

struct LaunchFailure {
  std::string kernel;         // the kernel being launched
  int device = 0;
  std::string driver_error;   // e.g. "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (...)"
  bool sticky = false;
  std::string last_kernel;    // the kernel tilec launched last on the device before this one ("": none)
};
std::string launch_failure_message(const LaunchFailure& f);
std::string launch_failure_hint(const LaunchFailure& f);

// No CUDA driver or no GPU: `why` is what loading the driver said.
std::string no_driver_message(const std::string& kernel, const std::string& why);
// The way out the no-driver hints offer.
inline constexpr const char* kCpuTargetHint = "tilec.compile(..., target=\"cpu\") runs the program on the host";

// An output the runtime could not allocate: kernel, output, dtype, shape, bytes, device,
// then `cause` (the allocator's first line).
std::string output_allocation_message(const std::string& kernel, const std::string& output, ir::DataType dtype,
                                      const int64_t* shape, int rank, int device, const std::string& cause);
// "274877906944 bytes (256.0 GiB)".
std::string byte_size_text(int64_t bytes);

// A cooperative kernel (T.sync_grid) whose blocks do not all fit on the device at once: the
// launch would fail (or, with a barrier of one's own, hang). "" when grid[0] x grid[1] x grid[2]
// is at most sms x blocks_per_sm; otherwise the message names the kernel, the grid, the device
// and the limit, and cooperative_grid_hint says what to do.
struct CooperativeFit {
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1};
  int block_threads = 1;
  int64_t dynamic_shared_bytes = 0;
  int device = 0;
  std::string device_name;
  int sms = 0;            // multiprocessors of the device
  int blocks_per_sm = 0;  // cuOccupancyMaxActiveBlocksPerMultiprocessor for this kernel
};
std::string cooperative_grid_error(const CooperativeFit& f);
std::string cooperative_grid_hint(const CooperativeFit& f);

// The kernel tilec launched last on each device. Names are interned for the process (a
// launch records a pointer: one relaxed atomic store).
const std::string* intern_kernel_name(const std::string& name);
void note_launch(int device, const std::string* name);
std::string last_launched_kernel(int device);

}  // namespace tilec::runtime
