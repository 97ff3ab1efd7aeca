// Pass manager, knobs, dumps, the verify/simplify passes and the CUDA pipeline list.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tilec/arith/analyzer.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/structural.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/support/dump.h"
#include "tilec/support/knobs.h"

namespace {

using namespace tilec;
using namespace tilec::ir;
namespace fs = std::filesystem;

// B[i] = A[i] * 2 over one kernel of 128 threads, with a serial loop of 4.
PrimFunc make_scale_kernel(const std::string& name = "scale") {
  Builder b(name);
  auto A = b.tensor("A", {int_imm(512)}, DataType::Float(32));
  auto B = b.tensor("B", {int_imm(512)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Var i = b.begin_for("i", int_imm(0), int_imm(4), ForKind::kSerial);
  Expr idx = i * 128 + tx;
  b.store(B, {idx}, buffer_load(A, {idx}) * float_imm(2.0));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

// A pass that appends `evaluate(0)` to the body: always a real change.
passes::Pass append_evaluate_pass(const std::string& name, int* runs = nullptr) {
  return {name, [runs](const PrimFunc& f, passes::PassContext&) {
            if (runs) ++*runs;
            return with_body(f, seq({f->body, evaluate(int_imm(0))}));
          }};
}

// A pass that changes nothing and says so by returning the same object.
passes::Pass identity_pass(const std::string& name, int* runs = nullptr) {
  return {name, [runs](const PrimFunc& f, passes::PassContext&) {
            if (runs) ++*runs;
            return f;
          }};
}

// The first buffer store in pre-order, or nullptr.
const BufferStoreNode* first_store(const PrimFunc& f) {
  const BufferStoreNode* found = nullptr;
  for_each_node(f->body, [&found](const Node* n) {
    if (found == nullptr && n->kind == NodeKind::kBufferStore) found = static_cast<const BufferStoreNode*>(n);
  });
  return found;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_temp_dir(const std::string& tag) {
  auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  fs::path dir = fs::temp_directory_path() / ("tilec_passes_test_" + tag + "_" + std::to_string(stamp));
  fs::remove_all(dir);
  return dir;
}

class PassesTest : public ::testing::Test {
 protected:
  // Every knob the pass manager reads starts "unset", whatever the caller's environment.
  void SetUp() override {
    for (const char* name : {"TILEC_DUMP_IR", "TILEC_DUMP_DIR", "TILEC_TIME_PASSES"})
      knobs::set_for_testing(name, std::nullopt);
  }
  void TearDown() override { knobs::clear_testing_overrides(); }
};

// ---------------- knobs ----------------

TEST_F(PassesTest, KnobTableIsWellFormed) {
  std::set<std::string> names;
  for (const auto& k : knobs::all()) {
    EXPECT_EQ(std::string(k.name).rfind("TILEC_", 0), 0u) << k.name;
    EXPECT_TRUE(names.insert(k.name).second) << "duplicate knob " << k.name;
    EXPECT_GT(std::string(k.help).size(), 10u) << k.name;
    EXPECT_EQ(k.type == knobs::KnobType::kChoice, *k.choices != '\0') << k.name;
  }
  for (const char* expected : {"TILEC_DUMP_IR", "TILEC_DUMP_DIR", "TILEC_TIME_PASSES", "TILEC_CACHE_DIR",
                               "TILEC_DISABLE_CACHE", "TILEC_COMPILER", "TILEC_CUDA_HOME",
                               "TILEC_LINE_DIRECTIVES"})
    EXPECT_TRUE(names.count(expected)) << expected;
  std::string json = knobs::table_json();
  EXPECT_NE(json.find("\"name\": \"TILEC_COMPILER\""), std::string::npos);
  EXPECT_NE(json.find("\"choices\": \"nvrtc|nvcc\""), std::string::npos);
}

TEST_F(PassesTest, KnobOverridesBeatTheEnvironmentAndRestore) {
  knobs::set_for_testing("TILEC_TIME_PASSES", "1");
  EXPECT_TRUE(knobs::time_passes());
  {
    knobs::ScopedKnob off("TILEC_TIME_PASSES", "off");
    EXPECT_FALSE(knobs::time_passes());
  }
  EXPECT_TRUE(knobs::time_passes());
  knobs::set_for_testing("TILEC_TIME_PASSES", "Yes");
  EXPECT_TRUE(knobs::time_passes());
}

TEST_F(PassesTest, MalformedBoolKnobIsAUserErrorNamingTheVariable) {
  knobs::ScopedKnob bad("TILEC_DISABLE_CACHE", "maybe");
  try {
    knobs::disable_cache();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("TILEC_DISABLE_CACHE='maybe' is not a boolean"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("true/false"), std::string::npos);
  }
}

TEST_F(PassesTest, CompilerKnob) {
  EXPECT_EQ((knobs::ScopedKnob("TILEC_COMPILER", std::nullopt), knobs::compiler()), "nvrtc");
  {
    knobs::ScopedKnob nvcc("TILEC_COMPILER", "NVCC");
    EXPECT_EQ(knobs::compiler(), "nvcc");
  }
  knobs::ScopedKnob bad("TILEC_COMPILER", "gcc");
  try {
    knobs::compiler();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("TILEC_COMPILER='gcc' is not a known compiler"), std::string::npos);
    EXPECT_NE(e.hint().find("nvcc"), std::string::npos);
  }
}

TEST_F(PassesTest, PathKnobsExpandTheHomeDirectory) {
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  {
    knobs::ScopedKnob unset("TILEC_CACHE_DIR", std::nullopt);
    EXPECT_EQ(knobs::cache_dir(), std::string(home) + "/.cache/tilec");
  }
  knobs::ScopedKnob tilde("TILEC_CACHE_DIR", "~/elsewhere");
  EXPECT_EQ(knobs::cache_dir(), std::string(home) + "/elsewhere");
  knobs::ScopedKnob cuda("TILEC_CUDA_HOME", "/opt/my-cuda");
  EXPECT_EQ(knobs::cuda_home(), "/opt/my-cuda");
}

TEST_F(PassesTest, CudaHomeFallsBackToAToolkitRoot) {
  knobs::ScopedKnob unset("TILEC_CUDA_HOME", std::nullopt);
  std::string home = knobs::cuda_home();
  EXPECT_FALSE(home.empty());
  EXPECT_EQ(home.find("/include"), std::string::npos) << "a root, not its include directory: " << home;
}

TEST_F(PassesTest, DumpIrFilter) {
  EXPECT_FALSE(knobs::dump_ir_matches("gemm", "simplify"));
  knobs::set_for_testing("TILEC_DUMP_IR", "0");
  EXPECT_FALSE(knobs::dump_ir_matches("gemm", "simplify"));
  knobs::set_for_testing("TILEC_DUMP_IR", "off");
  EXPECT_FALSE(knobs::dump_ir_matches("off", "off"));
  knobs::set_for_testing("TILEC_DUMP_IR", "1");
  EXPECT_TRUE(knobs::dump_ir_matches("gemm", "simplify"));
  knobs::set_for_testing("TILEC_DUMP_IR", "gemm");
  EXPECT_TRUE(knobs::dump_ir_matches("gemm", "simplify"));
  EXPECT_FALSE(knobs::dump_ir_matches("softmax", "simplify"));
  knobs::set_for_testing("TILEC_DUMP_IR", "lower_*,softmax");
  EXPECT_TRUE(knobs::dump_ir_matches("gemm", "lower_tile_ops"));
  EXPECT_TRUE(knobs::dump_ir_matches("softmax", "verify"));
  EXPECT_FALSE(knobs::dump_ir_matches("gemm", "verify"));
}

// ---------------- PassContext ----------------

TEST_F(PassesTest, ConfigDefaultsAndValues) {
  passes::PassContext ctx;
  EXPECT_FALSE(ctx.get_bool("tl.disable_tma_lower"));
  EXPECT_EQ(ctx.get_int("tl.dynamic_alignment"), 16);
  ctx.set("tl.disable_tma_lower", true);
  ctx.set("tl.dynamic_alignment", int64_t{8});
  ctx.set("tl.device_compile_flags", std::string("-lineinfo"));
  EXPECT_TRUE(ctx.get_bool("tl.disable_tma_lower"));
  EXPECT_EQ(ctx.get_int("tl.dynamic_alignment"), 8);
  EXPECT_EQ(ctx.get_string("tl.device_compile_flags"), "-lineinfo");
  for (const char* key : {"tl.disable_warp_specialized", "tl.enable_fast_math", "tl.disable_vectorize",
                          "tilec.line_directives"})
    EXPECT_NO_THROW(ctx.set(key, true)) << key;
}

TEST_F(PassesTest, UnknownConfigKeyListsTheValidOnes) {
  passes::PassContext ctx;
  try {
    ctx.set("tl.disable_tma_lowr", true);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "unknown pass config key 'tl.disable_tma_lowr'");
    EXPECT_NE(e.hint().find("did you mean 'tl.disable_tma_lower'?"), std::string::npos) << e.hint();
    for (const auto& k : passes::config_keys()) EXPECT_NE(e.hint().find(k.name), std::string::npos) << k.name;
  }
  // Nothing close: no suggestion, still the list.
  try {
    ctx.set("completely.different", int64_t{1});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.hint().find("did you mean"), std::string::npos) << e.hint();
    EXPECT_NE(e.hint().find("valid keys:"), std::string::npos);
  }
}

TEST_F(PassesTest, WrongConfigTypeIsAUserError) {
  passes::PassContext ctx;
  try {
    ctx.set("tl.disable_warp_specialized", std::string("yes"));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "pass config 'tl.disable_warp_specialized' expects a bool value, got a string (\"yes\")");
  }
  EXPECT_THROW(ctx.set("tl.dynamic_alignment", true), UserError);
  EXPECT_FALSE(ctx.get_bool("tl.disable_warp_specialized"));  // a failed set changes nothing
}

// ---------------- run_passes ----------------

TEST_F(PassesTest, RunsInOrderAndSkipsDisabledPasses) {
  std::vector<std::string> order;
  auto recorder = [&order](const std::string& name) {
    return passes::Pass{name, [&order, name](const PrimFunc& f, passes::PassContext&) {
                          order.push_back(name);
                          return f;
                        }};
  };
  passes::PassContext ctx;
  ctx.disable_pass("b");
  EXPECT_TRUE(ctx.is_disabled("b"));
  PrimFunc f = make_scale_kernel();
  PrimFunc out = passes::run_passes({recorder("a"), recorder("b"), recorder("c")}, f, ctx);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(out.same_as(f));
}

TEST_F(PassesTest, DumpDirKeepsEveryStage) {
  fs::path dir = fresh_temp_dir("dumpdir");
  knobs::set_for_testing("TILEC_DUMP_DIR", dir.string());
  passes::PassContext ctx;
  ctx.disable_pass("skipped");
  PrimFunc f = make_scale_kernel("my kernel");
  PrimFunc out = passes::run_passes(
      {identity_pass("same"), append_evaluate_pass("skipped"), append_evaluate_pass("grow")}, f, ctx);
  fs::path kdir = dir / "my_kernel" / "sm_80";  // one folder per target (the default context's)
  ASSERT_TRUE(fs::is_directory(kdir)) << kdir;
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(kdir)) files.insert(entry.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"00_input.py", "01_same.py", "03_grow.py"}));
  EXPECT_EQ(read_file(kdir / "00_input.py"), script(f));
  EXPECT_EQ(read_file(kdir / "01_same.py"), script(f));
  EXPECT_EQ(read_file(kdir / "03_grow.py"), script(out));
  EXPECT_EQ(dump::kernel_dir("my kernel", "sm_80"), kdir.string());
  // Another target keeps its own stages next to these.
  passes::PassContext hopper(target::parse_target("sm_90a"));
  passes::run_passes({append_evaluate_pass("grow")}, f, hopper);
  EXPECT_TRUE(fs::exists(dir / "my_kernel" / "sm_90a" / "01_grow.py"));
  EXPECT_TRUE(fs::exists(kdir / "03_grow.py"));
  fs::remove_all(dir);
}

