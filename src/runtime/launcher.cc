// Kernel: argument validation, symbol binding, parameter packing and launch (see
// include/tilec/runtime/kernel.h for the three steps).
//
// Input: a CompiledArtifact whose plan passes check_launch_plan. Per call: one ArgValue
// per parameter. Output: a launch on the given stream, or a UserError that names the
// parameter and says expected vs got, raised before anything reaches the GPU.
// Checks run in this order per tensor: kind, dtype, rank, shape, strides, span (an
// int32-indexed tensor must span fewer than 2^31 elements), device, alignment; a cooperative
// kernel (T.sync_grid) must fit on the device at once (checked at launch, from the occupancy the
// driver reports when the module is loaded); symbols are bound by the first parameter (in parameter order) that has
// them. No allocation and no string formatting happen unless an error is raised.
#include <cstdint>
#include <cstring>
#include <sstream>

#include "tilec/ir/printer.h"
#include "tilec/runtime/kernel.h"
#include "tilec/runtime/launch_errors.h"
#include "tilec/runtime/plan_text.h"
#include "tilec/support/diag.h"
#include "tilec/support/knobs.h"

namespace tilec::runtime {
namespace {

std::string shape_text(const int64_t* shape, int ndim) {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < ndim; ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

const char* kind_text(const ArgValue& a) {
  switch (a.kind) {
    case ArgValue::kMissing: return "nothing";
    case ArgValue::kTensor: return "a tensor";
    case ArgValue::kInt: return "an int";
    case ArgValue::kFloat: return "a float";
    case ArgValue::kBool: return "a bool";
    case ArgValue::kOther: return a.type_name ? a.type_name : "an object of another type";
  }
  return "?";
}

uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exponent = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1), midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN stays NaN
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

bool int_fits(ir::DataType t, int64_t v) {
  if (t.bits() >= 64) return t.is_int() || v >= 0;
  if (t.is_uint()) return v >= 0 && v < (int64_t(1) << t.bits());
  int64_t limit = int64_t(1) << (t.bits() - 1);
  return v >= -limit && v < limit;
}

}  // namespace

std::pair<int, bool> parse_sm_arch(const std::string& arch) {
  auto bad = [&] { throw_user_error("unknown GPU architecture '" + arch + "'", {}, "expected a form like sm_80 or sm_90a"); };
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5) bad();
  std::string digits = arch.substr(3);
  bool specific = false;
  if (!digits.empty() && digits.back() == 'a') {
    specific = true;
    digits.pop_back();
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) bad();
  return {std::stoi(digits), specific};
}

bool cubin_runs_on(int arch, bool specific, int cc) {
  if (specific) return cc == arch;
  return cc / 10 == arch / 10 && cc >= arch;
}

Kernel::Kernel(CompiledArtifact artifact) : artifact_(std::move(artifact)) {
  const LaunchPlan& p = artifact_.plan;
  check_launch_plan(p);
  launch_name_ = intern_kernel_name(p.kernel_name);
  launch_blocking_ = knobs::launch_blocking();
  auto limit = [&](size_t n, int max, const char* what) {
    TILEC_USER_CHECK(n <= static_cast<size_t>(max), SourceLoc{}, "split the kernel or pack arguments into tensors")
        << "kernel '" << p.kernel_name << "' has " << n << " " << what << "; at most " << max << " are supported";
  };
  limit(p.param_order.size(), kMaxParams, "parameters");
  limit(p.kernel_args.size(), kMaxKernelArgs, "kernel arguments");
  limit(p.symbols.size(), kMaxSymbols, "symbolic dimensions");
  limit(p.tma_descs.size(), kMaxTmaDescs, "TMA tensor maps");
  tensor_param_.assign(p.tensors.size(), -1);
  scalar_param_.assign(p.scalars.size(), -1);
  for (size_t pos = 0; pos < p.param_order.size(); ++pos) {
    auto [is_tensor, index] = p.param_order[pos];
    (is_tensor ? tensor_param_ : scalar_param_)[index] = static_cast<int>(pos);
  }
  for (const auto& t : p.tensors) {
    limit(t.shape.size(), kMaxRank, "tensor dimensions");
    num_outputs_ += t.is_output ? 1 : 0;
    std::vector<int> dims, strides;
    for (const auto& d : t.shape) dims.push_back(d.symbol.empty() ? -1 : symbol_index(d.symbol));
    for (const auto& d : t.strides) strides.push_back(d.symbol.empty() ? -1 : symbol_index(d.symbol));
    shape_symbol_.push_back(std::move(dims));
    stride_symbol_.push_back(std::move(strides));
  }
  for (const auto& s : p.scalars) scalar_symbol_.push_back(s.dtype.is_integer() ? symbol_index(s.name) : -1);
  for (const auto& a : p.kernel_args) arg_symbol_.push_back(a.kind == KernelArg::kSymbol ? symbol_index(a.symbol) : -1);
  parse_sm_arch(artifact_.target.empty() ? "sm_80" : artifact_.target);  // reject bad spellings early
}

