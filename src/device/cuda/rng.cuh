// Counter-based random numbers (T.rng_init / T.rng_rand): Philox4x32-10, the generator and
// stream layout of cuRAND's curandStatePhilox4_32_10_t (and Triton's tl.randint4x), so a
// program that seeds the same way gets the same numbers.
//
//   rng_init(state, seed, subsequence, offset)   key = seed; counter = (0, 0, subsequence);
//                                                 then `offset` numbers skipped
//   rng_rand(state)                               the next 32-bit number
//
// The state is 11 words of a per-thread array: counter[4], key[2], output[4], position.
#pragma once

namespace tl {

struct PhiloxWords {
  unsigned x, y, z, w;
};

__device__ __forceinline__ PhiloxWords philox4x32_10(PhiloxWords ctr, unsigned k0, unsigned k1) {
  constexpr unsigned kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned lo0 = kM0 * ctr.x, hi0 = __umulhi(kM0, ctr.x);
    const unsigned lo1 = kM1 * ctr.z, hi1 = __umulhi(kM1, ctr.z);
    ctr = {hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// Adds n to the 128-bit counter s[0..3] (s[0] lowest), carrying as cuRAND does.
__device__ __forceinline__ void rng_counter_add(unsigned* s, unsigned long long n) {
  const unsigned lo = static_cast<unsigned>(n);
  unsigned hi = static_cast<unsigned>(n >> 32);
  s[0] += lo;
  if (s[0] < lo) ++hi;
  s[1] += hi;
  if (hi <= s[1]) return;
  if (++s[2]) return;
  ++s[3];
}

__device__ __forceinline__ void rng_refill(unsigned* s) {
  PhiloxWords out = philox4x32_10({s[0], s[1], s[2], s[3]}, s[4], s[5]);
  s[6] = out.x;
  s[7] = out.y;
  s[8] = out.z;
  s[9] = out.w;
}

__device__ __forceinline__ void rng_init(unsigned* s, unsigned long long seed, unsigned long long subsequence,
                                         unsigned long long offset) {
  s[0] = 0;
  s[1] = 0;
  s[2] = static_cast<unsigned>(subsequence);
  s[3] = static_cast<unsigned>(subsequence >> 32);
  s[4] = static_cast<unsigned>(seed);
  s[5] = static_cast<unsigned>(seed >> 32);
  rng_counter_add(s, offset / 4);
  s[10] = static_cast<unsigned>(offset % 4);
  rng_refill(s);
}

__device__ __forceinline__ unsigned rng_rand(unsigned* s) {
  const unsigned ret = s[6 + s[10]];
  if (++s[10] == 4) {
    rng_counter_add(s, 1);
    rng_refill(s);
    s[10] = 0;
  }
  return ret;
}

}  // namespace tl
