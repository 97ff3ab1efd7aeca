// Compilation targets. Parsed from the spellings users write:
//   "auto"                      -> the GPU of this machine (error when there is none)
//   "cuda"                      -> auto when a GPU is present, else sm_80
//   "sm_90a", "sm_80", "sm_100a"
//   "cuda -arch=sm_90a"
//   "cuda:sm_90" (also accepted)
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

  friend bool operator==(const Target& a, const Target& b) {
    return a.kind == b.kind && a.arch == b.arch && a.arch_specific == b.arch_specific;
  }
};

// Raises UserError on an unknown spelling. `detect` is used for "auto"/"cuda".
Target parse_target(const std::string& spec);
// The compute capability of device 0 via the driver API (dlopen), or nullopt.
std::optional<Target> detect_target();

}  // namespace tilec::target