Kernel::~Kernel() {
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!modules_[d] || !CudaDriver::available()) continue;
    try {
      CudaDriver::get().unload_module(d, modules_[d]);
    } catch (...) {
      // At process exit the driver may already be shut down; nothing to free then.
    }
  }
}

int Kernel::symbol_index(const std::string& name) const {
  const auto& symbols = artifact_.plan.symbols;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i] == name) return static_cast<int>(i);
  }
  return -1;
}

const std::string& Kernel::param_name(int param) const {
  const LaunchPlan& p = artifact_.plan;
  return param_is_tensor(param) ? p.tensors[param_index(param)].name : p.scalars[param_index(param)].name;
}

std::string Kernel::dim_text(const DimSpec& d) const { return dim_spec_text(d); }

std::string Kernel::describe_param(int param) const {
  const LaunchPlan& p = artifact_.plan;
  std::ostringstream os;
  if (!param_is_tensor(param)) {
    const auto& s = p.scalars[param_index(param)];
    os << s.name << ": " << s.dtype.str();
    return os.str();
  }
  const auto& t = p.tensors[param_index(param)];
  os << t.name << ": " << t.dtype.str() << '[';
  for (size_t i = 0; i < t.shape.size(); ++i) os << (i ? ", " : "") << dim_text(t.shape[i]);
  os << ']';
  return os.str();
}

std::string Kernel::signature() const {
  std::ostringstream os, outs;
  os << artifact_.plan.kernel_name << '(';
  bool first = true, first_out = true;
  for (int i = 0; i < num_params(); ++i) {
    bool out = param_is_tensor(i) && artifact_.plan.tensors[param_index(i)].is_output;
    if (out) {
      outs << (first_out ? "" : ", ") << describe_param(i);
      first_out = false;
    } else {
      os << (first ? "" : ", ") << describe_param(i);
      first = false;
    }
  }
  os << ')';
  if (!first_out) os << " -> " << outs.str();
  return os.str();
}

std::string Kernel::summary() const {
  const LaunchPlan& p = artifact_.plan;
  std::ostringstream os;
  os << "kernel " << signature() << "\n  target " << artifact_.target << ", grid (";
  for (size_t i = 0; i < p.grid.size(); ++i) os << (i ? ", " : "") << ir::script(p.grid[i]);
  os << "), block (" << p.block[0] << ", " << p.block[1] << ", " << p.block[2] << ")";
  if (p.cluster[0] * p.cluster[1] * p.cluster[2] > 1) {
    os << ", cluster (" << p.cluster[0] << ", " << p.cluster[1] << ", " << p.cluster[2] << ")";
  }
  if (p.cooperative) os << ", cooperative (T.sync_grid: every block resident at once)";
  os << "\n  shared memory: " << p.dynamic_shared_bytes << " B dynamic, " << artifact_.ptxas.static_shared_bytes
     << " B static; registers: " << artifact_.ptxas.registers << "; spills: " << artifact_.ptxas.spill_stores_bytes
     << " B stores, " << artifact_.ptxas.spill_loads_bytes << " B loads\n";
  return os.str();
}

void Kernel::arg_error(int param, const std::string& message, const std::string& hint) const {
  throw_user_error("argument '" + param_name(param) + "' of kernel " + signature() + ": " + message, {}, hint);
}

void Kernel::check_count(int num_args) const {
  int all = num_params(), inputs = all - num_outputs_;
  if (num_args == all || num_args == inputs) return;
  std::ostringstream os;
  os << "kernel " << signature() << " takes " << inputs << " argument" << (inputs == 1 ? "" : "s");
  if (num_outputs_ > 0) os << " (or " << all << " with the outputs)";
  os << ", got " << num_args;
  throw_user_error(os.str(), {});
}

void Kernel::bind(const ArgValue* args, BoundCall& call, bool outputs_optional) const {
  const LaunchPlan& p = artifact_.plan;
  for (size_t i = 0; i < p.symbols.size(); ++i) call.symbol_bound_by[i] = -1;
  call.device = -1;
  call.device_param = -1;
  call.empty_grid = false;
  // Two passes: what the tensors are (dtype, rank, shape, strides) for every parameter
  // first, then where they are (device, alignment), so a wrong shape is reported as
  // such even when the tensor is also on the wrong device.
  for (int pos = 0; pos < num_params(); ++pos) {
    const ArgValue& a = args[pos];
    if (param_is_tensor(pos)) {
      const TensorParam& tp = p.tensors[param_index(pos)];
      if (a.kind == ArgValue::kMissing && outputs_optional && tp.is_output) continue;
      if (a.kind != ArgValue::kTensor) arg_error(pos, std::string("expected a tensor, got ") + kind_text(a));
      bind_tensor_structure(pos, a.tensor, call);
    } else {
      bind_scalar(pos, a, call);
    }
  }
  for (int pos = 0; pos < num_params(); ++pos) {
    if (param_is_tensor(pos) && args[pos].kind == ArgValue::kTensor) check_tensor_placement(pos, args[pos].tensor, call);
  }
}

