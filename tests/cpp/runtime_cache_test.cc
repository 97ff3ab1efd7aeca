// Disk and memory caches: entry round trip, checksum verification, recovery from a
// corrupted entry through compile_source, and concurrent writers in several processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tilec/runtime/cache.h"
#include "tilec/runtime/nvrtc.h"
#include "tilec/runtime/plan_text.h"

namespace tilec::runtime {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tilec-cache-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const char* kPlan = R"(tilec-launch-plan 1
kernel add
symbol n int32
tensor A float32 shape=[n] align=16
tensor B float32 shape=[n] align=16
tensor C float32 shape=[n] output=1
arg tensor 0
arg tensor 1
arg tensor 2
arg symbol n int32
grid (// (+ n 255) 256)
block 256 1 1
)";

const char* kSource = R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

CompiledArtifact fake_artifact() {
  CompiledArtifact a;
  a.cuda_source = kSource;
  a.ptx = ".version 8.0\n";
  for (int i = 0; i < 1000; ++i) a.cubin.push_back(static_cast<char>(i * 31));  // includes '\0' and '\n'
  a.ptxas.registers = 12;
  a.ptxas.spill_stores_bytes = 4;
  a.ptxas.spill_loads_bytes = 8;
  a.ptxas.static_shared_bytes = 1024;
  a.ptxas.stack_frame_bytes = 16;
  a.ptxas.log = "ptxas info : Used 12 registers\n";
  a.plan = launch_plan_from_text(kPlan);
  a.target = "sm_90a";
  a.cache_key = std::string(64, 'a');
  return a;
}

TEST(RuntimeCache, EntryRoundTrip) {
  CompiledArtifact a = fake_artifact();
  std::string bytes = serialize_artifact(a);
  std::string why;
  auto b = deserialize_artifact(bytes, &why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->cuda_source, a.cuda_source);
  EXPECT_EQ(b->ptx, a.ptx);
  EXPECT_EQ(b->cubin, a.cubin);
  EXPECT_EQ(b->ptxas.registers, 12);
  EXPECT_EQ(b->ptxas.spill_stores_bytes, 4);
  EXPECT_EQ(b->ptxas.spill_loads_bytes, 8);
  EXPECT_EQ(b->ptxas.static_shared_bytes, 1024);
  EXPECT_EQ(b->ptxas.stack_frame_bytes, 16);
  EXPECT_EQ(b->ptxas.log, a.ptxas.log);
  EXPECT_EQ(b->target, "sm_90a");
  EXPECT_EQ(b->cache_key, a.cache_key);
  EXPECT_EQ(launch_plan_to_text(b->plan), launch_plan_to_text(a.plan));
}

TEST(RuntimeCache, EveryCorruptionIsDetected) {
  std::string bytes = serialize_artifact(fake_artifact());
  // Flip one byte at a spread of positions (header, fields, cubin, checksum).
  for (size_t pos = 0; pos < bytes.size(); pos += 97) {
    std::string broken = bytes;
    broken[pos] = static_cast<char>(broken[pos] ^ 0x20);
    EXPECT_FALSE(deserialize_artifact(broken)) << "flip at " << pos;
  }
  std::string why;
  EXPECT_FALSE(deserialize_artifact(bytes.substr(0, bytes.size() / 2), &why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(deserialize_artifact("", &why));
  EXPECT_EQ(why, "not a tilec cache entry (bad header or truncated)");
}

TEST(RuntimeCache, ChecksumSeesEveryBitOfTheTailAndWordOrder) {
  std::string bytes = serialize_artifact(fake_artifact());
  const size_t body_end = bytes.rfind("checksum64 ");
  ASSERT_NE(body_end, std::string::npos);
  // Every single-bit flip in the last 80 bytes of the body (the checksum's 8-byte and byte-wise
  // tail, and its last 32-byte block).
  for (size_t pos = body_end - 80; pos < body_end; ++pos) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string broken = bytes;
      broken[pos] = static_cast<char>(broken[pos] ^ (1 << bit));
      EXPECT_FALSE(deserialize_artifact(broken)) << "bit " << bit << " at " << pos;
    }
  }
  // Two different 8-byte words swapped inside the cubin (same bytes, other order).
  const size_t mid = bytes.size() / 2 & ~size_t{7};
  std::string swapped = bytes;
  std::swap_ranges(swapped.begin() + static_cast<std::ptrdiff_t>(mid), swapped.begin() + static_cast<std::ptrdiff_t>(mid + 8),
                   swapped.begin() + static_cast<std::ptrdiff_t>(mid + 8));
  if (swapped != bytes) {
    std::string why;
    EXPECT_FALSE(deserialize_artifact(swapped, &why));
    EXPECT_EQ(why, "checksum mismatch");
  }
}

TEST(RuntimeCache, AnOlderEntryFormatIsAMiss) {
  std::string bytes = serialize_artifact(fake_artifact());
  ASSERT_EQ(bytes.compare(0, 20, "tilec-cache-entry 2\n"), 0);
  std::string v1 = "tilec-cache-entry 1\n" + bytes.substr(20);
  std::string why;
  EXPECT_FALSE(deserialize_artifact(v1, &why));
  EXPECT_EQ(why, "not a tilec cache entry (bad header or truncated)");
}

TEST(RuntimeCache, DiskStoreAndLoad) {
  TempDir dir;
  DiskCache cache(dir.path() + "/nested/cache");
  std::string key = "ab" + std::string(62, '0');
  std::string why;
  EXPECT_FALSE(cache.load(key, &why));
  EXPECT_EQ(why, "no entry");
  ASSERT_TRUE(cache.store(key, fake_artifact(), &why)) << why;
  EXPECT_EQ(cache.entry_path(key), dir.path() + "/nested/cache/ab/" + key + ".tkc");
  auto hit = cache.load(key, &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_TRUE(hit->from_cache);
  EXPECT_EQ(hit->cache_key, key);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path() + "/nested/cache/ab")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  // An entry under another key's name is not returned.
  std::string other = "ab" + std::string(62, '1');
  fs::copy_file(cache.entry_path(key), cache.entry_path(other));
  EXPECT_FALSE(cache.load(other, &why));
  EXPECT_EQ(why, "entry holds another key");
}

TEST(RuntimeCache, UnwritableDirectoryIsReported) {
  TempDir dir;
  std::string blocker = dir.path() + "/file";
  std::ofstream(blocker) << "x";
  DiskCache cache(blocker + "/cache");  // a directory below a regular file
  std::string why;
  EXPECT_FALSE(cache.store("cd" + std::string(62, '0'), fake_artifact(), &why));
  EXPECT_NE(why.find("cannot create"), std::string::npos) << why;
}

TEST(RuntimeCache, ConcurrentProcessesNeverSeeAPartialEntry) {
  TempDir dir;
  DiskCache cache(dir.path());
  std::string key = "ef" + std::string(62, '2');
  constexpr int kWriters = 3, kWrites = 15;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      bool ok = true;
      for (int i = 0; i < kWrites; ++i) ok = cache.store(key, fake_artifact()) && ok;
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  int reads = 0, broken = 0;
  for (int i = 0; i < 200; ++i) {
    std::string why;
    auto hit = cache.load(key, &why);
    if (hit) ++reads;
    else if (why != "no entry") ++broken;
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(broken, 0);
  EXPECT_TRUE(cache.load(key));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path() + "/ef")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);  // temporaries were all renamed away
  (void)reads;
}

