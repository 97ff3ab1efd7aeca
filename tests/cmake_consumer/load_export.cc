// Loads an exported kernel (kernel.export(dir)) with tilec::runtime; prints what went wrong.
#include <cstdio>
#include <exception>

#include "tilec/runtime/aot.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  try {
    tilec::runtime::AotKernel k(argv[1]);
    std::printf("loaded\n");
  } catch (const std::exception& e) {
    std::printf("%s\n", e.what());
  }
  return 0;
}