void Kernel::check_tensor(int param, const TensorView& t, BoundCall& call) const {
  bind_tensor_structure(param, t, call);
  check_tensor_placement(param, t, call);
}

void Kernel::bind_tensor_structure(int pos, const TensorView& t, BoundCall& call) const {
  const int ti = param_index(pos);
  const TensorParam& tp = artifact_.plan.tensors[ti];
  const int rank = static_cast<int>(tp.shape.size());
  if (t.dtype != tp.dtype) arg_error(pos, "expected dtype " + tp.dtype.str() + ", got " + t.dtype.str());
  if (t.ndim != rank) {
    arg_error(pos, "expected a " + std::to_string(rank) + "-d tensor (" + describe_param(pos) + "), got a " +
                       std::to_string(t.ndim) + "-d tensor of shape " + shape_text(t.shape, t.ndim));
  }
  // Binds symbol `sym` to `value` / `scale` or checks it against the earlier binding.
  auto bind_symbol = [&](int sym, int dim, int64_t value, int64_t scale, const char* what) {
    if (scale != 1) {
      const std::string name = artifact_.plan.symbols[sym];
      if (value % scale != 0) {
        arg_error(pos, std::string(what) + " " + std::to_string(dim) + " is " + std::to_string(scale) + " * " + name +
                           ", so it must be a multiple of " + std::to_string(scale) + "; got " + std::to_string(value) +
                           (what[0] == 'd' ? " (shape " + shape_text(t.shape, t.ndim) + ")" : ""));
      }
      if (call.symbol_bound_by[sym] >= 0 && call.symbol_values[sym] * scale != value) {
        int by = call.symbol_bound_by[sym];
        arg_error(pos, std::string(what) + " " + std::to_string(dim) + " is " + std::to_string(scale) + " * " + name +
                           " with " + name + " = " + std::to_string(call.symbol_values[sym]) + " (set by argument '" +
                           param_name(by) + "'), so " + std::to_string(scale * call.symbol_values[sym]) + "; got " +
                           std::to_string(value) + (what[0] == 'd' ? " (shape " + shape_text(t.shape, t.ndim) + ")" : ""));
      }
      value /= scale;
    }
    if (call.symbol_bound_by[sym] < 0) {
      const ir::DataType st = artifact_.plan.symbol_vars[sym]->dtype;
      if (!int_fits(st, value)) {
        arg_error(pos, std::string(what) + " " + std::to_string(dim) + " = " + std::to_string(value) +
                           " does not fit in the symbol '" + artifact_.plan.symbols[sym] + "', which has type " +
                           st.str(), "declare it 64-bit, " + artifact_.plan.symbols[sym] + " = T.dynamic(\"" +
                                         artifact_.plan.symbols[sym] + "\", \"int64\"), or split the tensor");
      }
      call.symbol_values[sym] = value;
      call.symbol_bound_by[sym] = static_cast<int8_t>(pos);
      call.symbol_bound_dim[sym] = static_cast<int8_t>(dim);
      return;
    }
    if (call.symbol_values[sym] == value) return;
    int by = call.symbol_bound_by[sym];
    std::string origin = "argument '" + param_name(by) + "'" +
                         (call.symbol_bound_dim[sym] >= 0 ? " dimension " + std::to_string(call.symbol_bound_dim[sym])
                                                          : std::string());
    arg_error(pos, std::string(what) + " " + std::to_string(dim) + " is the symbol '" + artifact_.plan.symbols[sym] +
                       "' = " + std::to_string(call.symbol_values[sym]) + " (set by " + origin + "), got " +
                       std::to_string(value) + (what[0] == 'd' ? " (shape " + shape_text(t.shape, t.ndim) + ")" : ""));
  };
  int64_t numel = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t actual = t.shape[i];
    numel *= actual;
    int sym = shape_symbol_[ti][i];
    if (sym >= 0) {
      bind_symbol(sym, i, actual, tp.shape[i].scale, "dimension");
    } else if (actual != tp.shape[i].value) {
      arg_error(pos, "dimension " + std::to_string(i) + ": expected " + std::to_string(tp.shape[i].value) + ", got " +
                         std::to_string(actual) + " (expected shape " + describe_param(pos).substr(tp.name.size() + 2) +
                         ", got " + shape_text(t.shape, t.ndim) + ")");
    }
  }
  // Strides: row-major unless the plan lists them. Size-1 and empty dims have no stride
  // that matters, so they are not compared (frameworks report anything there).
  if (numel > 0) {
    int64_t row_major = 1;
    int64_t expected_rm[kMaxRank];
    for (int i = rank - 1; i >= 0; --i) {
      expected_rm[i] = row_major;
      row_major *= t.shape[i];
    }
    for (int i = 0; i < rank; ++i) {
      int64_t actual = t.strides ? t.strides[i] : expected_rm[i];
      if (tp.strides.empty()) {
        if (t.shape[i] != 1 && actual != expected_rm[i]) {
          arg_error(pos,
                    "expected a contiguous (row-major) tensor, got strides " + shape_text(t.strides, rank) +
                        " for shape " + shape_text(t.shape, rank) + " (contiguous strides are " +
                        shape_text(expected_rm, rank) + ")",
                    "pass tensor.contiguous()");
        }
        continue;
      }
      int sym = stride_symbol_[ti][i];
      if (sym >= 0) {
        bind_symbol(sym, i, actual, tp.strides[i].scale, "stride");
      } else if (t.shape[i] != 1 && actual != tp.strides[i].value) {
        arg_error(pos, "stride " + std::to_string(i) + ": expected " + std::to_string(tp.strides[i].value) + ", got " +
                           std::to_string(actual) + " (strides " +
                           (t.strides ? shape_text(t.strides, rank) : shape_text(expected_rm, rank)) + ")");
      }
    }
  }
  // The kernel's offsets for this tensor are int32: they must not wrap. Row-major plans
  // compute strides from the shape, so the span is the element count there.
  if (tp.index_bits == 32) {
    const int64_t* strides = tp.strides.empty() ? nullptr : t.strides;
    if (tensor_span(rank, t.shape, strides) > kMaxInt32Span) span_error(pos, t.shape, strides, rank);
  }
}

