#include "tilec/support/dump.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "tilec/support/diag.h"
#include "tilec/support/knobs.h"

namespace tilec::dump {

namespace {
std::string file_safe(const std::string& name) {
  std::string out = name.empty() ? "unnamed" : name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return out;
}
}  // namespace

bool enabled() { return !knobs::dump_dir().empty(); }

std::string kernel_dir(const std::string& kernel, const std::string& target) {
  std::string root = knobs::dump_dir();
  if (root.empty()) return "";
  std::filesystem::path dir = std::filesystem::path(root) / file_safe(kernel) / file_safe(target);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw_user_error("cannot create the dump directory " + dir.string() + ": " + ec.message(), {},
                     "set TILEC_DUMP_DIR to a writable directory, or unset it");
  return dir.string();
}

void write_file(const std::string& kernel, const std::string& target, const std::string& file_name,
                std::string_view content) {
  std::string dir = kernel_dir(kernel, target);
  if (dir.empty()) return;
  std::filesystem::path path = std::filesystem::path(dir) / file_name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out)
    throw_user_error("cannot write the dump file " + path.string(), {},
                     "set TILEC_DUMP_DIR to a writable directory, or unset it");
}

}  // namespace tilec::dump
