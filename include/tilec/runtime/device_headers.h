// The device library (src/device/cuda/*.cuh), embedded into the binary at build time by
// cmake/embed_headers.cmake. Each entry is (include name, text), the name being
// "tilec/<file>.cuh"; NVRTC receives them as named headers, nvcc as files in a temp dir.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tilec::runtime {

const std::vector<std::pair<std::string, std::string>>& embedded_device_headers();
// sha256 (hex) of the headers' names and texts, computed at build time.
const char* embedded_device_headers_digest();

}  // namespace tilec::runtime