void Kernel::span_error(int pos, const int64_t* shape, const int64_t* strides, int rank) const {
  const int ti = param_index(pos);
  const TensorParam& tp = artifact_.plan.tensors[ti];
  const int64_t span = tensor_span(rank, shape, strides);
  std::string got = span == INT64_MAX ? "more than 2^63" : std::to_string(span);
  std::string layout = "shape " + shape_text(shape, rank);
  if (strides) layout += ", strides " + shape_text(strides, rank);
  // The hint names this tensor's 32-bit symbols: declaring them int64 makes the kernel
  // index the tensor with int64.
  std::string narrow;
  for (const auto* dims : {&tp.shape, &tp.strides}) {
    for (const auto& d : *dims) {
      if (d.symbol.empty() || narrow.find("\"" + d.symbol + "\"") != std::string::npos) continue;
      int sym = symbol_index(d.symbol);
      if (sym >= 0 && artifact_.plan.symbol_vars[sym]->dtype.bits() < 64) {
        narrow += (narrow.empty() ? "" : ", ") + d.symbol + " = T.dynamic(\"" + d.symbol + "\", \"int64\")";
      }
    }
  }
  arg_error(pos,
            "expected a tensor whose element offsets span at most 2147483647 elements (2^31 - 1), since the kernel "
            "indexes '" + tp.name + "' with int32 arithmetic; got one spanning " + got + " elements (" + layout + ")",
            "split the tensor into pieces of fewer than 2^31 elements, or compile the kernel with 64-bit indexing "
            "for it" + (narrow.empty() ? std::string(" (launch plan text: index=int64)")
                                      : ": declare its dimensions 64-bit, " + narrow) +
                "; or compile with pass_configs={\"tl.config_index_bitwidth\": 64}");
}

void Kernel::check_tensor_placement(int pos, const TensorView& t, BoundCall& call) const {
  const TensorParam& tp = artifact_.plan.tensors[param_index(pos)];
  int64_t numel = 1;
  for (int i = 0; i < t.ndim; ++i) numel *= t.shape[i];
  if (t.device_type != DeviceType::kCUDA) {
    std::string why, hint = "move it to the GPU, e.g. tensor.cuda()";
    if (!CudaDriver::available(&why)) {
      hint += "; but this machine has no usable CUDA driver (" + why + "), so no kernel can run here: " + kCpuTargetHint;
    }
    arg_error(pos, std::string("expected a CUDA tensor, got a tensor on ") + (t.device_label ? t.device_label : "the host"),
              hint);
  }
  if (t.data == 0 && numel > 0) {
    arg_error(pos, "the data pointer is null, but the tensor has " + std::to_string(numel) + " elements",
              "pass a tensor with storage (a null pointer is only valid for an empty tensor)");
  }
  if (call.device < 0) {
    call.device = t.device_id;
    call.device_param = pos;
  } else if (call.device != t.device_id) {
    arg_error(pos, "all tensors must be on one device: '" + param_name(call.device_param) + "' is on cuda:" +
                       std::to_string(call.device) + ", this one on cuda:" + std::to_string(t.device_id));
  }
  if (tp.alignment_bytes > 1 && numel > 0 && t.data % static_cast<uint64_t>(tp.alignment_bytes) != 0) {
    std::ostringstream os;
    os << "the data pointer 0x" << std::hex << t.data << std::dec << " is not aligned to " << tp.alignment_bytes
       << " bytes, which the kernel relies on (vectorized or asynchronous copies)";
    arg_error(pos, os.str(), "pass a tensor that starts at an aligned address, e.g. tensor.clone()");
  }
}