TEST_F(PassesTest, UnwritableDumpDirIsAUserError) {
  fs::path file = fresh_temp_dir("notadir");
  std::ofstream(file.string()) << "x";  // a file where the directory should be
  knobs::set_for_testing("TILEC_DUMP_DIR", file.string());
  passes::PassContext ctx;
  try {
    passes::run_passes({identity_pass("same")}, make_scale_kernel(), ctx);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("cannot create the dump directory"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("TILEC_DUMP_DIR"), std::string::npos);
  }
  fs::remove(file);
}

TEST_F(PassesTest, DumpIrPrintsOnlyChangedMatchingPasses) {
  passes::PassContext ctx;
  PrimFunc f = make_scale_kernel("scale");
  auto run = [&](const char* filter) {
    knobs::ScopedKnob k("TILEC_DUMP_IR", filter);
    testing::internal::CaptureStderr();
    passes::run_passes({identity_pass("same"), append_evaluate_pass("grow_one"),
                        append_evaluate_pass("grow_two")},
                       f, ctx);
    return testing::internal::GetCapturedStderr();
  };
  std::string all = run("1");
  EXPECT_EQ(all.find("after pass 'same'"), std::string::npos) << all;
  EXPECT_NE(all.find("# ---- tilec: IR of 'scale' after pass 'grow_one' ----"), std::string::npos) << all;
  EXPECT_NE(all.find("after pass 'grow_two'"), std::string::npos) << all;
  std::string by_pass = run("*_two");
  EXPECT_EQ(by_pass.find("after pass 'grow_one'"), std::string::npos) << by_pass;
  EXPECT_NE(by_pass.find("after pass 'grow_two'"), std::string::npos) << by_pass;
  EXPECT_NE(run("scale").find("after pass 'grow_one'"), std::string::npos);
  EXPECT_EQ(run("other_kernel"), "");
  EXPECT_EQ(run("0"), "");
}

