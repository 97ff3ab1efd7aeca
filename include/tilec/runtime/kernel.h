// Kernel = compiled artifact (cubin + LaunchPlan) ready to launch.
//
// A call goes through three steps so that everything except the last runs without a GPU
// (and is tested that way, with fake tensor descriptors):
//   1. bind:     check each argument against the plan (kind, dtype, rank, shape with
//                symbolic dimensions bound from the first tensor that has them, strides,
//                span: offsets of an int32-indexed tensor must not wrap;
//                then, for all tensors, device and alignment) and bind the symbols. Outputs may be absent
//                (allocated by the caller afterwards from output_shape()).
//   2. finalize: evaluate the grid, pack the kernel parameters.
//   3. launch:   load the module on the tensors' device (once), cuLaunchKernel[Ex] (cooperative
//                for T.sync_grid, after checking that the grid fits on the device at once).
// Every argument error is a UserError naming the parameter and saying expected vs got.
// The hot path allocates nothing: all per-call state lives in a fixed-size BoundCall.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "tilec/runtime/compiler.h"
#include "tilec/runtime/driver.h"
#include "tilec/runtime/tma_map.h"

namespace tilec::runtime {

constexpr int kMaxParams = 64;      // function parameters (tensors + scalars)
constexpr int kMaxKernelArgs = 64;  // kernel argument slots
constexpr int kMaxSymbols = 32;     // symbolic dimensions
constexpr int kMaxRank = 8;         // tensor rank
constexpr int kMaxDevices = 64;
constexpr int kMaxTmaDescs = 16;    // TMA tensor maps per kernel (2 KiB of the 4 KiB parameter space)

enum class DeviceType : uint8_t { kCPU, kCUDA, kOther };

// What the caller knows about one tensor argument. Pointers are borrowed for the call.
struct TensorView {
  uint64_t data = 0;
  ir::DataType dtype;
  int ndim = 0;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;  // in elements; nullptr: contiguous row-major
  DeviceType device_type = DeviceType::kCUDA;
  int device_id = 0;
  const char* device_label = nullptr;  // for messages when not CUDA ("cpu", "mps", ...)
};

// One argument of a call, in the function's parameter order.
struct ArgValue {
  enum Kind : uint8_t { kMissing, kTensor, kInt, kFloat, kBool, kOther } kind = kMissing;
  TensorView tensor;
  int64_t int_value = 0;
  double float_value = 0;
  const char* type_name = nullptr;  // kOther: the argument's type, for the message
};

// Raised by finalize when a tensor argument cannot be addressed by one of the kernel's TMA
// tensor maps (alignment, strides). Callers that hold the kernel's program can run the
// variant compiled without TMA instead (the Python binding does, with a warning).
class TmaArgumentError : public UserError {
 public:
  using UserError::UserError;
};

// Per-call state, filled by bind/finalize.
struct BoundCall {
  int64_t symbol_values[kMaxSymbols];
  int8_t symbol_bound_by[kMaxSymbols];  // parameter position that bound it, -1: unbound
  int8_t symbol_bound_dim[kMaxSymbols];  // its dimension (-1: a scalar parameter)
  uint64_t arg_storage[kMaxKernelArgs];
  void* arg_ptrs[kMaxKernelArgs];
  alignas(64) unsigned char tma_maps[kMaxTmaDescs][kTensorMapBytes];  // encoded at finalize
  LaunchDims dims;
  int device = -1;       // the tensors' CUDA device (-1: none seen yet)
  int device_param = -1; // the parameter that set `device`
  bool empty_grid = false;
  // finalize checks TMA tensors against the tensor map's rules without encoding the maps and
  // skips what asks the driver (AotKernel::check: no GPU needed).
  bool check_only = false;
};

class Kernel {
 public:
  // Checks the plan (check_launch_plan and the fixed limits above).
  explicit Kernel(CompiledArtifact artifact);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  const CompiledArtifact& artifact() const { return artifact_; }
  const LaunchPlan& plan() const { return artifact_.plan; }
  int num_params() const { return static_cast<int>(artifact_.plan.param_order.size()); }
  int num_outputs() const { return num_outputs_; }
  // "add(A: float16[m, 1024], n: int32) -> C: float16[m, 1024]"
  std::string signature() const;
  // A few lines: kernel name, grid/block/cluster, shared memory, registers, arguments.
  std::string summary() const;

