// The texts of failed kernel calls (launch_errors.h) and the checks before a launch that
// guard against faults (null data pointers), without a GPU.
#include <gtest/gtest.h>

#include "tilec/runtime/kernel.h"
#include "tilec/runtime/launch_errors.h"
#include "tilec/runtime/plan_text.h"

namespace tilec::runtime {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

const std::string kIllegal = "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)";

TEST(LaunchErrors, StickyErrorsAreTheFaults) {
  for (int code : {700, 702, 710, 714, 715, 716, 717, 718, 719}) EXPECT_TRUE(is_sticky_cuda_error(code)) << code;
  // Invalid value, out of memory, launch out of resources, no binary for the GPU: the context stays usable.
  for (int code : {0, 1, 2, 701, 209, 999}) EXPECT_FALSE(is_sticky_cuda_error(code)) << code;
}

TEST(LaunchErrors, AFaultNamesTheKernelThatRanLastAndTheUnusableContext) {
  LaunchFailure f{"scale2", 3, kIllegal, true, "oob_write"};
  EXPECT_EQ(launch_failure_message(f),
            "kernel 'scale2' on cuda:3: CUDA reports a fault on this device (" + kIllegal +
                "), and after such an error the CUDA context of cuda:3 is unusable: no kernel or memory operation can "
                "run on it in this process any more. The last kernel tilec launched on cuda:3 was 'oob_write': the "
                "fault is most likely there (kernels run asynchronously, so a fault shows at a later call)");
  EXPECT_CONTAINS(launch_failure_hint(f), "restart the process");
  EXPECT_CONTAINS(launch_failure_hint(f), "TILEC_LAUNCH_BLOCKING=1");
  f.last_kernel = "scale2";
  EXPECT_CONTAINS(launch_failure_message(f), "The fault is in 'scale2' (the last kernel tilec launched on cuda:3)");
  LaunchFailure plain{"k", 0, "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)", false, "j"};
  EXPECT_EQ(launch_failure_message(plain),
            "kernel 'k' could not be launched on cuda:0: cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");
  EXPECT_EQ(launch_failure_hint(plain), "");
}

TEST(LaunchErrors, OutputAllocationNamesKernelOutputShapeAndBytes) {
  int64_t huge[] = {int64_t(1) << 36};
  EXPECT_EQ(output_allocation_message("fill", "Z", ir::Float32(), huge, 1, 0, "OutOfMemoryError: CUDA out of memory"),
            "kernel 'fill': cannot allocate its output 'Z' (float32[68719476736], 274877906944 bytes (256.0 GiB)) on "
            "cuda:0: OutOfMemoryError: CUDA out of memory");
  int64_t matrix[] = {1024, 512};
  EXPECT_EQ(output_allocation_message("g", "C", ir::Float16(), matrix, 2, 1, ""),
            "kernel 'g': cannot allocate its output 'C' (float16[1024, 512], 1048576 bytes (1.0 MiB)) on cuda:1");
  int64_t absurd[] = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_CONTAINS(output_allocation_message("h", "D", ir::Float32(), absurd, 2, 0, ""), "more than 2^63 bytes");
  EXPECT_EQ(byte_size_text(40), "40 bytes");
}

TEST(LaunchErrors, NoDriverSaysWhatIsMissing) {
  EXPECT_EQ(no_driver_message("add", "no CUDA driver: dlopen(\"libcuda.so.1\") failed: not found"),
            "kernel 'add' cannot run: no CUDA driver: dlopen(\"libcuda.so.1\") failed: not found");
}

TEST(LaunchErrors, LastLaunchedKernelPerDevice) {
  EXPECT_EQ(last_launched_kernel(63), "");
  const std::string* a = intern_kernel_name("alpha");
  EXPECT_EQ(intern_kernel_name("alpha"), a);  // one copy per name
  note_launch(62, a);
  note_launch(63, intern_kernel_name("beta"));
  EXPECT_EQ(last_launched_kernel(62), "alpha");
  EXPECT_EQ(last_launched_kernel(63), "beta");
  EXPECT_EQ(last_launched_kernel(-1), "");
  EXPECT_EQ(last_launched_kernel(64), "");
}

TEST(LaunchErrors, NullDataPointerWithElementsIsRefusedBeforeLaunch) {
  CompiledArtifact a;
  a.plan = launch_plan_from_text(R"(tilec-launch-plan 1
kernel copy
symbol n int32
tensor A float32 shape=[n]
tensor B float32 shape=[n]
grid (// (+ n 255) 256)
block 256 1 1
)");
  a.target = "sm_90a";
  Kernel k(std::move(a));
  int64_t shape[] = {8}, empty_shape[] = {0};
  auto tensor = [](const int64_t* s, uint64_t data) {
    ArgValue v;
    v.kind = ArgValue::kTensor;
    v.tensor.dtype = ir::Float32();
    v.tensor.ndim = 1;
    v.tensor.shape = s;
    v.tensor.data = data;
    return v;
  };
  ArgValue args[] = {tensor(shape, 0), tensor(shape, 0x10000)};
  BoundCall call;
  try {
    k.bind(args, call, false);
    FAIL() << "a null data pointer was accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "argument 'A' of kernel copy(A: float32[n], B: float32[n]): the data pointer is null, but "
                           "the tensor has 8 elements");
    EXPECT_EQ(e.hint(), "pass a tensor with storage (a null pointer is only valid for an empty tensor)");
  }
  ArgValue empty[] = {tensor(empty_shape, 0), tensor(empty_shape, 0)};  // no storage, no elements: fine
  BoundCall empty_call;
  k.bind(empty, empty_call, false);
  k.finalize(empty, empty_call);
  EXPECT_TRUE(empty_call.empty_grid);
}

}  // namespace
}  // namespace tilec::runtime
