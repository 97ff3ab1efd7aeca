// In-memory and disk kernel caches (format and guarantees in include/tilec/runtime/cache.h).
//
// Entry file: "tilec-cache-entry 2\n", then fields "<name> <size>\n<bytes>\n", then
// "checksum64 <16 hex digits of checksum64(all preceding bytes)>\n". Fields are read by name,
// so adding one later does not break older readers as long as the version line stays. Version
// 1 entries (a sha256 checksum, 0.5-1 ms to verify a GEMM's 180 KB entry) read as misses and are
// rewritten.
#include "tilec/runtime/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "tilec/runtime/plan_text.h"
#include "tilec/support/diag.h"
#include "tilec/support/knobs.h"

namespace tilec::runtime {
namespace {

constexpr char kMagic[] = "tilec-cache-entry 2\n";
constexpr char kChecksumTag[] = "checksum64 ";
constexpr size_t kChecksumTagLen = sizeof(kChecksumTag) - 1;
constexpr size_t kChecksumLine = kChecksumTagLen + 16 + 1;  // tag + hex + "\n"

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// The entry's integrity check: a 64-bit hash of its bytes, eight bytes at a time in four
// independent lanes (multiply, rotate, multiply), then the lanes, the length and the tail
// bytes folded together and avalanched (the splitmix64 finalizer). It detects torn writes and
// corrupted files (a flipped bit changes the result with probability 1 - 2^-64), not
// tampering: the cache trusts only files this user owns (read_trusted_file). Several GB/s, so
// verifying an entry costs tens of microseconds where sha256 cost most of a cache hit.
uint64_t checksum64(std::string_view bytes) {
  constexpr uint64_t kMul1 = 0x9fb21c651e98df25ULL, kMul2 = 0xd6e8feb86659fd93ULL;
  uint64_t lane[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  const char* p = bytes.data();
  size_t n = bytes.size();
  auto word = [](const char* q) {
    uint64_t w;
    std::memcpy(&w, q, 8);
    return w;
  };
  for (; n >= 32; p += 32, n -= 32)
    for (int i = 0; i < 4; ++i) lane[i] = rotl(lane[i] ^ (word(p + 8 * i) * kMul1), 29) * kMul2;
  uint64_t h = bytes.size() * kMul1;
  for (int i = 0; i < 4; ++i) h = rotl(h ^ (lane[i] * kMul2), 27) * kMul1 + static_cast<uint64_t>(i);
  for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ (word(p) * kMul1), 31) * kMul2;
  for (; n > 0; ++p, --n) h = rotl(h ^ (static_cast<uint64_t>(static_cast<unsigned char>(*p)) * kMul2), 11) * kMul1;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

std::string checksum64_hex(std::string_view bytes) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(checksum64(bytes)));
  return std::string(hex, 16);
}

void put_field(std::string& out, const char* name, std::string_view bytes) {
  out += name;
  out += ' ';
  out += std::to_string(bytes.size());
  out += '\n';
  out.append(bytes.data(), bytes.size());
  out += '\n';
}

// Whether the file or directory behind `st` may be trusted: owned by this user and writable
// by no one else (a cached cubin is code that runs on the GPU). Reason in `why`.
bool trusted(const struct stat& st, const std::string& what, std::string* why) {
  if (st.st_uid != ::geteuid()) {
    if (why) *why = "untrusted: " + what + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user";
    return false;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    if (why) *why = "untrusted: " + what + " is writable by other users";
    return false;
  }
  return true;
}

// Reads a regular file that is not a symbolic link and that this user owns and only this
// user can write. False with the reason in `why` ("no entry" when it does not exist).
bool read_trusted_file(const std::string& path, std::string& out, std::string* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (why) *why = errno == ENOENT ? "no entry" : (errno == ELOOP ? "untrusted: " + path + " is a symbolic link"
                                                                  : "cannot read " + path + ": " + std::strerror(errno));
    return false;
  }
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok && why) *why = "untrusted: " + path + " is not a regular file";
  ok = ok && trusted(st, path, why);
  out.clear();
  char buf[1 << 16];
  while (ok) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0 && why) *why = "cannot read " + path + ": " + std::strerror(errno);
      ok = n == 0;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ok;
}