void Kernel::bind_scalar(int pos, const ArgValue& a, BoundCall& call) const {
  const ScalarParam& sp = artifact_.plan.scalars[param_index(pos)];
  const ir::DataType t = sp.dtype;
  bool ok = false;
  if (t.is_handle()) {
    // An address (`a_ptr: T.ptr`): a tensor's data pointer on the call's device, or an integer.
    if (a.kind == ArgValue::kTensor) {
      if (a.tensor.device_type != DeviceType::kCUDA) {
        arg_error(pos, std::string("a pointer parameter takes a CUDA tensor or an integer address, got a tensor on ") +
                           a.tensor.device_label,
                  "move the tensor to the GPU (tensor.cuda())");
      }
      return;
    }
    if (a.kind != ArgValue::kInt)
      arg_error(pos, std::string("expected a tensor or an integer address, got ") + kind_text(a));
    if (a.int_value < 0) arg_error(pos, "the address " + std::to_string(a.int_value) + " is negative");
    return;
  }
  if (t.is_integer()) ok = a.kind == ArgValue::kInt || a.kind == ArgValue::kBool;
  else if (t.is_float()) ok = a.kind == ArgValue::kInt || a.kind == ArgValue::kFloat || a.kind == ArgValue::kBool;
  else if (t.is_bool()) ok = a.kind == ArgValue::kBool || a.kind == ArgValue::kInt;
  if (!ok) arg_error(pos, "expected a scalar of type " + t.str() + ", got " + kind_text(a));
  if (t.is_integer() && !int_fits(t, a.int_value)) {
    arg_error(pos, "the value " + std::to_string(a.int_value) + " does not fit in " + t.str());
  }
  int sym = scalar_symbol_[param_index(pos)];
  if (sym < 0) return;
  if (call.symbol_bound_by[sym] < 0) {
    call.symbol_values[sym] = a.int_value;
    call.symbol_bound_by[sym] = static_cast<int8_t>(pos);
    call.symbol_bound_dim[sym] = -1;
  } else if (call.symbol_values[sym] != a.int_value) {
    arg_error(pos, "the symbol '" + sp.name + "' is " + std::to_string(call.symbol_values[sym]) + " (set by argument '" +
                       param_name(call.symbol_bound_by[sym]) + "'), got " + std::to_string(a.int_value));
  }
}

int Kernel::output_shape(int param, const BoundCall& call, int64_t* shape) const {
  const int ti = param_index(param);
  const TensorParam& tp = artifact_.plan.tensors[ti];
  for (size_t i = 0; i < tp.shape.size(); ++i) {
    int sym = shape_symbol_[ti][i];
    if (sym < 0) {
      shape[i] = tp.shape[i].value;
    } else if (call.symbol_bound_by[sym] >= 0) {
      shape[i] = call.symbol_values[sym] * tp.shape[i].scale;
    } else {
      arg_error(param,
                "cannot allocate this output: its dimension " + std::to_string(i) + " is the symbol '" +
                    tp.shape[i].symbol + "', which no input determines",
                "pass the output tensor explicitly");
    }
  }
  // Refuse before the caller allocates a tensor the kernel cannot index.
  const int rank = static_cast<int>(tp.shape.size());
  if (tp.index_bits == 32 && tp.strides.empty() && tensor_span(rank, shape, nullptr) > kMaxInt32Span) {
    span_error(param, shape, nullptr, rank);
  }
  return rank;
}

