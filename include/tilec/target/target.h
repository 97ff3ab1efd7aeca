// Compilation targets. Parsed from the spellings users write:
//   "auto"                      -> the GPU of this machine (UserError when there is none)
//   "cuda"                      -> the GPU of this machine when there is one, else sm_80
//                                  (so code can be generated on a machine without a GPU)
//   "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"
//   ("sm_100" / "sm_100a" are refused with a UserError: no Blackwell code generation yet)
//   "cuda -arch=sm_90a"
//   "cuda:sm_90" (also accepted)
// Surrounding whitespace is ignored; anything else is a UserError listing these forms.
// A detected sm_90 / sm_100 GPU is reported as sm_90a / sm_100a (a real H100/H200/B200 has
// the arch-specific features); on sm_100a it gets the code of sm_90 (no tcgen05); a
// detected GPU older than sm_80 is a UserError.
#pragma once

#include <optional>
#include <string>

namespace tilec::target {

struct Target {
  std::string kind = "cuda";
  int arch = 80;              // compute capability * 10: 80, 86, 89, 90, 100
  bool arch_specific = false; // the 'a' suffix (sm_90a): wgmma, setmaxnreg, TMA multicast
  std::string str() const;    // "sm_90a"

  bool has_cp_async() const { return arch >= 80; }
  bool has_mma_sync() const { return arch >= 80; }
  bool has_tma() const { return arch >= 90; }
  bool has_wgmma() const { return arch == 90 && arch_specific; }
  bool has_tcgen05() const { return arch >= 100 && arch_specific; }
  int max_shared_memory_per_block() const;  // opt-in maximum, bytes
  int shared_memory_per_sm() const;         // what the blocks resident on one SM share, bytes

  friend bool operator==(const Target& a, const Target& b) {
    return a.kind == b.kind && a.arch == b.arch && a.arch_specific == b.arch_specific;
  }
};

// Raises UserError on an unknown spelling. detect_target() is used for "auto"/"cuda".
Target parse_target(const std::string& spec);
// The same with `detected` standing for this machine's GPU (nullopt: none); for tests.
Target parse_target(const std::string& spec, const std::optional<Target>& detected);
// The compute capability of device 0 via the driver API (dlopen), or nullopt.
std::optional<Target> detect_target();

}  // namespace tilec::target