TEST(RuntimeCache, CompileSourceUsesAndRepairsTheCache) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;
  TempDir dir;
  CompileOptions opts;
  opts.target = "sm_90a";
  opts.cache_dir = dir.path();
  LaunchPlan plan = launch_plan_from_text(kPlan);

  memory_cache_clear();
  CompiledArtifact first = compile_source(kSource, plan, opts);
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.target, "sm_90a");
  EXPECT_GT(first.ptxas.registers, 0);
  ASSERT_EQ(first.cache_key.size(), 64u);

  CompiledArtifact from_memory = compile_source(kSource, plan, opts);
  EXPECT_TRUE(from_memory.from_cache);

  memory_cache_clear();
  CompiledArtifact from_disk = compile_source(kSource, plan, opts);
  EXPECT_TRUE(from_disk.from_cache);
  EXPECT_EQ(from_disk.cubin, first.cubin);
  EXPECT_EQ(from_disk.cache_key, first.cache_key);

  // Corrupt the entry's cubin bytes: the next compile recompiles and rewrites it.
  std::string path = DiskCache(dir.path()).entry_path(first.cache_key);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    f.put('\x7f');
  }
  EXPECT_FALSE(DiskCache(dir.path()).load(first.cache_key, &why));
  EXPECT_EQ(why, "checksum mismatch");
  memory_cache_clear();
  CompiledArtifact recompiled = compile_source(kSource, plan, opts);
  EXPECT_FALSE(recompiled.from_cache);
  EXPECT_TRUE(DiskCache(dir.path()).load(first.cache_key, &why)) << why;

  // Different options give different keys; out_idx marks outputs.
  CompileOptions other = opts;
  other.target = "sm_80";
  CompiledArtifact for_ampere = compile_source(kSource, plan, other);
  EXPECT_NE(for_ampere.cache_key, first.cache_key);
  EXPECT_EQ(for_ampere.target, "sm_80");
  other.out_idx = {-2};
  CompiledArtifact marked = compile_source(kSource, plan, other);
  EXPECT_TRUE(marked.plan.tensors[1].is_output);
  EXPECT_NE(marked.cache_key, for_ampere.cache_key);
}