TEST_F(PassesTest, DumpIrSkipsAStructurallyEqualCopy) {
  PrimFunc f = make_scale_kernel();
  PrimFunc copy = make_prim_func(f->name, f->params, f->body, f->attrs, f->loc);
  if (!structural_equal(f, copy)) GTEST_SKIP() << "structural_equal is not implemented on this build";
  knobs::ScopedKnob k("TILEC_DUMP_IR", "1");
  passes::PassContext ctx;
  testing::internal::CaptureStderr();
  passes::run_passes({{"copy", [&](const PrimFunc&, passes::PassContext&) { return copy; }}}, f, ctx);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(PassesTest, TimePassesReportsEveryPass) {
  knobs::ScopedKnob k("TILEC_TIME_PASSES", "1");
  passes::PassContext ctx;
  ctx.disable_pass("off_pass");
  testing::internal::CaptureStderr();
  passes::run_passes({identity_pass("first_pass"), identity_pass("off_pass")}, make_scale_kernel("tk"), ctx);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("pass times for kernel 'tk'"), std::string::npos) << err;
  EXPECT_NE(err.find("first_pass"), std::string::npos);
  EXPECT_NE(err.find(" ms"), std::string::npos);
  EXPECT_NE(err.find("(disabled)"), std::string::npos);
  EXPECT_NE(err.find("total"), std::string::npos);
}

