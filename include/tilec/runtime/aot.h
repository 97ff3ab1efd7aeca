// Ahead-of-time kernels for C++ (issue 14): `kernel.export(dir)` writes <name>.tkc, the
// compiled artifact (cubin, launch plan, source; the disk cache's entry format), and <name>.h,
// a typed C++ launch function (aot_header) over AotKernel. A C++ program then launches the
// kernel with the same argument checks as the JIT path, without NVRTC, Python or a compile.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tilec/runtime/kernel.h"

namespace tilec::runtime {

class AotKernel {
 public:
  // Loads an exported artifact; UserError when the file is missing, corrupt or not tilec's.
  explicit AotKernel(const std::string& path);

  const Kernel& kernel() const { return *kernel_; }

  // One argument: a device tensor (contiguous row-major, on CUDA device `device`) or a scalar.
  static ArgValue tensor(const void* data, const char* dtype, const int64_t* shape, int ndim, int device = 0);
  static ArgValue integer(int64_t v);
  static ArgValue floating(double v);

  // Every parameter in order (outputs too: the caller allocated them). Binds and checks every
  // argument (UserError naming the parameter: dtype, rank, shape, symbols), then launches on
  // `stream` (nullptr: the default stream). The shapes must stay alive for the call.
  void launch(std::initializer_list<ArgValue> args, CuStream stream) const;
  // bind + finalize only, no GPU needed (tests, dry runs): TMA tensors are checked against the
  // tensor map's rules (alignment, strides) but no map is encoded.
  void check(std::initializer_list<ArgValue> args) const;

 private:
  std::shared_ptr<Kernel> kernel_;
};

// The header export writes for `plan`: namespace tilec_aot { <name>(...) } with one pointer
// parameter per tensor (const void* for inputs, void* for outputs), an int64_t per symbolic
// dimension that no scalar parameter names, the scalars, and a stream; `tkc_file` is the
// artifact's file name, looked up in TILEC_AOT_DIR (default: `default_dir`).
std::string aot_header(const LaunchPlan& plan, const std::string& signature, const std::string& target,
                       const std::string& tkc_file, const std::string& default_dir);

}  // namespace tilec::runtime