// Creates `dir` (its parents with the default permissions) as a directory only this user
// can use (0700). An existing directory is left as it is.
bool make_private_dir(const std::filesystem::path& dir, std::string* why) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return true;
  if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (why) *why = "cannot create " + dir.string() + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

struct MemoryCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const CompiledArtifact>> entries;
};

MemoryCache& memory_cache() {
  static MemoryCache* cache = new MemoryCache();  // never destroyed: safe at exit
  return *cache;
}

}  // namespace

std::string default_cache_dir() { return knobs::cache_dir(); }

bool disk_cache_enabled() { return !knobs::disable_cache(); }

std::string serialize_artifact(const CompiledArtifact& a) {
  std::string out = kMagic;
  put_field(out, "key", a.cache_key);
  put_field(out, "target", a.target);
  put_field(out, "plan", launch_plan_to_text(a.plan));
  put_field(out, "source", a.cuda_source);
  put_field(out, "ptx", a.ptx);
  put_field(out, "cubin", std::string_view(a.cubin.data(), a.cubin.size()));
  put_field(out, "ptxas_log", a.ptxas.log);
  std::ostringstream nums;
  nums << a.ptxas.registers << ' ' << a.ptxas.spill_stores_bytes << ' ' << a.ptxas.spill_loads_bytes << ' '
       << a.ptxas.static_shared_bytes << ' ' << a.ptxas.stack_frame_bytes;
  put_field(out, "ptxas", nums.str());
  out += kChecksumTag + checksum64_hex(out) + "\n";
  return out;
}

std::optional<CompiledArtifact> deserialize_artifact(const std::string& bytes, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<CompiledArtifact> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const size_t magic_len = sizeof(kMagic) - 1;
  if (bytes.size() < magic_len + kChecksumLine || bytes.compare(0, magic_len, kMagic) != 0) {
    return fail("not a tilec cache entry (bad header or truncated)");
  }
  size_t body_end = bytes.size() - kChecksumLine;
  if (bytes.compare(body_end, kChecksumTagLen, kChecksumTag) != 0 || bytes.back() != '\n') return fail("missing checksum");
  const std::string_view all(bytes);
  if (checksum64_hex(all.substr(0, body_end)) != all.substr(body_end + kChecksumTagLen, 16)) {
    return fail("checksum mismatch");
  }

  std::map<std::string, std::string_view, std::less<>> fields;  // views into `bytes`
  size_t pos = magic_len;
  while (pos < body_end) {
    size_t space = bytes.find(' ', pos), newline = bytes.find('\n', pos);
    if (space == std::string::npos || newline == std::string::npos || space > newline) return fail("bad field header");
    std::string name = bytes.substr(pos, space - pos);
    size_t size = 0;
    try {
      size = std::stoull(bytes.substr(space + 1, newline - space - 1));
    } catch (...) {
      return fail("bad field size");
    }
    size_t start = newline + 1;
    if (start + size + 1 > body_end || bytes[start + size] != '\n') return fail("field '" + name + "' overruns the entry");
    fields[name] = all.substr(start, size);
    pos = start + size + 1;
  }
  for (const char* required : {"key", "target", "plan", "source", "ptx", "cubin", "ptxas_log", "ptxas"}) {
    if (!fields.count(required)) return fail(std::string("missing field '") + required + "'");
  }
  CompiledArtifact a;
  a.cache_key = fields["key"];
  a.target = fields["target"];
  try {
    a.plan = launch_plan_from_text(std::string(fields["plan"]));
  } catch (const UserError& e) {
    return fail(std::string("bad launch plan: ") + e.what());
  }
  a.cuda_source = fields["source"];
  a.ptx = fields["ptx"];
  const std::string_view cubin = fields["cubin"];
  a.cubin.assign(cubin.begin(), cubin.end());
  a.ptxas.log = fields["ptxas_log"];
  std::istringstream nums{std::string(fields["ptxas"])};
  if (!(nums >> a.ptxas.registers >> a.ptxas.spill_stores_bytes >> a.ptxas.spill_loads_bytes >>
        a.ptxas.static_shared_bytes >> a.ptxas.stack_frame_bytes)) {
    return fail("bad ptxas numbers");
  }
  return a;
}

