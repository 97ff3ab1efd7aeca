// Kernel caches (DESIGN.md section 7): an in-memory map in front of a disk cache.
//
// Disk: one file per entry, <dir>/<key[0:2]>/<key>.tkc, holding the cubin, PTX, CUDA
// source, serialized LaunchPlan, ptxas report and target, followed by a 64-bit checksum
// of everything before it (integrity against torn or corrupted files; trust comes from file
// ownership, below). Writes go to a temporary file in the same directory and are
// renamed into place (atomic on POSIX), so concurrent processes never see a partial
// entry; the last writer wins with an equally valid entry. A read that fails the
// checksum or does not parse is a miss: the caller recompiles and overwrites it.
// Trust: the cache runs what it reads, so the directories it creates are private (0700),
// entries are written 0600, and an entry is read only when it is a regular file (not a
// symbolic link) owned by this user and writable by no one else, in a directory that is
// the same; a cache directory that fails this is not used at all (untrusted_reason()).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tilec/runtime/compiler.h"

namespace tilec::runtime {

// knobs::cache_dir(): TILEC_CACHE_DIR, else $HOME/.cache/tilec.
std::string default_cache_dir();
// False when TILEC_DISABLE_CACHE is set (knobs::disable_cache()).
bool disk_cache_enabled();

// The entry file format (see above). `why` receives the reason a read failed.
std::string serialize_artifact(const CompiledArtifact& a);
std::optional<CompiledArtifact> deserialize_artifact(const std::string& bytes, std::string* why = nullptr);

class DiskCache {
 public:
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string entry_path(const std::string& key) const;
  // Why the cache directory may not be used ("untrusted: ..."): not owned by this user or
  // writable by others; "" when it is fine or does not exist yet.
  std::string untrusted_reason() const;
  // nullopt on a miss or a broken entry (reason in `why`). from_cache is set on a hit.
  std::optional<CompiledArtifact> load(const std::string& key, std::string* why = nullptr) const;
  // Writes atomically; false (reason in `why`) when the directory is not writable.
  bool store(const std::string& key, const CompiledArtifact& a, std::string* why = nullptr) const;

 private:
  std::string dir_;
};

// The process-wide in-memory cache.
std::shared_ptr<const CompiledArtifact> memory_cache_get(const std::string& key);
void memory_cache_put(const std::string& key, std::shared_ptr<const CompiledArtifact> a);
void memory_cache_clear();

}  // namespace tilec::runtime