TEST_F(PassesTest, UserErrorsFromAPassPropagateAfterTheTimesSoFar) {
  knobs::ScopedKnob k("TILEC_TIME_PASSES", "1");
  passes::PassContext ctx;
  passes::Pass failing{"failing", [](const PrimFunc& f, passes::PassContext&) -> PrimFunc {
                         throw_user_error("bad kernel", f->loc, "fix it");
                       }};
  testing::internal::CaptureStderr();
  EXPECT_THROW(passes::run_passes({identity_pass("before_failure"), failing}, make_scale_kernel(), ctx),
               UserError);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("before_failure"), std::string::npos) << err;
  EXPECT_NE(err.find("(failed)"), std::string::npos) << err;
}

// ---------------- verify, simplify, pipeline ----------------

TEST_F(PassesTest, VerifyPassReturnsTheSameFunction) {
  passes::PassContext ctx;
  PrimFunc f = make_scale_kernel();
  EXPECT_TRUE(passes::verify_pass().run(f, ctx).same_as(f));
}

TEST_F(PassesTest, SimplifyKeepsIdentityWhenNothingSimplifies) {
  passes::PassContext ctx;
  PrimFunc f = make_scale_kernel();
  PrimFunc out = passes::simplify_pass().run(f, ctx);
  EXPECT_TRUE(structural_equal(out, f));
}

