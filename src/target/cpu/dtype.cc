// Element types on the CPU target (see dtype.h): rounding, conversion, memory encoding.
// The narrow float formats are one table; rounding and encoding are written once for all.
#include "target/cpu/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "tilec/support/diag.h"

namespace tilec::cpu {

using ir::TypeCode;

namespace {

// A binary floating-point format narrower than float32.
struct MiniFloat {
  int ebits, mbits;
  bool has_inf;      // IEEE-style: the all-ones exponent is inf / NaN
  bool has_nan;      // float4_e2m1 has no NaN
  bool saturate;     // overflow gives the largest finite value instead of inf
  int bias() const { return (1 << (ebits - 1)) - 1; }
  int emin() const { return 1 - bias(); }  // exponent of the smallest normal
  double max_finite() const {
    int emax_field = (1 << ebits) - 1 - (has_inf ? 1 : 0);
    double mant = 2.0 - std::ldexp(1.0, -mbits);
    if (!has_inf && has_nan) mant -= std::ldexp(1.0, -mbits);  // e4m3fn: S.1111.111 is NaN
    return std::ldexp(mant, emax_field - bias());
  }
};

constexpr MiniFloat kFloat16{5, 10, true, true, false};
constexpr MiniFloat kBFloat16{8, 7, true, true, false};
constexpr MiniFloat kE4M3{4, 3, false, true, true};
constexpr MiniFloat kE5M2{5, 2, true, true, true};
constexpr MiniFloat kE2M1{2, 1, false, false, true};

const MiniFloat* mini_format(DataType t) {
  switch (t.code()) {
    case TypeCode::kFloat: return t.bits() == 16 ? &kFloat16 : nullptr;
    case TypeCode::kBFloat: return &kBFloat16;
    case TypeCode::kFloat8E4M3: return &kE4M3;
    case TypeCode::kFloat8E5M2: return &kE5M2;
    case TypeCode::kFloat4E2M1: return &kE2M1;
    default: return nullptr;
  }
}

double round_mini(const MiniFloat& fmt, double x) {
  double v = static_cast<double>(static_cast<float>(x));  // through float32
  if (std::isnan(v)) return fmt.has_nan ? v : fmt.max_finite();
  double a = std::fabs(v), max = fmt.max_finite();
  if (std::isinf(v)) return fmt.has_inf && !fmt.saturate ? v : std::copysign(max, v);
  if (a == 0.0) return v;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): unbiased exponent e - 1
  int exp = std::max(e - 1, fmt.emin());
  double quantum = std::ldexp(1.0, exp - fmt.mbits);
  double r = std::nearbyint(a / quantum) * quantum;  // ties to even (default rounding mode)
  if (r > max) r = fmt.has_inf && !fmt.saturate ? std::numeric_limits<double>::infinity() : max;
  return std::copysign(r, v);
}

uint32_t encode_mini(const MiniFloat& fmt, double v) {
  uint32_t sign = std::signbit(v) ? 1u : 0u;
  uint32_t all_e = (1u << fmt.ebits) - 1, all_m = (1u << fmt.mbits) - 1;
  uint32_t e = 0, m = 0;
  if (std::isnan(v)) {
    e = all_e;
    m = fmt.has_inf ? (1u << (fmt.mbits - 1)) : all_m;
    sign = 0;
  } else if (std::isinf(v)) {
    e = all_e;
  } else if (v != 0.0) {
    double a = std::fabs(v);
    int ex = 0;
    std::frexp(a, &ex);
    int unb = ex - 1;
    if (unb < fmt.emin()) {
      m = static_cast<uint32_t>(std::ldexp(a, fmt.mbits - fmt.emin()));
    } else {
      e = static_cast<uint32_t>(unb + fmt.bias());
      m = static_cast<uint32_t>(std::ldexp(a, fmt.mbits - unb)) & all_m;
    }
  }
  return (sign << (fmt.ebits + fmt.mbits)) | (e << fmt.mbits) | m;
}

double decode_mini(const MiniFloat& fmt, uint32_t bits) {
  uint32_t all_e = (1u << fmt.ebits) - 1, all_m = (1u << fmt.mbits) - 1;
  bool neg = (bits >> (fmt.ebits + fmt.mbits)) & 1u;
  uint32_t e = (bits >> fmt.mbits) & all_e, m = bits & all_m;
  double r;
  if (fmt.has_inf && e == all_e) r = m == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
  else if (!fmt.has_inf && fmt.has_nan && e == all_e && m == all_m) r = std::nan("");
  else if (e == 0) r = std::ldexp(static_cast<double>(m), fmt.emin() - fmt.mbits);
  else r = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -fmt.mbits), static_cast<int>(e) - fmt.bias());
  return neg ? -r : r;
}

bool is_float_like(DataType t) { return t.is_float(); }

}  // namespace

bool cpu_supports_dtype(DataType t) {
  if (t.lanes() != 1) return false;
  if (t.is_bool()) return true;
  if (t.is_integer()) return t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  if (t.code() == TypeCode::kFloat) return t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  return mini_format(t) != nullptr;
}

double round_float(DataType t, double x) {
  if (t.code() == TypeCode::kFloat && t.bits() == 64) return x;
  if (t.code() == TypeCode::kFloat && t.bits() == 32) return static_cast<double>(static_cast<float>(x));
  if (const MiniFloat* fmt = mini_format(t)) return round_mini(*fmt, x);
  TILEC_UNREACHABLE() << "round_float of " << t.str();
}

