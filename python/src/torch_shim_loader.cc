// python/src/torch_shim_loader.h: loading the optional torch shim.
#include "torch_shim_loader.h"

#include <dlfcn.h>

#include <cstring>

namespace tilec::bind {

TorchShim g_shim;

std::string load_torch_shim(const std::string& path, const std::string& torch_version) {
  if (g_shim.loaded && path == g_shim.path) return "";
  // RTLD_LOCAL: nothing of the shim's leaks into the process's symbol namespace; its libtorch
  // dependencies resolve to the copies torch already loaded (same sonames, same directory).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return std::string("cannot load ") + path + ": " + (why ? why : "unknown dlopen error");
  }
  auto abi = reinterpret_cast<int (*)()>(dlsym(handle, "tilec_torch_shim_abi"));
  auto version = reinterpret_cast<const char* (*)()>(dlsym(handle, "tilec_torch_shim_torch_version"));
  auto empty = reinterpret_cast<decltype(TorchShim::empty)>(dlsym(handle, "tilec_torch_shim_empty"));
  auto stream = reinterpret_cast<decltype(TorchShim::current_stream)>(dlsym(handle, "tilec_torch_shim_current_stream"));
  auto read = reinterpret_cast<decltype(TorchShim::read)>(dlsym(handle, "tilec_torch_shim_read"));
  std::string why;
  if (!abi || !version) {
    why = path + " lacks the shim's functions";
  } else if (abi() != TILEC_TORCH_SHIM_ABI) {
    why = path + " speaks shim ABI " + std::to_string(abi()) + ", this tilec " + std::to_string(TILEC_TORCH_SHIM_ABI);
  } else if (!empty || !stream || !read) {
    why = path + " lacks the shim's functions";
  } else if (torch_version != version()) {
    why = path + " was built against torch " + version() + ", this process runs torch " + torch_version +
          " (rebuild tilec to use it)";
  }
  if (why.empty() && g_shim.loaded) {
    why = path + " not loaded: a torch shim is already loaded from " + g_shim.path;
  }
  if (!why.empty()) {
    dlclose(handle);
    return why;
  }
  g_shim.empty = empty;
  g_shim.current_stream = stream;
  g_shim.read = read;
  g_shim.path = path;
  g_shim.loaded = g_shim.active = true;
  return "";
}

}  // namespace tilec::bind
