// The CUDA driver API through dlopen (see include/tilec/runtime/driver.h).
//
// libcuda.so.1 is opened once; cuGetProcAddress_v2 (or the older cuGetProcAddress)
// resolves each entry point for the CUDA 12.0 ABI, which is what the function pointer
// types below spell out (cuda.h is used for types only; libcuda is never linked).
// Where cuGetProcAddress is missing, dlsym with the versioned names (_v2) is the
// fallback. Primary contexts are retained once per device and kept for the process.
#include "tilec/runtime/driver.h"

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "tilec/support/diag.h"

namespace tilec::runtime {

struct CudaDriver::Api {
  void* handle = nullptr;
  std::string error;
  CUresult (*GetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*CtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleUnload)(CUmodule) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void**, void**) = nullptr;
  CUresult (*LaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t) = nullptr;
  CUresult (*OccupancyMaxActiveClusters)(int*, CUfunction, const CUlaunchConfig*) = nullptr;
  CUresult (*StreamSynchronize)(CUstream) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*TensorMapEncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = nullptr;

  static constexpr int kMaxDevices = 64;
  std::mutex context_mutex;
  std::atomic<CUcontext> contexts[kMaxDevices] = {};
};

namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

constexpr int kAbiVersion = 12000;

CudaDriver::Api* load_api() {
  auto* api = new CudaDriver::Api();  // lives for the process
  api->handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->handle) {
    api->error = std::string("no CUDA driver: dlopen(\"libcuda.so.1\") failed: ") + ::dlerror();
    return api;
  }
  auto v2 = reinterpret_cast<GetProcAddressV2>(::dlsym(api->handle, "cuGetProcAddress_v2"));
  auto v1 = reinterpret_cast<GetProcAddressV1>(::dlsym(api->handle, "cuGetProcAddress"));
  bool ok = true;
  // `base` for cuGetProcAddress, `versioned` for the dlsym fallback.
  auto resolve = [&](auto& fn, const char* base, const char* versioned) {
    void* p = nullptr;
    if (v2) {
      CUdriverProcAddressQueryResult status;
      if (v2(base, &p, kAbiVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS) p = nullptr;
    } else if (v1) {
      if (v1(base, &p, kAbiVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS) p = nullptr;
    }
    if (!p) p = ::dlsym(api->handle, versioned);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    if (!fn) {
      ok = false;
      api->error += std::string(" ") + base;
    }
  };
  resolve(api->GetErrorName, "cuGetErrorName", "cuGetErrorName");
  resolve(api->GetErrorString, "cuGetErrorString", "cuGetErrorString");
  resolve(api->Init, "cuInit", "cuInit");
  resolve(api->DeviceGetCount, "cuDeviceGetCount", "cuDeviceGetCount");
  resolve(api->DeviceGet, "cuDeviceGet", "cuDeviceGet");
  resolve(api->DeviceGetAttribute, "cuDeviceGetAttribute", "cuDeviceGetAttribute");
  resolve(api->DeviceGetName, "cuDeviceGetName", "cuDeviceGetName");
  resolve(api->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
  resolve(api->CtxGetCurrent, "cuCtxGetCurrent", "cuCtxGetCurrent");
  resolve(api->CtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent");
  resolve(api->CtxSynchronize, "cuCtxSynchronize", "cuCtxSynchronize");
  resolve(api->ModuleLoadData, "cuModuleLoadData", "cuModuleLoadData");
  resolve(api->ModuleUnload, "cuModuleUnload", "cuModuleUnload");
  resolve(api->ModuleGetFunction, "cuModuleGetFunction", "cuModuleGetFunction");
  resolve(api->FuncSetAttribute, "cuFuncSetAttribute", "cuFuncSetAttribute");
  resolve(api->LaunchKernel, "cuLaunchKernel", "cuLaunchKernel");
  resolve(api->LaunchKernelEx, "cuLaunchKernelEx", "cuLaunchKernelEx");
  resolve(api->OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  resolve(api->OccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters", "cuOccupancyMaxActiveClusters");
  resolve(api->StreamSynchronize, "cuStreamSynchronize", "cuStreamSynchronize");
  resolve(api->MemAlloc, "cuMemAlloc", "cuMemAlloc_v2");
  resolve(api->MemFree, "cuMemFree", "cuMemFree_v2");
  resolve(api->MemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2");
  resolve(api->MemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2");
  resolve(api->TensorMapEncodeTiled, "cuTensorMapEncodeTiled", "cuTensorMapEncodeTiled");
  if (!ok) {
    api->error = "the CUDA driver is too old (CUDA 12.0 or newer is needed); missing:" + api->error;
    ::dlclose(api->handle);
    api->handle = nullptr;
    return api;
  }
  CUresult r = api->Init(0);
  if (r != CUDA_SUCCESS) {
    const char* name = "?";
    api->GetErrorName(r, &name);
    api->error = std::string("cuInit failed: ") + name + " (is there a usable GPU?)";
    api->handle = nullptr;
  }
  return api;
}

CudaDriver::Api* api_instance() {
  static CudaDriver::Api* api = load_api();
  return api;
}

void check(CudaDriver::Api* api, CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = "unknown error";
  const char* text = "";
  api->GetErrorName(r, &name);
  api->GetErrorString(r, &text);
  throw CudaError(std::string(call) + " failed: " + name + " (" + text + ")", static_cast<int>(r));
}

CUdevice device_handle(CudaDriver::Api* api, int device) {
  int count = 0;
  check(api, api->DeviceGetCount(&count), "cuDeviceGetCount");
  TILEC_USER_CHECK(device >= 0 && device < count, SourceLoc{}, "")
      << "CUDA device " << device << " does not exist (this machine has " << count << ")";
  CUdevice d = 0;
  check(api, api->DeviceGet(&d, device), "cuDeviceGet");
  return d;
}

}  // namespace

CudaDriver& CudaDriver::get() {
  static CudaDriver driver;
  static std::once_flag once;
  std::call_once(once, [] { driver.api_ = api_instance(); });
  if (!driver.api_->handle) {
    throw_user_error(driver.api_->error, {}, "running kernels needs an NVIDIA GPU and its driver");
  }
  return driver;
}

bool CudaDriver::available(std::string* why) {
  Api* api = api_instance();
  if (!api->handle && why) *why = api->error;
  return api->handle != nullptr;
}

int CudaDriver::device_count() {
  int count = 0;
  check(api_, api_->DeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

int CudaDriver::compute_capability(int device) {
  CUdevice d = device_handle(api_, device);
  int major = 0, minor = 0;
  check(api_, api_->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d), "cuDeviceGetAttribute");
  check(api_, api_->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d), "cuDeviceGetAttribute");
  return major * 10 + minor;
}

int CudaDriver::max_shared_memory_optin(int device) {
  CUdevice d = device_handle(api_, device);
  int bytes = 0;
  check(api_, api_->DeviceGetAttribute(&bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d),
        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  return bytes;
}

int CudaDriver::multiprocessor_count(int device) {
  static std::atomic<int> cached[Api::kMaxDevices] = {};
  if (device >= 0 && device < Api::kMaxDevices)
    if (int n = cached[device].load(std::memory_order_relaxed)) return n;
  CUdevice d = device_handle(api_, device);
  int n = 0;
  check(api_, api_->DeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d),
        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  if (device >= 0 && device < Api::kMaxDevices) cached[device].store(n, std::memory_order_relaxed);
  return n;
}

std::string CudaDriver::device_name(int device) {
  CUdevice d = device_handle(api_, device);
  char name[256] = {};
  check(api_, api_->DeviceGetName(name, sizeof(name) - 1, d), "cuDeviceGetName");
  return name;
}

void* CudaDriver::primary_context(int device) {
  TILEC_USER_CHECK(device >= 0 && device < Api::kMaxDevices, SourceLoc{}, "")
      << "CUDA device index " << device << " is out of range";
  std::lock_guard<std::mutex> lock(api_->context_mutex);
  if (!api_->contexts[device].load()) {
    CUdevice d = device_handle(api_, device);
    CUcontext ctx = nullptr;
    check(api_, api_->DevicePrimaryCtxRetain(&ctx, d), "cuDevicePrimaryCtxRetain");
    api_->contexts[device].store(ctx);
  }
  return api_->contexts[device].load();
}

void* CudaDriver::make_current(int device) {
  CUcontext wanted = (device >= 0 && device < Api::kMaxDevices) ? api_->contexts[device].load() : nullptr;
  if (!wanted) wanted = static_cast<CUcontext>(primary_context(device));
  CUcontext current = nullptr;
  check(api_, api_->CtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current == wanted) return nullptr;
  check(api_, api_->CtxSetCurrent(wanted), "cuCtxSetCurrent");
  // nullptr means "nothing to restore", so an empty previous context is kept as-is: the
  // thread had none, and leaving the primary context current is what the runtime API does.
  return current;
}

void CudaDriver::restore_context(void* previous) {
  if (previous) check(api_, api_->CtxSetCurrent(static_cast<CUcontext>(previous)), "cuCtxSetCurrent");
}

CuModule CudaDriver::load_module(int device, const std::vector<char>& cubin) {
  void* previous = make_current(device);
  CUmodule module = nullptr;
  CUresult r = api_->ModuleLoadData(&module, cubin.data());
  restore_context(previous);
  check(api_, r, "cuModuleLoadData");
  return module;
}

void CudaDriver::unload_module(int device, CuModule module) {
  void* previous = make_current(device);
  CUresult r = api_->ModuleUnload(static_cast<CUmodule>(module));
  restore_context(previous);
  check(api_, r, "cuModuleUnload");
}

CuFunction CudaDriver::get_function(CuModule module, const std::string& name) {
  CUfunction f = nullptr;
  CUresult r = api_->ModuleGetFunction(&f, static_cast<CUmodule>(module), name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    throw_user_error("the compiled module has no kernel named '" + name + "'", {},
                     "the kernel must be declared extern \"C\" __global__ with the plan's kernel name");
  }
  check(api_, r, "cuModuleGetFunction");
  return f;
}

void CudaDriver::set_max_dynamic_shared_memory(CuFunction f, int bytes) {
  check(api_, api_->FuncSetAttribute(static_cast<CUfunction>(f), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

namespace {

// cuLaunchKernelEx's configuration of `d`: its cluster and cooperative attributes in `attrs`.
CUlaunchConfig launch_config(const LaunchDims& d, CUstream s, CUlaunchAttribute (&attrs)[2]) {
  const bool clustered = d.cluster[0] * d.cluster[1] * d.cluster[2] > 1;
  unsigned num_attrs = 0;
  if (clustered) {
    CUlaunchAttribute& a = attrs[num_attrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = d.cluster[0];
    a.value.clusterDim.y = d.cluster[1];
    a.value.clusterDim.z = d.cluster[2];
  }
  if (d.cooperative) {  // the grid barrier's workspace; all blocks resident (checked by the caller)
    CUlaunchAttribute& a = attrs[num_attrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    a.value.cooperative = 1;
  }
  CUlaunchConfig config = {};
  config.gridDimX = d.grid[0];
  config.gridDimY = d.grid[1];
  config.gridDimZ = d.grid[2];
  config.blockDimX = d.block[0];
  config.blockDimY = d.block[1];
  config.blockDimZ = d.block[2];
  config.sharedMemBytes = d.dynamic_shared_bytes;
  config.hStream = s;
  config.attrs = attrs;
  config.numAttrs = num_attrs;
  return config;
}

}  // namespace

void CudaDriver::launch(CuFunction f, const LaunchDims& d, CuStream stream, void** params) {
  auto fn = static_cast<CUfunction>(f);
  auto s = static_cast<CUstream>(stream);
  const bool clustered = d.cluster[0] * d.cluster[1] * d.cluster[2] > 1;
  if (!clustered && !d.cooperative) {
    check(api_,
          api_->LaunchKernel(fn, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2],
                             d.dynamic_shared_bytes, s, params, nullptr),
          "cuLaunchKernel");
    return;
  }
  CUlaunchAttribute attrs[2] = {};
  CUlaunchConfig config = launch_config(d, s, attrs);
  check(api_, api_->LaunchKernelEx(&config, fn, params, nullptr), "cuLaunchKernelEx");
}

int CudaDriver::max_active_clusters(CuFunction f, const LaunchDims& d) {
  CUlaunchAttribute attrs[2] = {};
  CUlaunchConfig config = launch_config(d, nullptr, attrs);
  int clusters = 0;
  check(api_, api_->OccupancyMaxActiveClusters(&clusters, static_cast<CUfunction>(f), &config),
        "cuOccupancyMaxActiveClusters");
  return clusters;
}

int CudaDriver::max_active_blocks_per_sm(CuFunction f, int block_threads, size_t dynamic_shared_bytes) {
  int blocks = 0;
  check(api_,
        api_->OccupancyMaxActiveBlocksPerMultiprocessor(&blocks, static_cast<CUfunction>(f), block_threads,
                                                        dynamic_shared_bytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

bool CudaDriver::supports_cooperative_launch(int device) {
  CUdevice d = device_handle(api_, device);
  int yes = 0;
  check(api_, api_->DeviceGetAttribute(&yes, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, d),
        "cuDeviceGetAttribute(COOPERATIVE_LAUNCH)");
  return yes != 0;
}

void CudaDriver::encode_tensor_map(void* map, ir::DataType dtype, int rank, uint64_t address, const uint64_t* dims,
                                   const uint64_t* strides_bytes, const uint32_t* box, int swizzle) {
  static_assert(sizeof(CUtensorMap) == kTensorMapBytes, "CUtensorMap size");
  CUtensorMapDataType type;
  switch (dtype.bytes()) {
    case 1: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;  // int8, uint8, fp8: bits only
    case 2:
      type = dtype.is_float() && dtype.code() == ir::TypeCode::kBFloat ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
             : dtype.is_float()                                       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                      : CU_TENSOR_MAP_DATA_TYPE_UINT16;
      break;
    case 4:
      type = dtype.is_float() ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
             : dtype.is_int() ? CU_TENSOR_MAP_DATA_TYPE_INT32
                              : CU_TENSOR_MAP_DATA_TYPE_UINT32;
      break;
    case 8:
      type = dtype.is_float() ? CU_TENSOR_MAP_DATA_TYPE_FLOAT64
             : dtype.is_int() ? CU_TENSOR_MAP_DATA_TYPE_INT64
                              : CU_TENSOR_MAP_DATA_TYPE_UINT64;
      break;
    default:
      throw_user_error("TMA cannot copy elements of type " + dtype.str(), {}, "use T.copy(..., disable_tma=True)");
  }
  cuuint64_t d[5], st[5];
  cuuint32_t b[5], es[5];
  for (int i = 0; i < rank; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    es[i] = 1;
    if (i + 1 < rank) st[i] = strides_bytes[i];
  }
  static const CUtensorMapSwizzle kSwizzles[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                                 CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
  check(api_,
        api_->TensorMapEncodeTiled(static_cast<CUtensorMap*>(map), type, static_cast<cuuint32_t>(rank),
                                   reinterpret_cast<void*>(address), d, st, b, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   kSwizzles[swizzle], CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
}

void CudaDriver::synchronize_stream(CuStream stream) {
  check(api_, api_->StreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
}

void CudaDriver::synchronize_device(int device) {
  void* previous = make_current(device);
  CUresult r = api_->CtxSynchronize();
  restore_context(previous);
  check(api_, r, "cuCtxSynchronize");
}

uint64_t CudaDriver::mem_alloc(int device, size_t bytes) {
  void* previous = make_current(device);
  CUdeviceptr p = 0;
  CUresult r = api_->MemAlloc(&p, bytes);
  restore_context(previous);
  check(api_, r, "cuMemAlloc");
  return p;
}

void CudaDriver::mem_free(int device, uint64_t ptr) {
  void* previous = make_current(device);
  CUresult r = api_->MemFree(ptr);
  restore_context(previous);
  check(api_, r, "cuMemFree");
}

void CudaDriver::copy_to_device(int device, uint64_t dst, const void* src, size_t bytes) {
  void* previous = make_current(device);
  CUresult r = api_->MemcpyHtoD(dst, src, bytes);
  restore_context(previous);
  check(api_, r, "cuMemcpyHtoD");
}

void CudaDriver::copy_to_host(int device, void* dst, uint64_t src, size_t bytes) {
  void* previous = make_current(device);
  CUresult r = api_->MemcpyDtoH(dst, src, bytes);
  restore_context(previous);
  check(api_, r, "cuMemcpyDtoH");
}

}  // namespace tilec::runtime