int64_t wrap_int(DataType t, int64_t x) {
  if (t.is_bool()) return x != 0;
  int bits = t.bits();
  if (bits >= 64) return x;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(x) & mask;
  if (t.is_int() && (u >> (bits - 1))) u |= ~mask;
  return static_cast<int64_t>(u);
}

double as_double(DataType t, const Value& v) {
  if (is_float_like(t)) return v.f;
  if (t.is_uint() && t.bits() == 64) return static_cast<double>(static_cast<uint64_t>(v.i));
  return static_cast<double>(v.i);
}

Value from_double(DataType t, double x) {
  Value r;
  if (is_float_like(t)) {
    r.f = round_float(t, x);
  } else if (t.is_bool()) {
    r.i = x != 0.0;
  } else {
    // Truncate and saturate; NaN -> 0 (cvt.rzi.sat).
    if (std::isnan(x)) return r;
    double tr = std::trunc(x);
    int bits = t.bits();
    double lo = t.is_uint() ? 0.0 : -std::ldexp(1.0, bits - 1);
    double hi = t.is_uint() ? std::ldexp(1.0, bits) : std::ldexp(1.0, bits - 1);  // exclusive
    if (tr < lo) tr = lo;
    if (tr >= hi) {
      if (t.is_uint() && bits == 64) return Value{0.0, -1};
      r.i = t.is_uint() ? static_cast<int64_t>((uint64_t{1} << bits) - 1)
                        : static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1);
      return r;
    }
    r.i = t.is_uint() && bits == 64 ? static_cast<int64_t>(static_cast<uint64_t>(tr)) : static_cast<int64_t>(tr);
  }
  return r;
}

Value from_int(DataType t, int64_t x) {
  if (is_float_like(t)) return Value{round_float(t, static_cast<double>(x)), 0};
  return Value{0.0, wrap_int(t, x)};
}

Value convert(const Value& v, DataType from, DataType to) {
  if (is_float_like(from)) return from_double(to, v.f);
  if (is_float_like(to)) return Value{round_float(to, as_double(from, v)), 0};
  if (to.is_bool()) return Value{0.0, v.i != 0};
  return Value{0.0, wrap_int(to, v.i)};
}

int storage_bytes(DataType t) { return t.code() == TypeCode::kFloat4E2M1 ? 1 : t.bytes(); }

Value load_element(DataType t, const void* p) {
  Value r;
  if (t.code() == TypeCode::kFloat && t.bits() == 64) {
    std::memcpy(&r.f, p, 8);
  } else if (t.code() == TypeCode::kFloat && t.bits() == 32) {
    float f;
    std::memcpy(&f, p, 4);
    r.f = f;
  } else if (const MiniFloat* fmt = mini_format(t)) {
    uint32_t bits = 0;
    if (storage_bytes(t) == 2) {
      uint16_t b;
      std::memcpy(&b, p, 2);
      bits = b;
    } else {
      bits = *static_cast<const uint8_t*>(p);
    }
    r.f = decode_mini(*fmt, bits);
  } else if (t.is_bool()) {
    r.i = *static_cast<const uint8_t*>(p) != 0;
  } else {
    switch (t.bits()) {
      case 8: r.i = t.is_int() ? *static_cast<const int8_t*>(p) : *static_cast<const uint8_t*>(p); break;
      case 16: {
        uint16_t b;
        std::memcpy(&b, p, 2);
        r.i = t.is_int() ? static_cast<int16_t>(b) : b;
        break;
      }
      case 32: {
        uint32_t b;
        std::memcpy(&b, p, 4);
        r.i = t.is_int() ? static_cast<int32_t>(b) : static_cast<int64_t>(b);
        break;
      }
      default: std::memcpy(&r.i, p, 8);
    }
  }
  return r;
}

void store_element(DataType t, void* p, const Value& v) {
  if (t.code() == TypeCode::kFloat && t.bits() == 64) {
    std::memcpy(p, &v.f, 8);
  } else if (t.code() == TypeCode::kFloat && t.bits() == 32) {
    float f = static_cast<float>(v.f);
    std::memcpy(p, &f, 4);
  } else if (const MiniFloat* fmt = mini_format(t)) {
    uint32_t bits = encode_mini(*fmt, round_mini(*fmt, v.f));
    if (storage_bytes(t) == 2) {
      uint16_t b = static_cast<uint16_t>(bits);
      std::memcpy(p, &b, 2);
    } else {
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(bits);
    }
  } else if (t.is_bool()) {
    *static_cast<uint8_t*>(p) = v.i != 0;
  } else {
    int64_t x = v.i;
    std::memcpy(p, &x, static_cast<size_t>(t.bits() / 8));  // little endian: the low bytes
  }
}

std::string value_str(DataType t, const Value& v) {
  std::ostringstream os;
  if (is_float_like(t)) os << v.f;
  else if (t.is_bool()) os << (v.i ? "True" : "False");
  else if (t.is_uint() && t.bits() == 64) os << static_cast<uint64_t>(v.i);
  else os << v.i;
  return os.str();
}

}  // namespace tilec::cpu
