// The CUDA driver API, opened with dlopen("libcuda.so.1") on first use so that tilec
// loads and its CPU tests run on machines without a GPU. Entry points come from
// cuGetProcAddress (ABI of CUDA 12.0, legacy default stream). Every CUresult is checked;
// a failure is a UserError that names the call, the error name and its description.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilec/ir/type.h"
#include "tilec/support/diag.h"

namespace tilec::runtime {

constexpr int kTensorMapBytes = 128;  // sizeof(CUtensorMap)

// A failed driver call: the message names the call, the error's name and description;
// code() is the CUresult (launch_errors.h tells CUDA's sticky faults from other failures).
class CudaError : public UserError {
 public:
  CudaError(std::string message, int code) : UserError(std::move(message), SourceLoc{}, ""), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

using CuStream = void*;    // CUstream
using CuFunction = void*;  // CUfunction
using CuModule = void*;    // CUmodule

struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t cluster[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  bool cooperative = false;  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE (T.sync_grid)
};

class CudaDriver {
 public:
  // The process-wide driver; raises UserError when libcuda cannot be loaded.
  static CudaDriver& get();
  // Whether a driver can be loaded (never raises); `why` says what failed.
  static bool available(std::string* why = nullptr);

  int device_count();
  int compute_capability(int device);      // major * 10 + minor
  int max_shared_memory_optin(int device); // bytes per block with the opt-in attribute
  int multiprocessor_count(int device);    // SMs (cached)
  std::string device_name(int device);

  // Makes `device`'s primary context current on this thread; returns the previous
  // context (to hand to restore_context) or nullptr when nothing changed.
  void* make_current(int device);
  void restore_context(void* previous);

  // Loads a cubin into `device`'s primary context.
  CuModule load_module(int device, const std::vector<char>& cubin);
  void unload_module(int device, CuModule module);
  CuFunction get_function(CuModule module, const std::string& name);
  void set_max_dynamic_shared_memory(CuFunction f, int bytes);

  // cuLaunchKernelEx when a cluster is set or the launch is cooperative, cuLaunchKernel
  // otherwise.
  void launch(CuFunction f, const LaunchDims& dims, CuStream stream, void** params);

  // How many blocks of `f` (block_threads threads, dynamic_shared_bytes of dynamic shared
  // memory) one SM holds at once (cuOccupancyMaxActiveBlocksPerMultiprocessor).
  int max_active_blocks_per_sm(CuFunction f, int block_threads, size_t dynamic_shared_bytes);
  // How many clusters of `f` launched with `dims` (block, cluster, dynamic shared memory) the
  // device holds at once (cuOccupancyMaxActiveClusters; the grid is not used).
  int max_active_clusters(CuFunction f, const LaunchDims& dims);
  // Whether `device` supports cooperative launches (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH).
  bool supports_cooperative_launch(int device);

  // cuTensorMapEncodeTiled into the 128-byte (64-byte aligned) `map`: `rank` dimensions
  // innermost first, rank - 1 strides in bytes (dimension 1 on), the box, swizzle 0 none /
  // 1 32B / 2 64B / 3 128B; interleave none, L2 promotion 128 B, out of bounds reads zero.
  void encode_tensor_map(void* map, ir::DataType dtype, int rank, uint64_t address, const uint64_t* dims,
                         const uint64_t* strides_bytes, const uint32_t* box, int swizzle);

  void synchronize_stream(CuStream stream);
  void synchronize_device(int device);
  // Device memory helpers for C++ tests and tools (Python uses torch).
  uint64_t mem_alloc(int device, size_t bytes);
  void mem_free(int device, uint64_t ptr);
  void copy_to_device(int device, uint64_t dst, const void* src, size_t bytes);
  void copy_to_host(int device, void* dst, uint64_t src, size_t bytes);

  struct Api;  // function pointers, defined in driver.cc

 private:
  CudaDriver() = default;
  void* primary_context(int device);
  Api* api_ = nullptr;
};

}  // namespace tilec::runtime
