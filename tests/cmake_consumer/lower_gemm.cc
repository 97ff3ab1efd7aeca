// Builds seeds/000's GEMM with the C++ builder and lowers it for sm_90a with tilec::compiler.
#include <cstdio>

#include "tilec/ir/example_gemm.h"
#include "tilec/passes/pass.h"
#include "tilec/target/cuda/lower.h"
#include "tilec/target/target.h"

int main() {
  tilec::passes::PassContext ctx(tilec::target::parse_target("sm_90a"));
  tilec::cuda::DeviceModule m = tilec::cuda::lower_to_cuda(tilec::ir::build_example_gemm({}), ctx);
  std::printf("%s\n", m.source.find("wgmma") != std::string::npos ? "wgmma" : "no wgmma");
  return 0;
}