void Kernel::finalize(const ArgValue* args, BoundCall& call) const {
  const LaunchPlan& p = artifact_.plan;
  for (size_t s = 0; s < p.symbols.size(); ++s) {
    if (call.symbol_bound_by[s] < 0) {
      throw_user_error("kernel " + signature() + ": the symbol '" + p.symbols[s] + "' is not determined by any argument",
                       {}, "every symbolic dimension must appear in a tensor argument's shape or strides");
    }
  }
  int64_t grid[3] = {1, 1, 1};
  for (size_t i = 0; i < p.grid.size(); ++i) {
    grid[i] = eval_int_unchecked(p.grid[i], p.symbol_vars, call.symbol_values);
    if (grid[i] < 0 || grid[i] > (i == 0 ? int64_t(0x7fffffff) : int64_t(65535))) {
      throw_user_error("kernel " + signature() + ": grid dimension " + std::to_string(i) + " evaluates to " +
                           std::to_string(grid[i]) + ", outside CUDA's range [0, " + (i == 0 ? "2^31-1" : "65535") + "]",
                       {}, "check the sizes of the arguments");
    }
  }
  call.empty_grid = grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
  if (p.persistent_blocks_per_sm > 0 && !call.empty_grid && !call.check_only) {
    // A persistent kernel: as many blocks as fit at once (whole clusters, the grid's first
    // dimension holds them one after another); each loops over its share of tiles. launch()
    // lowers it further to what the loaded function's occupancy allows.
    const int64_t sms = CudaDriver::get().multiprocessor_count(call.device < 0 ? 0 : call.device);
    const int64_t limit = sms * p.persistent_blocks_per_sm;
    grid[0] = std::min<int64_t>(grid[0], std::max<int64_t>(p.cluster[0], limit - limit % p.cluster[0]));
  }
  for (int i = 0; i < 3; ++i) {
    call.dims.grid[i] = static_cast<uint32_t>(grid[i]);
    call.dims.block[i] = static_cast<uint32_t>(p.block[i]);
    call.dims.cluster[i] = static_cast<uint32_t>(p.cluster[i]);
    if (!call.empty_grid && grid[i] % p.cluster[i] != 0) {
      throw_user_error("kernel " + signature() + ": grid dimension " + std::to_string(i) + " (" + std::to_string(grid[i]) +
                           ") is not a multiple of the cluster dimension (" + std::to_string(p.cluster[i]) + ")",
                       {}, "choose sizes whose block count is a multiple of the cluster size");
    }
  }
  call.dims.dynamic_shared_bytes = static_cast<uint32_t>(p.dynamic_shared_bytes);
  call.dims.cooperative = p.cooperative;
  for (size_t j = 0; j < p.kernel_args.size(); ++j) {
    const KernelArg& ka = p.kernel_args[j];
    uint64_t& slot = call.arg_storage[j];
    slot = 0;
    call.arg_ptrs[j] = &slot;
    switch (ka.kind) {
      case KernelArg::kTensorData: {
        const ArgValue& a = args[tensor_param_[ka.index]];
        TILEC_ICHECK(a.kind == ArgValue::kTensor) << "tensor '" << p.tensors[ka.index].name << "' missing at finalize";
        slot = a.tensor.data;
        break;
      }
      case KernelArg::kScalar: {
        const ArgValue& a = args[scalar_param_[ka.index]];
        const ir::DataType t = p.scalars[ka.index].dtype;
        double fv = a.kind == ArgValue::kFloat ? a.float_value : static_cast<double>(a.int_value);
        if (t.is_handle()) {
          slot = a.kind == ArgValue::kTensor ? a.tensor.data : static_cast<uint64_t>(a.int_value);
        } else if (t.is_float()) {
          if (t.bits() == 64) {
            std::memcpy(&slot, &fv, 8);
          } else if (t.bits() == 32) {
            float f = static_cast<float>(fv);
            std::memcpy(&slot, &f, 4);
          } else if (t.code() == ir::TypeCode::kFloat && t.bits() == 16) {
            uint16_t h = float_to_half_bits(static_cast<float>(fv));
            std::memcpy(&slot, &h, 2);
          } else if (t.code() == ir::TypeCode::kBFloat) {
            uint16_t h = float_to_bfloat16_bits(static_cast<float>(fv));
            std::memcpy(&slot, &h, 2);
          } else {
            throw_user_error("scalar parameter '" + p.scalars[ka.index].name + "' of type " + t.str() +
                                 " cannot be passed by value", {}, "pass it as float32 and convert in the kernel");
          }
        } else if (t.is_bool()) {
          slot = a.int_value != 0 ? 1 : 0;
        } else {
          int64_t v = a.int_value;
          std::memcpy(&slot, &v, static_cast<size_t>(t.bits() / 8));  // little-endian: low bytes
        }
        break;
      }
      case KernelArg::kTmaDesc: {
        call.arg_ptrs[j] = call.tma_maps[ka.index];
        if (call.empty_grid) break;  // nothing runs; the tensor may be empty
        encode_tma(ka.index, args, call.check_only ? nullptr : call.tma_maps[ka.index]);
        break;
      }
      case KernelArg::kSymbol: {
        int64_t v = call.symbol_values[arg_symbol_[j]];
        if (ka.dtype.bits() == 32) {
          if (!int_fits(ir::Int32(), v)) {
            throw_user_error("kernel " + signature() + ": the symbol '" + ka.symbol + "' = " + std::to_string(v) +
                                 " does not fit in the kernel's int32 index type", {},
                             "this size needs 64-bit indexing, which this kernel was not compiled with");
          }
          int32_t v32 = static_cast<int32_t>(v);
          std::memcpy(&slot, &v32, 4);
        } else {
          std::memcpy(&slot, &v, 8);
        }
        break;
      }
    }
  }
}

