// TMA tensor maps at launch, without a GPU: the geometry and its checks (tma_map.cc).
#include <gtest/gtest.h>

#include "tilec/runtime/kernel.h"
#include "tilec/runtime/tma_map.h"

namespace tilec::runtime {
namespace {

TensorParam bf16_matrix() {
  TensorParam t;
  t.name = "A";
  t.dtype = ir::DataType::BFloat16();
  t.shape = {{-1, "m"}, {-1, "k"}};
  return t;
}

TensorView view(const int64_t* shape, const int64_t* strides, uint64_t data = 0x10000) {
  TensorView v;
  v.data = data;
  v.dtype = ir::DataType::BFloat16();
  v.ndim = 2;
  v.shape = shape;
  v.strides = strides;
  return v;
}

TEST(TmaMap, GeometryIsInnermostFirstWithByteStrides) {
  const int64_t shape[] = {4096, 1024};
  TmaGeometry g;
  EXPECT_EQ(tma_geometry({0, {64, 128}, 3}, bf16_matrix(), view(shape, nullptr), &g), "");
  EXPECT_EQ(g.rank, 2);
  EXPECT_EQ(g.dims[0], 1024u);
  EXPECT_EQ(g.dims[1], 4096u);
  EXPECT_EQ(g.strides[0], 2048u);  // 1024 bf16
  EXPECT_EQ(g.box[0], 64u);
  EXPECT_EQ(g.box[1], 128u);
}

TEST(TmaMap, ArgumentsTmaCannotAddressSayWhy) {
  TmaGeometry g;
  const int64_t odd[] = {384, 1030};  // rows of 2060 bytes
  EXPECT_NE(tma_geometry({0, {64, 128}, 3}, bf16_matrix(), view(odd, nullptr), &g).find("multiple of 16 bytes"),
            std::string::npos);
  const int64_t shape[] = {256, 256};
  EXPECT_NE(tma_geometry({0, {64, 128}, 3}, bf16_matrix(), view(shape, nullptr, 0x10008), &g).find("16-byte aligned"),
            std::string::npos);
  const int64_t column_major[] = {1, 256};
  EXPECT_NE(tma_geometry({0, {64, 128}, 3}, bf16_matrix(), view(shape, column_major), &g).find("contiguous"),
            std::string::npos);
  const int64_t empty[] = {0, 256};
  EXPECT_NE(tma_geometry({0, {64, 128}, 3}, bf16_matrix(), view(empty, nullptr), &g).find("[1, 2^32]"),
            std::string::npos);
}

TEST(TmaMap, CacheEncodesOncePerTensor) {
  TmaMapCache cache;
  int encodes = 0;
  const int64_t shape[] = {4096, 1024};
  alignas(64) unsigned char out[128];
  auto encode = [](void* map, const void* ctx) {
    ++*static_cast<int*>(const_cast<void*>(ctx));
    static_cast<unsigned char*>(map)[0] = 42;
  };
  cache.get(0, view(shape, nullptr), out, encode, &encodes);
  cache.get(0, view(shape, nullptr), out, encode, &encodes);
  EXPECT_EQ(encodes, 1);
  EXPECT_EQ(out[0], 42);
  cache.get(0, view(shape, nullptr, 0x20000), out, encode, &encodes);  // another pointer
  cache.get(1, view(shape, nullptr), out, encode, &encodes);           // another map
  EXPECT_EQ(encodes, 3);
}

}  // namespace
}  // namespace tilec::runtime
