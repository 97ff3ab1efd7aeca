// SHA-256 (FIPS 180-4), used for disk-cache keys and entry checksums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tilec::runtime {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> digest();  // finishes; the object must not be updated afterwards
  std::string hex_digest();          // 64 lowercase hex digits

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace tilec::runtime