  // Raises UserError unless num_args is num_params() or num_params() - num_outputs().
  void check_count(int num_args) const;
  // Step 1. `args` holds num_params() entries in parameter order; outputs may be
  // kMissing when `outputs_optional`. Raises UserError on the first bad argument.
  void bind(const ArgValue* args, BoundCall& call, bool outputs_optional) const;
  // Shape of the output at parameter position `param`, from the bound symbols. Raises
  // UserError if a dimension's symbol is bound by no input.
  int output_shape(int param, const BoundCall& call, int64_t* shape) const;
  // Validates one tensor against parameter `param` (used for outputs allocated after bind).
  void check_tensor(int param, const TensorView& t, BoundCall& call) const;
  // Step 2: every symbol must be bound and every tensor present.
  void finalize(const ArgValue* args, BoundCall& call) const;
  // Step 3. A driver failure is a UserError naming the kernel; after a fault (a sticky
  // error) it says that the device's context is unusable and which kernel ran last there.
  void launch(const BoundCall& call, CuStream stream) const;
  // All three, for callers that pass every argument.
  void operator()(const ArgValue* args, int num_args, CuStream stream) const;

  // Loads the module on `device` now (launch does it on first use).
  void prepare(int device) const;

  // Parameter position -> tensor index or scalar index (see LaunchPlan::param_order).
  bool param_is_tensor(int param) const { return artifact_.plan.param_order[param].first; }
  int param_index(int param) const { return artifact_.plan.param_order[param].second; }
  const std::string& param_name(int param) const;

 private:
  [[noreturn]] void arg_error(int param, const std::string& message, const std::string& hint = "") const;
  void bind_tensor_structure(int param, const TensorView& t, BoundCall& call) const;
  void check_tensor_placement(int param, const TensorView& t, BoundCall& call) const;
  void bind_scalar(int param, const ArgValue& a, BoundCall& call) const;
  [[noreturn]] void span_error(int param, const int64_t* shape, const int64_t* strides, int rank) const;
  std::string describe_param(int param) const;
  std::string dim_text(const DimSpec& d) const;
  int symbol_index(const std::string& name) const;
  void* function_for(int device) const;
  // A cooperative kernel's grid must fit on `device` at once (UserError otherwise).
  void check_cooperative_fit(const BoundCall& call, int device) const;
  // Checks the call's tensor against TMA map `index`'s rules (TmaArgumentError), then encodes
  // the map (or takes it from the cache) into `out`; null `out`: the check only.
  void encode_tma(int index, const ArgValue* args, void* out) const;
  // persistent_limit_ for `device` of the loaded function `f`.
  int64_t persistent_limit(CudaDriver& driver, void* f, int device) const;

  CompiledArtifact artifact_;
  const std::string* launch_name_ = nullptr;  // the kernel's name, interned (launch_errors.h)
  bool launch_blocking_ = false;              // TILEC_LAUNCH_BLOCKING when the kernel was created
  int num_outputs_ = 0;
  // Symbol index of each tensor's dims / strides (-1: constant), precomputed for speed.
  std::vector<std::vector<int>> shape_symbol_, stride_symbol_;
  std::vector<int> scalar_symbol_;   // symbol bound by each scalar param, or -1
  std::vector<int> arg_symbol_;      // symbol index of each kSymbol kernel arg
  std::vector<int> tensor_param_, scalar_param_;  // tensor / scalar index -> parameter position
  mutable std::atomic<void*> functions_[kMaxDevices] = {};
  // Cooperative kernels (plan().cooperative): how many blocks of this kernel each device's SMs
  // hold at once, times the SM count (set by prepare with the function).
  mutable int64_t cooperative_limit_[kMaxDevices] = {};
  // Persistent kernels (plan().persistent_blocks_per_sm): the most blocks worth launching on each
  // device — the SM count times the blocks per SM, or with a cluster the clusters the device holds
  // at once times their size (set by prepare with the function).
  mutable int64_t persistent_limit_[kMaxDevices] = {};
  mutable void* modules_[kMaxDevices] = {};
  mutable std::mutex load_mutex_;
  mutable TmaMapCache tma_cache_;
};

// Parses "sm_90a" -> (90, true). Raises UserError on other spellings.
std::pair<int, bool> parse_sm_arch(const std::string& arch);
// Whether a cubin for `arch` (arch-specific when `specific`) runs on a device of compute
// capability `cc` (major * 10 + minor).
bool cubin_runs_on(int arch, bool specific, int cc);

}  // namespace tilec::runtime
