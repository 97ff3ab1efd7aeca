// Texts of failed kernel calls and the per-device last launched kernel (launch_errors.h).
#include "tilec/runtime/launch_errors.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>

namespace tilec::runtime {
namespace {

constexpr int kDevices = 64;
std::atomic<const std::string*> g_last_launched[kDevices] = {};

std::string device_text(int device) { return "cuda:" + std::to_string(device); }

}  // namespace

bool is_sticky_cuda_error(int code) {
  switch (code) {  // CUresult values (cuda.h), stable across CUDA versions
    case 700:      // CUDA_ERROR_ILLEGAL_ADDRESS
    case 702:      // CUDA_ERROR_LAUNCH_TIMEOUT
    case 710:      // CUDA_ERROR_ASSERT (a device-side assert)
    case 714:      // CUDA_ERROR_HARDWARE_STACK_ERROR
    case 715:      // CUDA_ERROR_ILLEGAL_INSTRUCTION (also a trap)
    case 716:      // CUDA_ERROR_MISALIGNED_ADDRESS
    case 717:      // CUDA_ERROR_INVALID_ADDRESS_SPACE
    case 718:      // CUDA_ERROR_INVALID_PC
    case 719:      // CUDA_ERROR_LAUNCH_FAILED
      return true;
    default:
      return false;
  }
}

std::string cooperative_grid_error(const CooperativeFit& f) {
  const int64_t blocks = int64_t(f.grid[0]) * f.grid[1] * f.grid[2];
  const int64_t limit = int64_t(f.sms) * f.blocks_per_sm;
  if (blocks <= limit) return "";
  std::string grid = "(" + std::to_string(f.grid[0]) + ", " + std::to_string(f.grid[1]) + ", " +
                     std::to_string(f.grid[2]) + ")";
  return "kernel '" + f.kernel + "' calls T.sync_grid(), so all of its blocks must be resident on the GPU at once "
         "(a cooperative launch), but its grid " + grid + " has " + std::to_string(blocks) + " blocks and " +
         device_text(f.device) + (f.device_name.empty() ? "" : " (" + f.device_name + ")") + " holds at most " +
         std::to_string(limit) + " of them: " + std::to_string(f.sms) + " SMs x " + std::to_string(f.blocks_per_sm) +
         " block(s) per SM for this kernel (" + std::to_string(f.block_threads) + " threads, " +
         std::to_string(f.dynamic_shared_bytes) + " bytes of dynamic shared memory per block)";
}

std::string cooperative_grid_hint(const CooperativeFit& f) {
  const int64_t limit = int64_t(f.sms) * f.blocks_per_sm;
  return "launch at most " + std::to_string(limit) +
         " blocks and loop over the work in waves (upstream's persistent form: T.Kernel(num_sms) with "
         "`for w in T.serial(T.ceildiv(total, num_sms))`), or give each block fewer threads or less shared memory";
}

std::string launch_failure_message(const LaunchFailure& f) {
  const std::string dev = device_text(f.device);
  if (!f.sticky) return "kernel '" + f.kernel + "' could not be launched on " + dev + ": " + f.driver_error;
  std::string text = "kernel '" + f.kernel + "' on " + dev + ": CUDA reports a fault on this device (" +
                     f.driver_error + "), and after such an error the CUDA context of " + dev +
                     " is unusable: no kernel or memory operation can run on it in this process any more";
  if (f.last_kernel.empty()) return text;
  if (f.last_kernel == f.kernel) {
    return text + ". The fault is in '" + f.kernel + "' (the last kernel tilec launched on " + dev +
           ") or in other work queued on the device since (kernels run asynchronously)";
  }
  return text + ". The last kernel tilec launched on " + dev + " was '" + f.last_kernel +
         "': the fault is most likely there (kernels run asynchronously, so a fault shows at a later call)";
}

std::string launch_failure_hint(const LaunchFailure& f) {
  if (!f.sticky) return "";
  return "restart the process; to find the faulting access, run it with TILEC_LAUNCH_BLOCKING=1 (each kernel "
         "call waits for the kernel, so the fault is raised by the call of the kernel that caused it) or under "
         "compute-sanitizer --tool memcheck";
}

std::string no_driver_message(const std::string& kernel, const std::string& why) {
  return "kernel '" + kernel + "' cannot run: " + why;
}

std::string byte_size_text(int64_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0, kGiB = 1024.0 * kMiB;
  char human[64] = "";
  if (bytes >= kGiB) std::snprintf(human, sizeof(human), " (%.1f GiB)", static_cast<double>(bytes) / kGiB);
  else if (bytes >= kMiB) std::snprintf(human, sizeof(human), " (%.1f MiB)", static_cast<double>(bytes) / kMiB);
  return std::to_string(bytes) + " bytes" + human;
}

std::string output_allocation_message(const std::string& kernel, const std::string& output, ir::DataType dtype,
                                      const int64_t* shape, int rank, int device, const std::string& cause) {
  std::string dims;
  int64_t numel = 1;
  bool overflow = false;
  for (int i = 0; i < rank; ++i) {
    dims += (i ? ", " : "") + std::to_string(shape[i]);
    overflow |= shape[i] > 0 && numel > INT64_MAX / 8 / shape[i];
    numel *= shape[i];
  }
  std::string size = overflow ? "more than 2^63 bytes" : byte_size_text(numel * dtype.bits() / 8);
  std::string text = "kernel '" + kernel + "': cannot allocate its output '" + output + "' (" + dtype.str() + "[" +
                     dims + "], " + size + ") on " + device_text(device);
  return cause.empty() ? text : text + ": " + cause;
}

const std::string* intern_kernel_name(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string>* names = new std::set<std::string>();  // lives for the process
  std::lock_guard<std::mutex> lock(mutex);
  return &*names->insert(name).first;
}

void note_launch(int device, const std::string* name) {
  if (device >= 0 && device < kDevices) g_last_launched[device].store(name, std::memory_order_relaxed);
}

std::string last_launched_kernel(int device) {
  if (device < 0 || device >= kDevices) return "";
  const std::string* name = g_last_launched[device].load(std::memory_order_relaxed);
  return name ? *name : "";
}

}  // namespace tilec::runtime
