// Builds the GEMM + ReLU kernel of seeds/000 section 1 through ir::Builder, checks it with
// the verifier and prints its T-script.
//
//   gemm_builder [--loc]     --loc: append the source location of each statement
#include <cstring>
#include <iostream>

#include "tilec/ir/example_gemm.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/verifier.h"

int main(int argc, char** argv) {
  tilec::ir::PrintOptions opts;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--loc") == 0) {
      opts.show_loc = true;
    } else {
      std::cerr << "usage: " << argv[0] << " [--loc]\n";
      return 2;
    }
  }
  try {
    tilec::ir::PrimFunc f = tilec::ir::build_example_gemm();
    tilec::ir::verify(f);
    std::cout << tilec::ir::script(f, opts);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
