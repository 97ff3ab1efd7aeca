// CPU target memory: storage of tensors and on-chip buffers, and the bounds checks whose
// errors name the kernel, the buffer, the index and the source line.
#include <cmath>
#include <limits>
#include <sstream>

#include "target/cpu/machine.h"
#include "tilec/runtime/launch_plan.h"

namespace tilec::cpu {

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

}  // namespace

std::string index_str(const std::vector<int64_t>& idx) { return shape_str(idx); }

Value Storage::get(int64_t offset) const {
  if (bytes) return load_element(dtype, bytes + offset * storage_bytes(dtype));
  return (*cells)[static_cast<size_t>(offset)];
}

void Storage::set(int64_t offset, const Value& v) {
  if (bytes) store_element(dtype, bytes + offset * storage_bytes(dtype), v);
  else (*cells)[static_cast<size_t>(offset)] = v;
}

Storage& Machine::storage(const Buffer& b, const SourceLoc& loc) {
  auto it = storages_.find(b.get());
  if (it == storages_.end())
    throw_internal_error("target=cpu: buffer '" + b->name + "' has no storage at " + loc.str(), __FILE__, __LINE__);
  return it->second;
}

std::optional<int64_t> Machine::offset(const Storage& s, const std::vector<int64_t>& idx, Access access,
                                       const SourceLoc& loc) {
  TILEC_ICHECK(idx.size() == s.shape.size()) << "'" << s.buffer->name << "' indexed with " << idx.size()
                                              << " indices, has " << s.shape.size() << " dimensions";
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (idx[d] < 0 || idx[d] >= s.shape[d]) {
      if (s.global() && !options_.strict_global_bounds) return std::nullopt;  // legalize_bounds' guard
      const char* what = access == Access::kRead ? "read" : access == Access::kWrite ? "write" : "atomic update";
      std::ostringstream msg;
      msg << "target=cpu: kernel '" << kernel_name() << "': out-of-bounds " << what << " of '" << s.buffer->name
          << "' (" << scope_name(s.buffer->scope) << ", shape " << shape_str(s.shape) << ") at index "
          << index_str(idx) << ": index " << idx[d] << " of dimension " << d << " is not in [0, " << s.shape[d]
          << ")";
      std::string hint = s.global()
                             ? "a global access outside the tensor is an error with tl.disable_safe_memory_legalize; "
                               "guard it (if / T.if_then_else) or let tilec guard partial tiles"
                             : "on-chip buffers are not bounds-checked on the GPU: this access would read or corrupt "
                               "other data; keep the index within the buffer's shape";
      throw_user_error(msg.str(), loc, hint);
    }
    off += idx[d] * s.strides[d];
  }
  return off;
}

Value Machine::load(const Buffer& b, const std::vector<int64_t>& idx, const SourceLoc& loc) {
  Storage& s = storage(b, loc);
  auto off = offset(s, idx, Access::kRead, loc);
  return off ? s.get(*off) : Value{};
}

void Machine::store(const Buffer& b, const std::vector<int64_t>& idx, const Value& v, const SourceLoc& loc) {
  Storage& s = storage(b, loc);
  if (auto off = offset(s, idx, Access::kWrite, loc)) s.set(*off, v);
}

void Machine::allocate(const Buffer& b, const SourceLoc& loc) {
  if (!cpu_supports_dtype(b->dtype))
    not_supported("buffer '" + b->name + "' of dtype " + b->dtype.str(), loc);
  if (b->scope == Scope::kBarrier || b->scope == Scope::kTmem)
    not_supported(std::string(scope_name(b->scope)) + " buffer '" + b->name + "'", loc,
                  "barriers and tensor memory belong to the thread-level program; write the tile-level one");
  Storage s;
  s.buffer = b;
  s.dtype = b->dtype;
  int64_t n = 1;
  for (const Expr& e : b->shape) {
    int64_t d = eval_int(e);
    TILEC_USER_CHECK(d >= 0, loc, "") << "target=cpu: buffer '" << b->name << "' has a negative extent " << d;
    s.shape.push_back(d);
    n *= d;
  }
  s.strides.assign(s.shape.size(), 1);
  for (int d = static_cast<int>(s.shape.size()) - 2; d >= 0; --d) s.strides[d] = s.strides[d + 1] * s.shape[d + 1];
  Value poison;  // never-written floats read as NaN
  if (b->dtype.is_float()) poison.f = std::numeric_limits<double>::quiet_NaN();
  if (b->viewed && !(b->dtype == b->viewed->dtype))
    not_supported("T.view of shared memory as another dtype (the CPU target holds values, not bytes)", loc,
                  "allocate a buffer of the dtype you need");
  if (b->viewed) s.cells = storage(b->viewed, loc).cells;
  else s.cells = std::make_shared<std::vector<Value>>(static_cast<size_t>(n), poison);
  storages_[b.get()] = std::move(s);
}

void Machine::bind_tensor(const Buffer& b, const HostArray& a) {
  Storage s;
  s.buffer = b;
  s.dtype = b->dtype;
  s.shape = a.shape;
  s.strides = a.strides;
  s.bytes = static_cast<char*>(a.data);
  storages_[b.get()] = std::move(s);
}

void Machine::bind_pointer_tensor(const Buffer& b, const SourceLoc& loc) {
  auto it = pointer_args_.find(b->data.get());
  if (it == pointer_args_.end())
    not_supported("T.make_tensor at an address read by the kernel ('" + b->name + "')", loc,
                  "give the address as a pointer parameter (`a: T.ptr`) and pass the array itself; the CPU target "
                  "has no device addresses");
  const HostArray& a = it->second;
  if (!cpu_supports_dtype(b->dtype) || b->dtype.is_float4())
    not_supported("a T.make_tensor of dtype " + b->dtype.str() + " ('" + b->name + "')", loc);
  Storage s;
  s.buffer = b;
  s.dtype = b->dtype;
  for (const Expr& e : b->shape) s.shape.push_back(eval_int(e));
  std::vector<Expr> strides = buffer_strides(b);
  for (const Expr& e : strides) s.strides.push_back(eval_int(e));
  for (int64_t st : s.strides)
    if (st < 0) not_supported("T.make_tensor with a negative stride ('" + b->name + "')", loc);
  // The view's reach in bytes (its last element's end) against the array's.
  auto span = [](const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
    return runtime::tensor_span(static_cast<int>(shape.size()), shape.data(), strides.data());
  };
  const int64_t need = span(s.shape, s.strides) * storage_bytes(b->dtype);
  const int64_t have = span(a.shape, a.strides) * storage_bytes(a.dtype);
  if (need > have)
    throw_user_error("target=cpu: kernel '" + kernel_name() + "': T.make_tensor('" + b->name + "') of shape " +
                         index_str(s.shape) + " " + b->dtype.str() + " reaches " + std::to_string(need) +
                         " bytes past the address, but the array passed for it has " + std::to_string(have),
                     loc, "pass a larger array, or make the tensor smaller");
  s.bytes = static_cast<char*>(a.data);
  storages_[b.get()] = std::move(s);
}

void Machine::not_supported(const std::string& what, const SourceLoc& loc, const std::string& hint) {
  throw_user_error("target=cpu: kernel '" + kernel_name() + "': " + what + " is not supported on target=cpu", loc,
                   hint.empty() ? "the CPU target runs tile-level programs; run this kernel on a GPU target" : hint);
}

}  // namespace tilec::cpu