void Kernel::encode_tma(int index, const ArgValue* args, void* out) const {
  const LaunchPlan& p = artifact_.plan;
  const TmaDescSpec& d = p.tma_descs[index];
  const int pos = tensor_param_[d.tensor];
  const ArgValue& a = args[pos];
  TILEC_ICHECK(a.kind == ArgValue::kTensor) << "tensor '" << p.tensors[d.tensor].name << "' missing at finalize";
  struct Ctx {
    TmaGeometry g;
    ir::DataType dtype;
    uint64_t data;
    int swizzle;
  } ctx;
  std::string why = tma_geometry(d, p.tensors[d.tensor], a.tensor, &ctx.g);
  if (!why.empty()) {
    throw TmaArgumentError("argument '" + param_name(pos) + "' of kernel " + signature() + ": " + why +
                               " (the kernel copies this tensor with TMA)",
                           {},
                           "pass a tensor whose rows are a multiple of 16 bytes and whose data is 16-byte aligned "
                           "(e.g. pad the last dimension), or compile with "
                           "pass_configs={\"tl.disable_tma_lower\": True}");
  }
  if (!out) return;  // checked only
  ctx.dtype = p.tensors[d.tensor].dtype;
  ctx.data = a.tensor.data;
  ctx.swizzle = d.swizzle;
  tma_cache_.get(index, a.tensor, out,
                 [](void* map, const void* c) {
                   auto* x = static_cast<const Ctx*>(c);
                   CudaDriver::get().encode_tensor_map(map, x->dtype, x->g.rank, x->data, x->g.dims, x->g.strides,
                                                       x->g.box, x->swizzle);
                 },
                 &ctx);
}

void* Kernel::function_for(int device) const {
  if (device >= 0 && device < kMaxDevices) {
    if (void* f = functions_[device].load(std::memory_order_acquire)) return f;
  }
  prepare(device);
  return functions_[device].load(std::memory_order_acquire);
}

void Kernel::prepare(int device) const {
  TILEC_USER_CHECK(device >= 0 && device < kMaxDevices, SourceLoc{}, "") << "CUDA device index " << device << " is out of range";
  std::lock_guard<std::mutex> lock(load_mutex_);
  if (functions_[device].load()) return;
  CudaDriver& driver = CudaDriver::get();
  const LaunchPlan& p = artifact_.plan;
  auto [arch, specific] = parse_sm_arch(artifact_.target);
  int cc = driver.compute_capability(device);
  if (!cubin_runs_on(arch, specific, cc)) {
    std::string device_arch = "sm_" + std::to_string(cc) + (cc >= 90 ? "a" : "");
    throw_user_error("kernel '" + p.kernel_name + "' was compiled for " + artifact_.target + ", which cannot run on device " +
                         std::to_string(device) + " (" + driver.device_name(device) + ", compute capability " +
                         std::to_string(cc / 10) + "." + std::to_string(cc % 10) + ")",
                     {}, "compile with target=\"auto\" or \"" + device_arch + "\"");
  }
  int64_t needed = p.dynamic_shared_bytes + artifact_.ptxas.static_shared_bytes;
  int available = driver.max_shared_memory_optin(device);
  if (needed > available) {
    throw_user_error("kernel '" + p.kernel_name + "' needs " + std::to_string(needed) + " bytes of shared memory (" +
                         std::to_string(p.dynamic_shared_bytes) + " dynamic + " +
                         std::to_string(artifact_.ptxas.static_shared_bytes) + " static), but device " +
                         std::to_string(device) + " allows at most " + std::to_string(available) + " per block",
                     {}, "use smaller tiles or fewer pipeline stages");
  }
  CuModule module = driver.load_module(device, artifact_.cubin);
  try {
    CuFunction f = driver.get_function(module, p.kernel_name);
    if (p.dynamic_shared_bytes > 0) driver.set_max_dynamic_shared_memory(f, static_cast<int>(p.dynamic_shared_bytes));
    if (p.cooperative) {
      TILEC_USER_CHECK(driver.supports_cooperative_launch(device), SourceLoc{},
                       "run it on a GPU that supports cooperative launches (compute capability 6.0 or newer)")
          << "kernel '" << p.kernel_name << "' calls T.sync_grid(), which needs a cooperative launch, and device "
          << device << " (" << driver.device_name(device) << ") does not support one";
      const int threads = static_cast<int>(p.block[0] * p.block[1] * p.block[2]);
      cooperative_limit_[device] =
          int64_t(driver.max_active_blocks_per_sm(f, threads, static_cast<size_t>(p.dynamic_shared_bytes))) *
          driver.multiprocessor_count(device);
    }
    if (p.persistent_blocks_per_sm > 0) persistent_limit_[device] = persistent_limit(driver, f, device);
    modules_[device] = module;
    functions_[device].store(f, std::memory_order_release);
  } catch (...) {
    driver.unload_module(device, module);
    throw;
  }
}