std::string DiskCache::entry_path(const std::string& key) const {
  TILEC_ICHECK(key.size() >= 2) << "cache key '" << key << "' too short";
  return dir_ + "/" + key.substr(0, 2) + "/" + key + ".tkc";
}

std::string DiskCache::untrusted_reason() const {
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0) return "";  // not there yet: store() creates it private
  std::string why;
  if (!S_ISDIR(st.st_mode)) return "untrusted: " + dir_ + " is not a directory";
  return trusted(st, dir_, &why) ? "" : why;
}

std::optional<CompiledArtifact> DiskCache::load(const std::string& key, std::string* why) const {
  std::string path = entry_path(key), bytes;
  if (std::string bad = untrusted_reason(); !bad.empty()) {
    if (why) *why = bad;
    return std::nullopt;
  }
  struct stat sub {};
  std::string subdir = std::filesystem::path(path).parent_path().string();
  if (::lstat(subdir.c_str(), &sub) == 0 && (!S_ISDIR(sub.st_mode) || !trusted(sub, subdir, why))) {
    if (why && S_ISLNK(sub.st_mode)) *why = "untrusted: " + subdir + " is a symbolic link";
    return std::nullopt;
  }
  if (!read_trusted_file(path, bytes, why)) return std::nullopt;
  auto a = deserialize_artifact(bytes, why);
  if (!a) return std::nullopt;
  if (a->cache_key != key) {
    if (why) *why = "entry holds another key";
    return std::nullopt;
  }
  a->from_cache = true;
  return a;
}

bool DiskCache::store(const std::string& key, const CompiledArtifact& a, std::string* why) const {
  std::string path = entry_path(key);
  if (!make_private_dir(dir_, why) || !make_private_dir(std::filesystem::path(path).parent_path(), why)) return false;
  if (std::string bad = untrusted_reason(); !bad.empty()) {
    if (why) *why = bad;
    return false;
  }
  CompiledArtifact copy = a;
  copy.cache_key = key;
  std::string data = serialize_artifact(copy);
  // A name unique across processes and threads, in the entry's directory so that rename
  // stays within one file system.
  static std::atomic<uint64_t> counter{0};
  std::ostringstream tmp;
  tmp << path << ".tmp." << ::getpid() << '.' << std::hash<std::thread::id>()(std::this_thread::get_id()) << '.'
      << counter.fetch_add(1);
  std::string tmp_path = tmp.str();
  int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (why) *why = "cannot create " + tmp_path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = write_all(fd, data);
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(tmp_path.c_str(), path.c_str()) == 0) return true;
  if (why) *why = "cannot write " + path + ": " + std::strerror(errno);
  ::unlink(tmp_path.c_str());
  return false;
}

std::shared_ptr<const CompiledArtifact> memory_cache_get(const std::string& key) {
  MemoryCache& c = memory_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.entries.find(key);
  return it == c.entries.end() ? nullptr : it->second;
}

void memory_cache_put(const std::string& key, std::shared_ptr<const CompiledArtifact> a) {
  MemoryCache& c = memory_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.entries[key] = std::move(a);
}

void memory_cache_clear() {
  MemoryCache& c = memory_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.entries.clear();
}

}  // namespace tilec::runtime
