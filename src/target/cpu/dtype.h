// Element types on the CPU target: how a value of each tile-IR dtype is held while the
// interpreter runs, how it is rounded when it is stored or cast, and how it is encoded in
// memory (numpy / torch arrays of that dtype).
//
// A Value holds a float in `f` (float16/bfloat16/float8/float4 values are doubles that are
// exactly representable in the dtype) and an integer or bool in `i` (uint64 as its bit
// pattern). Rounding to a narrow float goes through float32 first (as the GPU converts
// float32 results), then to the nearest representable value, ties to even. float16 and
// bfloat16 overflow to inf; the float8 / float4 formats saturate to their largest finite
// value (the CUDA __NV_SATFINITE conversions). Float -> integer truncates and saturates,
// NaN giving 0 (cvt.rzi.sat); integer -> integer wraps to the width.
#pragma once

#include <cstdint>
#include <string>

#include "tilec/ir/type.h"

namespace tilec::cpu {

using ir::DataType;

struct Value {
  double f = 0.0;
  int64_t i = 0;
};

// True when the CPU target can hold and store values of `t` (scalar int/uint 8-64, bool,
// float16/32/64, bfloat16, float8_e4m3, float8_e5m2, float4_e2m1).
bool cpu_supports_dtype(DataType t);

// `x` rounded to the float dtype `t` (float64: unchanged).
double round_float(DataType t, double x);
// `x` wrapped to the integer dtype `t` (bool: 0 or 1).
int64_t wrap_int(DataType t, int64_t x);

// The value of `v` (of dtype `from`) converted to dtype `to`.
Value convert(const Value& v, DataType from, DataType to);

// Reads / writes one element of dtype `t` at `p` (its bytes in memory, native endian).
Value load_element(DataType t, const void* p);
void store_element(DataType t, void* p, const Value& v);

// The value as a double (for math and for printing); integers convert exactly up to 2^53.
double as_double(DataType t, const Value& v);
Value from_double(DataType t, double x);  // rounded / truncated as convert() does
Value from_int(DataType t, int64_t x);

// Bytes per element in memory: float4_e2m1 takes one byte per element on the CPU target.
int storage_bytes(DataType t);

std::string value_str(DataType t, const Value& v);

}  // namespace tilec::cpu
