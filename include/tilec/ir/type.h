// Scalar and vector element types of the tile IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tilec::ir {

enum class TypeCode : uint8_t {
  kInt,
  kUInt,
  kFloat,      // IEEE float16 / float32 / float64
  kBFloat,     // bfloat16
  kFloat8E4M3,
  kFloat8E5M2,
  kFloat4E2M1,
  kBool,
  kHandle,     // an opaque pointer (buffer data, tensor-map descriptor)
  kVoid,
};

class DataType {
 public:
  constexpr DataType() = default;
  constexpr DataType(TypeCode code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  TypeCode code() const { return code_; }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  int bytes() const { return (bits_ * lanes_ + 7) / 8; }

  bool is_int() const { return code_ == TypeCode::kInt; }
  bool is_uint() const { return code_ == TypeCode::kUInt; }
  bool is_integer() const { return is_int() || is_uint(); }  // excludes bool
  bool is_bool() const { return code_ == TypeCode::kBool; }
  bool is_float() const {
    return code_ == TypeCode::kFloat || code_ == TypeCode::kBFloat ||
           code_ == TypeCode::kFloat8E4M3 || code_ == TypeCode::kFloat8E5M2 ||
           code_ == TypeCode::kFloat4E2M1;
  }
  bool is_float4() const { return code_ == TypeCode::kFloat4E2M1; }  // packed two a byte in memory
  bool is_handle() const { return code_ == TypeCode::kHandle; }
  bool is_void() const { return code_ == TypeCode::kVoid; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }

  DataType with_lanes(int lanes) const { return DataType(code_, bits_, lanes); }
  DataType element_of() const { return with_lanes(1); }

  // Canonical name: "int32", "float16", "bfloat16", "float8_e4m3", "bool", "handle",
  // with "x<lanes>" appended for vectors ("float16x8").
  std::string str() const;
  // Accepts the canonical names and the aliases users write: "float" / "float32",
  // "half", "int" (int32), "fp8_e4m3", "float8_e4m3fn", "e4m3_float8", ... .
  static std::optional<DataType> parse(const std::string& name);

  friend bool operator==(const DataType& a, const DataType& b) {
    return a.code_ == b.code_ && a.bits_ == b.bits_ && a.lanes_ == b.lanes_;
  }
  friend bool operator!=(const DataType& a, const DataType& b) { return !(a == b); }

  static DataType Int(int bits, int lanes = 1) { return {TypeCode::kInt, bits, lanes}; }
  static DataType UInt(int bits, int lanes = 1) { return {TypeCode::kUInt, bits, lanes}; }
  static DataType Float(int bits, int lanes = 1) { return {TypeCode::kFloat, bits, lanes}; }
  static DataType BFloat16(int lanes = 1) { return {TypeCode::kBFloat, 16, lanes}; }
  static DataType Float8E4M3(int lanes = 1) { return {TypeCode::kFloat8E4M3, 8, lanes}; }
  static DataType Float8E5M2(int lanes = 1) { return {TypeCode::kFloat8E5M2, 8, lanes}; }
  static DataType Float4E2M1(int lanes = 1) { return {TypeCode::kFloat4E2M1, 4, lanes}; }
  static DataType Bool(int lanes = 1) { return {TypeCode::kBool, 1, lanes}; }
  static DataType Handle() { return {TypeCode::kHandle, 64, 1}; }
  static DataType Void() { return {TypeCode::kVoid, 0, 1}; }

 private:
  TypeCode code_ = TypeCode::kVoid;
  uint8_t bits_ = 0;
  uint16_t lanes_ = 1;
};

inline DataType Int32() { return DataType::Int(32); }
inline DataType Int64() { return DataType::Int(64); }
inline DataType Float32() { return DataType::Float(32); }
inline DataType Float16() { return DataType::Float(16); }

}  // namespace tilec::ir
