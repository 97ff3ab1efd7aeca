// STUB: replaced by the CUDA pipeline + codegen.
#include "tilec/target/cuda/lower.h"
namespace tilec::cuda {
DeviceModule lower_to_cuda(const ir::PrimFunc& f, passes::PassContext&) {
  throw_user_error("the CUDA back end is not built yet", f->loc);
}
}  // namespace tilec::cuda