int64_t Kernel::persistent_limit(CudaDriver& driver, void* f, int device) const {
  const LaunchPlan& p = artifact_.plan;
  const int64_t blocks = driver.multiprocessor_count(device) * p.persistent_blocks_per_sm;
  const int64_t cluster = p.cluster[0] * p.cluster[1] * p.cluster[2];
  if (cluster <= 1) return blocks;
  LaunchDims dims;
  for (int i = 0; i < 3; ++i) {
    dims.block[i] = static_cast<uint32_t>(p.block[i]);
    dims.cluster[i] = static_cast<uint32_t>(p.cluster[i]);
    dims.grid[i] = static_cast<uint32_t>(p.cluster[i]);
  }
  dims.dynamic_shared_bytes = static_cast<uint32_t>(p.dynamic_shared_bytes);
  // No cluster fits: launch one (the launch reports the driver's error).
  return std::max<int64_t>(1, driver.max_active_clusters(f, dims)) * cluster;
}

void Kernel::launch(const BoundCall& call, CuStream stream) const {
  if (call.empty_grid) return;
  int device = call.device < 0 ? 0 : call.device;
  try {
    void* f = function_for(device);
    CudaDriver& driver = CudaDriver::get();
    if (call.dims.cooperative) check_cooperative_fit(call, device);
    LaunchDims dims = call.dims;
    if (persistent_limit_[device] > 0 && dims.grid[0] > persistent_limit_[device])
      dims.grid[0] = static_cast<uint32_t>(persistent_limit_[device]);
    void* previous = driver.make_current(device);
    try {
      driver.launch(f, dims, stream, const_cast<void**>(call.arg_ptrs));
      note_launch(device, launch_name_);
      if (launch_blocking_) driver.synchronize_stream(stream);  // a fault shows here, naming this kernel
    } catch (...) {
      driver.restore_context(previous);
      throw;
    }
    driver.restore_context(previous);
  } catch (const CudaError& e) {  // loading the module or the launch itself
    LaunchFailure failure{plan().kernel_name, device, e.message(), is_sticky_cuda_error(e.code()),
                          last_launched_kernel(device)};
    throw_user_error(launch_failure_message(failure), {}, launch_failure_hint(failure));
  } catch (const UserError& e) {
    std::string why;
    if (!CudaDriver::available(&why)) throw_user_error(no_driver_message(plan().kernel_name, why), {}, e.hint());
    throw;
  }
}

void Kernel::check_cooperative_fit(const BoundCall& call, int device) const {
  const int64_t blocks = int64_t(call.dims.grid[0]) * call.dims.grid[1] * call.dims.grid[2];
  if (blocks <= cooperative_limit_[device]) return;  // the common case: no driver calls, no strings
  const LaunchPlan& p = artifact_.plan;
  CudaDriver& driver = CudaDriver::get();
  CooperativeFit fit;
  fit.kernel = p.kernel_name;
  for (int i = 0; i < 3; ++i) fit.grid[i] = call.dims.grid[i];
  fit.block_threads = static_cast<int>(p.block[0] * p.block[1] * p.block[2]);
  fit.dynamic_shared_bytes = p.dynamic_shared_bytes;
  fit.device = device;
  fit.device_name = driver.device_name(device);
  fit.sms = driver.multiprocessor_count(device);
  fit.blocks_per_sm = fit.sms > 0 ? static_cast<int>(cooperative_limit_[device] / fit.sms) : 0;
  throw_user_error(cooperative_grid_error(fit), {}, cooperative_grid_hint(fit));
}

void Kernel::operator()(const ArgValue* args, int num_args, CuStream stream) const {
  TILEC_USER_CHECK(num_args == num_params(), SourceLoc{}, "")
      << "kernel " << signature() << " takes " << num_params() << " arguments with its outputs, got " << num_args;
  BoundCall call;
  bind(args, call, /*outputs_optional=*/false);
  finalize(args, call);
  launch(call, stream);
}

}  // namespace tilec::runtime
