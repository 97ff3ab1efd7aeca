// compile(): a PrimFunc through the CUDA pipeline, NVRTC and both caches.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tilec/ir/builder.h"
#include "tilec/runtime/cache.h"
#include "tilec/runtime/nvrtc.h"

namespace tilec::runtime {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tilec-compile-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// C[i] = A[i] + B[i] for i < n, `block` threads per block.
ir::PrimFunc elementwise_add(int64_t block = 256) {
  using namespace ir;
  Builder b("add");
  Var n = b.dynamic("n");
  Buffer A = b.tensor("A", {n}, Float32());
  Buffer B = b.tensor("B", {n}, Float32());
  Buffer C = b.tensor("C", {n}, Float32());
  auto bx = b.begin_kernel({ceildiv(n, int_imm(block))}, {block});
  Var tx = b.thread_vars()[0];
  Var i = b.let("i", bx[0] * block + tx);
  b.begin_if(i < n);
  b.store(C, {i}, buffer_load(A, {i}) + buffer_load(B, {i}));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

TEST(RuntimeCompile, ThroughPipelineAndCaches) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;
  TempDir dir;
  CompileOptions opts;
  opts.target = "sm_80";
  opts.out_idx = {-1};
  opts.cache_dir = dir.path;
  ir::PrimFunc f = elementwise_add();

  memory_cache_clear();
  CompiledArtifact a = compile(f, opts);
  EXPECT_FALSE(a.from_cache);
  EXPECT_EQ(a.target, "sm_80");
  EXPECT_EQ(a.cache_key, compile_cache_key(f, opts));
  EXPECT_NE(a.cuda_source.find("extern \"C\" __global__"), std::string::npos) << a.cuda_source;
  EXPECT_EQ(a.plan.kernel_name, "add");
  EXPECT_EQ(a.plan.symbols, std::vector<std::string>{"n"});
  EXPECT_GT(a.ptxas.registers, 0) << a.ptxas.log;
  ASSERT_EQ(a.plan.tensors.size(), 3u);
  EXPECT_TRUE(a.plan.tensors[2].is_output);
  EXPECT_FALSE(a.plan.tensors[0].is_output);

  // The key depends on the program text, not on object identity.
  ir::PrimFunc again = elementwise_add();
  EXPECT_EQ(compile_cache_key(again, opts), a.cache_key);
  EXPECT_TRUE(compile(again, opts).from_cache);
  memory_cache_clear();
  CompiledArtifact from_disk = compile(again, opts);
  EXPECT_TRUE(from_disk.from_cache);
  EXPECT_EQ(from_disk.cubin, a.cubin);
  EXPECT_EQ(from_disk.cuda_source, a.cuda_source);

  // Options that change the code change the key.
  CompileOptions other = opts;
  other.pass_configs["tl.device_compile_flags"] = std::string("-DTILEC_UNUSED_FLAG=1");
  EXPECT_NE(compile_cache_key(f, other), a.cache_key);
  other = opts;
  other.target = "sm_90a";
  EXPECT_NE(compile_cache_key(f, other), a.cache_key);
  other = opts;
  other.out_idx = {};
  EXPECT_NE(compile_cache_key(f, other), a.cache_key);
  EXPECT_NE(compile_cache_key(elementwise_add(128), opts), a.cache_key);
}

TEST(RuntimeCompile, UnknownPassConfigIsAnErrorEvenWhenCached) {
  CompileOptions opts;
  opts.target = "sm_80";
  opts.use_cache = false;
  opts.pass_configs["tl.no_such_option"] = true;
  EXPECT_THROW(compile_cache_key(elementwise_add(), opts), UserError);
}

}  // namespace
}  // namespace tilec::runtime