TEST_F(PassesTest, SimplifyFoldsConstantsInStatements) {
  if (!is_const_int(arith::simplify(int_imm(2) + int_imm(3)), 5))
    GTEST_SKIP() << "the analyzer does not fold constants on this build";
  Builder b("fold");
  auto A = b.tensor("A", {int_imm(16)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {16});
  b.store(A, {int_imm(2) + int_imm(3)}, float_imm(1.0));
  b.end_frame();
  PrimFunc f = b.finish();
  passes::PassContext ctx;
  PrimFunc out = passes::simplify_pass().run(f, ctx);
  const BufferStoreNode* store = first_store(out);
  ASSERT_NE(store, nullptr) << script(out);
  EXPECT_TRUE(is_const_int(store->indices[0], 5)) << script(out);
}

TEST_F(PassesTest, SimplifyUsesLoopAndThreadRanges) {
  // floordiv(i * 128 + tx, 512) is 0 when i < 4 and tx < 128: only known from the ranges.
  Var probe_i = make_var("i"), probe_tx = make_var("tx");
  {
    arith::Analyzer probe;
    probe.bind_range(probe_i, int_imm(0), int_imm(4));
    probe.bind_bound(probe_tx, 0, 127);
    if (!is_zero(probe.simplify(floordiv(probe_i * 128 + probe_tx, 512))))
      GTEST_SKIP() << "the analyzer does not use bounds on this build";
  }
  Builder b("ranges");
  auto A = b.tensor("A", {int_imm(4)}, DataType::Int(32));
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Var i = b.begin_for("i", int_imm(0), int_imm(4), ForKind::kSerial);
  b.store(A, {floordiv(i * 128 + tx, 512)}, int_imm(1));
  b.end_frame();
  b.end_frame();
  passes::PassContext ctx;
  PrimFunc out = passes::simplify_pass().run(b.finish(), ctx);
  const BufferStoreNode* store = first_store(out);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(is_zero(store->indices[0])) << script(out);
}

TEST_F(PassesTest, SimplifyReplacesAnIfOfAProvedConditionByItsBranch) {
  // `if i < 16` in a loop of 16 is its body; `if i < 0` with an else is the else; without an
  // else it stays (there is no branch to take).
  Builder b("guards");
  auto A = b.tensor("A", {int_imm(16)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {1});
  Var i = b.begin_for("i", int_imm(0), int_imm(16), ForKind::kSerial);
  b.begin_if(Expr(i) < int_imm(16));
  b.store(A, {i}, float_imm(1.0));
  b.end_frame();
  b.begin_if(Expr(i) < int_imm(0));
  b.store(A, {i}, float_imm(2.0));
  b.end_frame();
  b.end_frame();
  b.end_frame();
  passes::PassContext ctx;
  PrimFunc out = passes::simplify_pass().run(b.finish(), ctx);
  const std::string text = script(out);
  EXPECT_EQ(text.find("if True"), std::string::npos) << text;
  EXPECT_NE(text.find("A[i] = T.float32(1)"), std::string::npos) << text;
  EXPECT_NE(text.find("if False"), std::string::npos) << text;
}

TEST_F(PassesTest, CudaPipelineStartsWithVerifyAndSimplify) {
  target::Target t;
  t.arch = 90;
  t.arch_specific = true;
  auto list = pipeline::cuda_pipeline(t);
  ASSERT_GE(list.size(), 2u);
  EXPECT_EQ(list[0].name, "verify");
  EXPECT_EQ(list[1].name, "simplify");
  std::set<std::string> names;
  for (const auto& p : list) EXPECT_TRUE(names.insert(p.name).second) << "duplicate pass " << p.name;
}

}  // namespace