// A cache directory nothing can create (below a regular file: root is refused too, where a
// chmod would not stop it): the first compile builds and warns once, the second is served from
// the memory cache without a build or a second warning.
TEST(RuntimeCache, UnwritableDirectoryDegradesToMemoryWithOneWarning) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;
  TempDir dir;
  std::string blocker = dir.path() + "/file";
  std::ofstream(blocker) << "x";
  CompileOptions opts;
  opts.target = "sm_80";
  opts.cache_dir = blocker + "/cache";
  opts.compile_flags = {"-DTILEC_TEST_UNWRITABLE_CACHE"};  // a key no other test has in memory
  LaunchPlan plan = launch_plan_from_text(kPlan);

  testing::internal::CaptureStderr();
  const int64_t before = cuda_compile_count();
  CompiledArtifact first = compile_source(kSource, plan, opts);
  const int64_t after_first = cuda_compile_count();
  CompiledArtifact second = compile_source(kSource, plan, opts);
  const int64_t after_second = cuda_compile_count();
  std::string err = testing::internal::GetCapturedStderr();

  EXPECT_EQ(after_first - before, 1);
  EXPECT_EQ(after_second - after_first, 0) << "the second compile ran NVRTC";
  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  const std::string warning = "tilec: warning: kernel disk cache not written";
  size_t at = err.find(warning);
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find(warning, at + 1), std::string::npos) << "warned twice: " << err;
  EXPECT_NE(err.find("set TILEC_CACHE_DIR to a writable directory"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(blocker + "/cache"));
}

TEST(RuntimeCache, OutIdxErrors) {
  CompileOptions opts;
  opts.target = "sm_90a";
  opts.use_cache = false;
  LaunchPlan plan = launch_plan_from_text(kPlan);
  opts.out_idx = {3};
  try {
    compile_source(kSource, plan, opts);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("out_idx 3 is out of range for 'add', which has 3 parameters"), std::string::npos)
        << e.what();
  }
}


// The cache runs what it reads: it creates private directories and files, and reads only
// entries this user owns and no one else can write.
TEST(RuntimeCache, DirectoriesAndEntriesArePrivate) {
  TempDir dir;
  DiskCache cache(dir.path() + "/new/cache");
  std::string key = "a1" + std::string(62, '3');
  std::string why;
  ASSERT_TRUE(cache.store(key, fake_artifact(), &why)) << why;
  auto mode = [](const std::string& p) { return static_cast<int>(fs::status(p).permissions() & fs::perms::all); };
  EXPECT_EQ(mode(dir.path() + "/new/cache"), 0700);
  EXPECT_EQ(mode(dir.path() + "/new/cache/a1"), 0700);
  EXPECT_EQ(mode(cache.entry_path(key)), 0600);
  EXPECT_TRUE(cache.untrusted_reason().empty());
}

TEST(RuntimeCache, EntriesOthersCanWriteAreRefused) {
  TempDir dir;
  DiskCache cache(dir.path() + "/c");
  std::string key = "b2" + std::string(62, '4');
  std::string why;
  ASSERT_TRUE(cache.store(key, fake_artifact(), &why)) << why;
  ASSERT_TRUE(cache.load(key, &why)) << why;
  // An entry others may write.
  fs::permissions(cache.entry_path(key), fs::perms::others_write, fs::perm_options::add);
  EXPECT_FALSE(cache.load(key, &why));
  EXPECT_EQ(why, "untrusted: " + cache.entry_path(key) + " is writable by other users");
  // Rewriting it (what the compiler does after the miss) makes a private entry again.
  ASSERT_TRUE(cache.store(key, fake_artifact(), &why)) << why;
  EXPECT_TRUE(cache.load(key, &why)) << why;
  // A symbolic link in place of the entry, even to a valid one.
  std::string elsewhere = dir.path() + "/elsewhere.tkc";
  fs::copy_file(cache.entry_path(key), elsewhere);
  fs::remove(cache.entry_path(key));
  fs::create_symlink(elsewhere, cache.entry_path(key));
  EXPECT_FALSE(cache.load(key, &why));
  EXPECT_EQ(why, "untrusted: " + cache.entry_path(key) + " is a symbolic link");
  // A cache directory others may write is not used at all, for reading or writing.
  fs::permissions(dir.path() + "/c", fs::perms::group_write, fs::perm_options::add);
  EXPECT_EQ(cache.untrusted_reason(), "untrusted: " + dir.path() + "/c is writable by other users");
  EXPECT_FALSE(cache.store(key, fake_artifact(), &why));
  EXPECT_EQ(why, "untrusted: " + dir.path() + "/c is writable by other users");
  EXPECT_FALSE(cache.load(key, &why));
}

TEST(RuntimeCache, EntriesOfAnotherUserAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  TempDir dir;
  DiskCache cache(dir.path() + "/c");
  std::string key = "c3" + std::string(62, '5');
  std::string why;
  ASSERT_TRUE(cache.store(key, fake_artifact(), &why)) << why;
  ASSERT_EQ(::chown(cache.entry_path(key).c_str(), 65534, 65534), 0);
  EXPECT_FALSE(cache.load(key, &why));
  EXPECT_EQ(why, "untrusted: " + cache.entry_path(key) + " is owned by uid 65534, not by this user");
}
}  // namespace
}  // namespace tilec::runtime
