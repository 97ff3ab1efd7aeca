#include "tilec/ir/type.h"

#include <unordered_map>

namespace tilec::ir {

std::string DataType::str() const {
  std::string base;
  switch (code_) {
    case TypeCode::kInt: base = "int" + std::to_string(bits_); break;
    case TypeCode::kUInt: base = "uint" + std::to_string(bits_); break;
    case TypeCode::kFloat: base = "float" + std::to_string(bits_); break;
    case TypeCode::kBFloat: base = "bfloat16"; break;
    case TypeCode::kFloat8E4M3: base = "float8_e4m3"; break;
    case TypeCode::kFloat8E5M2: base = "float8_e5m2"; break;
    case TypeCode::kFloat4E2M1: base = "float4_e2m1"; break;
    case TypeCode::kBool: base = "bool"; break;
    case TypeCode::kHandle: base = "handle"; break;
    case TypeCode::kVoid: base = "void"; break;
  }
  if (lanes_ > 1) base += "x" + std::to_string(lanes_);
  return base;
}

std::optional<DataType> DataType::parse(const std::string& raw) {
  static const std::unordered_map<std::string, DataType> kNames = {
      {"int8", Int(8)},          {"int16", Int(16)},
      {"int32", Int(32)},        {"int64", Int(64)},
      {"int", Int(32)},          {"uint8", UInt(8)},
      {"uint16", UInt(16)},      {"uint32", UInt(32)},
      {"uint64", UInt(64)},      {"float16", Float(16)},
      {"half", Float(16)},       {"fp16", Float(16)},
      {"float32", Float(32)},    {"float", Float(32)},
      {"fp32", Float(32)},       {"float64", Float(64)},
      {"double", Float(64)},     {"fp64", Float(64)},
      {"bfloat16", BFloat16()},  {"bf16", BFloat16()},
      {"float8_e4m3", Float8E4M3()}, {"float8_e4m3fn", Float8E4M3()},
      {"e4m3_float8", Float8E4M3()}, {"fp8_e4m3", Float8E4M3()},
      {"float8_e5m2", Float8E5M2()}, {"e5m2_float8", Float8E5M2()},
      {"fp8_e5m2", Float8E5M2()},  {"float4_e2m1", Float4E2M1()},
      {"float4_e2m1fn", Float4E2M1()}, {"fp4_e2m1", Float4E2M1()},
      {"bool", Bool()},          {"handle", Handle()},
      {"void", Void()},
  };
  auto it = kNames.find(raw);
  if (it != kNames.end()) return it->second;
  // vector form: <name>x<lanes>
  auto x = raw.rfind('x');
  if (x != std::string::npos && x + 1 < raw.size()) {
    std::string lanes = raw.substr(x + 1);
    bool digits = !lanes.empty();
    for (char c : lanes) digits = digits && (c >= '0' && c <= '9');
    if (digits) {
      auto base = parse(raw.substr(0, x));
      int n = std::stoi(lanes);
      if (base && base->lanes() == 1 && n > 0 && n <= 1024) return base->with_lanes(n);
    }
  }
  return std::nullopt;
}

}  // namespace tilec::ir
