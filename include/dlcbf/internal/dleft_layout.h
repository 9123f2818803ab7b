// The d-left table's geometry, two-phase hashing and cell probing, shared by
// the mutable DLeftCountingBloomFilter and by read-only views over serialized
// bit arrays (for example an SST filter block).
//
// INTERNAL: not part of the public API; may change without notice.
//
// Bit array layout: drawn once, in filter_policy/FORMATS.md ("Packed bit
// array"): LSB-first, subtables then buckets then cells back to back, cell
// = r + c bits (remainder + 1, then multiplicity - 1).
//
//   As in the paper (§4), the remainder field value 0 is the empty-cell
//   sentinel, so remainders range over [0, Rn) with Rn = 2^r - 1 and are
//   stored plus one. Empty cells are all-zero. The c-bit counter stores
//   multiplicity - 1, so it counts 1 .. 2^c; the top value 2^c means
//   "saturated" and is sticky (never decremented). c = 0: no counter; a
//   fingerprint is either present or not (static filter, no erase).
//
// Two-phase hashing (paper §3.2-3.3):
//   phase 1: h = XXH3(key, seed); the true fingerprint f = (b, q) in
//            [B] x [Rn] is read off h as a mixed-radix fraction:
//            b = floor(h * B / 2^64), q = floor(((h * B) mod 2^64) * Rn / 2^64).
//   phase 2: P_i(b, q) = ((b + F_i(q)) mod B, q), F_0 = 0 and, for i >= 1,
//            F_i(q) = fastrange(Mix64(q ^ k_i0), B).
//            Each P_i is a bijection of [B] x [Rn] for every B and Rn (not
//            only powers of two, unlike the paper's a*f mod 2^q), and
//            P_i^-1(b', q) = ((b' - F_i(q)) mod B, q). Relocation and the
//            dlCBF -> ABF migration recover f from (i, b_i, q_i) through it.
//   Why this shape: placement depends only on the d buckets b + F_i(q); a
//   second round that re-encodes the remainder per subtable (as the paper
//   allows) changes neither placement nor the FPR, which depends only on
//   fingerprint collisions (Claim 2), so it is omitted, as is the round of
//   subtable 0 (the identity is a permutation). A query costs d - 1 Mix64
//   rounds. F must mix fully: a single multiply ((q ^ k) * C) is nearly
//   linear in small q, and with only ~26 distinct F_1 - F_0 over 255
//   remainders d-left/cuckoo placement stalled far below its load limit.
//   Serialized forms store two keys per subtable; version 1 uses k_i0 for
//   i >= 1 and ignores k_00 and every k_i1.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <string>

#include "dlcbf/internal/hash.h"

namespace dlcbf {
namespace internal {

constexpr uint32_t kMinSubtables = 2;
constexpr uint32_t kMaxSubtables = 8;
constexpr uint32_t kMaxCellsPerBucket = 64;
constexpr uint32_t kMaxRemainderBits = 32;
constexpr uint32_t kMaxCounterBits = 4;
// log2(B) + r must stay well below 64 so the mixed-radix fingerprint taken
// from a 64-bit hash is uniform to within 2^-(64-kMaxFingerprintBits).
constexpr uint32_t kMaxFingerprintBits = 56;

static_assert(kMaxRemainderBits + kMaxCounterBits <= 57,
              "a cell must fit in the 57 bits a byte-aligned 64-bit load yields");

// The true fingerprint f = (bucket, remainder) in [B] x [Rn].
struct Fingerprint {
  uint64_t bucket;
  uint64_t remainder;
};

// A fingerprint as placed in one subtable: P_i(f).
struct Location {
  uint64_t bucket;
  uint64_t remainder;
};

struct Geometry {
  uint32_t subtables = 0;        // d
  uint64_t buckets = 0;          // B, per subtable
  uint32_t cells = 0;            // L, per bucket
  uint32_t remainder_bits = 0;   // r
  uint32_t counter_bits = 0;     // c

  uint32_t cell_bits() const { return remainder_bits + counter_bits; }
  uint64_t bucket_bits() const {
    return static_cast<uint64_t>(cells) * cell_bits();
  }
  uint64_t total_buckets() const { return buckets * subtables; }
  uint64_t total_cells() const { return total_buckets() * cells; }
  uint64_t total_bits() const { return total_buckets() * bucket_bits(); }
  uint64_t total_bytes() const { return (total_bits() + 7) / 8; }
  // Rn: how many distinct remainders exist (field value 0 = empty cell).
  uint64_t remainder_values() const { return (uint64_t{1} << remainder_bits) - 1; }
  // The largest multiplicity a counter represents; reaching it saturates.
  uint32_t max_counter() const { return counter_bits == 0 ? 1u : (1u << counter_bits); }
  // Why the geometry is unusable, or nullptr when it is valid.
  const char* Invalid() const {
    if (subtables < kMinSubtables || subtables > kMaxSubtables)
      return "subtables (d) must be in [2, 8]";
    if (buckets == 0) return "buckets per subtable (B) must be positive";
    if (cells == 0 || cells > kMaxCellsPerBucket)
      return "cells per bucket (L) must be in [1, 64]";
    if (remainder_bits < 2 || remainder_bits > kMaxRemainderBits)
      return "remainder bits (r) must be in [2, 32]";
    if (counter_bits > kMaxCounterBits)
      return "counter bits (c) must be in [0, 4]";
    if (buckets >= (uint64_t{1} << 40)) return "buckets per subtable (B) must be < 2^40";
    uint32_t lg = 0;
    while (lg < 64 && (uint64_t{1} << lg) < buckets) ++lg;
    if (lg + remainder_bits > kMaxFingerprintBits)
      return "log2(B) + r must be <= 56 (fingerprint range)";
    return nullptr;
  }
};

// The permutation keys of every subtable. Derived from the seed, stored
// explicitly in every serialized form.
struct PermutationKeys {
  uint64_t k[kMaxSubtables][2] = {};

  static PermutationKeys FromSeed(uint64_t seed) {
    PermutationKeys p;
    uint64_t state = seed ^ 0x646C434246ULL;  // "dlCBF"
    for (auto& row : p.k) {
      row[0] = SplitMix64(&state);
      row[1] = SplitMix64(&state);
    }
    return p;
  }
};

// Two-phase hashing for a fixed geometry.
class Hashing {
 public:
  Hashing() = default;
  Hashing(const Geometry& g, uint64_t seed, const PermutationKeys& keys)
      : seed_(seed), B_(g.buckets), Rn_(g.remainder_values()), keys_(keys) {}

  uint64_t seed() const { return seed_; }
  const PermutationKeys& keys() const { return keys_; }

  uint64_t Hash(const void* data, size_t n) const { return HashKey(data, n, seed_); }

  // Phase 1: f = H(x) in [B] x [Rn].
  Fingerprint FingerprintOf(uint64_t h) const {
    return Fingerprint{FingerprintBucket(h, B_), FingerprintRemainder(h, B_, Rn_)};
  }

  // Phase 2: P_i(f).
  Location Permute(uint32_t i, Fingerprint f) const {
    uint64_t b = f.bucket + F(i, f.remainder);
    if (b >= B_) b -= B_;
    return Location{b, f.remainder};
  }

  // P_i^-1.
  Fingerprint Invert(uint32_t i, Location loc) const {
    uint64_t fb = F(i, loc.remainder);
    uint64_t b = loc.bucket >= fb ? loc.bucket - fb : loc.bucket + B_ - fb;
    return Fingerprint{b, loc.remainder};
  }

  // f packed into one integer in [0, B * Rn): b * Rn + q.
  uint64_t Pack(Fingerprint f) const { return f.bucket * Rn_ + f.remainder; }

  // Phase 1 inverted: the smallest hash h with Pack(FingerprintOf(h)) ==
  // packed. FingerprintOf reads h as the mixed-radix fraction h B Rn / 2^64,
  // so Pack(FingerprintOf(h)) = floor(h B Rn / 2^64) and the answer is
  // ceil(packed 2^64 / (B Rn)) (exact: B Rn < 2^64). Keyless migration
  // re-inserts fingerprints through it.
  uint64_t HashOfPacked(uint64_t packed) const {
    __extension__ typedef unsigned __int128 u128;
    const u128 den = static_cast<u128>(B_) * Rn_;
    const u128 num = static_cast<u128>(packed) << 64;
    return static_cast<uint64_t>((num + den - 1) / den);
  }

 private:
  // Full-avalanche round (see the note at the top); F_0 = 0.
  uint64_t F(uint32_t i, uint64_t q) const {
    return i == 0 ? 0 : PermutationOffset(q, keys_.k[i][0], B_);
  }

  uint64_t seed_ = 0;
  uint64_t B_ = 1;
  uint64_t Rn_ = 1;
  PermutationKeys keys_;
};

// Encoding of a cell value (r + c bits) and matching against a remainder.
class CellCodec {
 public:
  CellCodec() = default;
  explicit CellCodec(const Geometry& g)
      : r_(g.remainder_bits),
        c_(g.counter_bits),
        w_(g.cell_bits()),
        cells_(g.cells),
        cell_mask_(g.cell_bits() >= 64 ? ~uint64_t{0}
                                       : (uint64_t{1} << g.cell_bits()) - 1),
        rem_mask_((uint64_t{1} << g.remainder_bits) - 1) {
    // SWAR lanes: K whole cells per 57-bit window (what every Bits::Load
    // guarantees), each lane's remainder field tested for equality at once.
    lanes_ = std::max<uint32_t>(1, std::min<uint32_t>(g.cells, 57 / std::max<uint32_t>(1, w_)));
    for (uint32_t j = 0; j < lanes_; ++j) {
      rep1_ |= uint64_t{1} << (j * w_);
      lo_ |= ((uint64_t{1} << (r_ - 1)) - 1) << (j * w_);
      hi_ |= (uint64_t{1} << (r_ - 1)) << (j * w_);
      field_ |= rem_mask_ << (j * w_);
    }
    uint32_t tail = g.cells % lanes_;
    hi_tail_ = hi_;
    if (tail) {
      hi_tail_ = 0;
      for (uint32_t j = 0; j < tail; ++j) hi_tail_ |= (uint64_t{1} << (r_ - 1)) << (j * w_);
    }
    chunks_ = (g.cells + lanes_ - 1) / lanes_;
  }

  // Index of the cell among the L cells at `bucket_bit` that holds
  // `remainder`, or -1. Compares `lanes_` cells per load: with x the window
  // XOR the replicated stored value, a lane's remainder field m is zero iff
  // ~(((m & lo) + lo) | m | lo) has its top field bit set; the addition
  // cannot carry out of a lane, so the test is exact.
  template <class Bits>
  int Find(const Bits& bits, uint64_t bucket_bit, uint64_t remainder) const {
    const uint64_t pattern = (remainder + 1) * rep1_;
    const uint64_t step = uint64_t{lanes_} * w_;
    for (uint32_t k = 0; k < chunks_; ++k) {
      uint64_t m = (bits.Load(bucket_bit + k * step) ^ pattern) & field_;
      uint64_t z = ~(((m & lo_) + lo_) | m | lo_) & (k + 1 == chunks_ ? hi_tail_ : hi_);
      if (z) {
        return static_cast<int>(k * lanes_ + static_cast<uint32_t>(__builtin_ctzll(z)) / w_);
      }
    }
    return -1;
  }

  // One pass over a bucket for writers: the cell holding `remainder` (or
  // -1), the first empty cell (or -1) and the number of occupied cells.
  // Same lane arithmetic as Find; an empty cell is a lane whose remainder
  // field is 0.
  struct Scan {
    int match = -1;
    int free_cell = -1;
    uint32_t load = 0;
  };
  template <class Bits>
  Scan ScanBucket(const Bits& bits, uint64_t bucket_bit, uint64_t remainder) const {
    Scan out;
    const uint64_t pattern = (remainder + 1) * rep1_;
    const uint64_t step = uint64_t{lanes_} * w_;
    uint32_t empty = 0;
    for (uint32_t k = 0; k < chunks_; ++k) {
      const uint64_t valid = k + 1 == chunks_ ? hi_tail_ : hi_;
      const uint64_t word = bits.Load(bucket_bit + k * step);
      const uint64_t e = word & field_;
      const uint64_t ze = ~(((e & lo_) + lo_) | e | lo_) & valid;
      empty += static_cast<uint32_t>(__builtin_popcountll(ze));
      if (out.free_cell < 0 && ze) {
        out.free_cell = static_cast<int>(k * lanes_ + static_cast<uint32_t>(__builtin_ctzll(ze)) / w_);
      }
      if (out.match < 0) {
        const uint64_t m = (word ^ pattern) & field_;
        const uint64_t zm = ~(((m & lo_) + lo_) | m | lo_) & valid;
        if (zm) out.match = static_cast<int>(k * lanes_ + static_cast<uint32_t>(__builtin_ctzll(zm)) / w_);
      }
    }
    out.load = cells_ - empty;
    return out;
  }

  uint64_t cell_mask() const { return cell_mask_; }
  bool counted() const { return c_ != 0; }
  uint32_t cells() const { return cells_; }
  uint32_t cell_bits() const { return w_; }

  bool Occupied(uint64_t cell) const { return (cell & rem_mask_) != 0; }
  // Only meaningful for occupied cells.
  uint64_t Remainder(uint64_t cell) const { return (cell & rem_mask_) - 1; }
  uint32_t Counter(uint64_t cell) const {
    return static_cast<uint32_t>((cell & cell_mask_) >> r_) + 1u;
  }
  // count in [1, 2^c] (1 when c == 0).
  uint64_t Make(uint64_t remainder, uint32_t count) const {
    return (remainder + 1) | (uint64_t{count - 1} << r_);
  }
  // True iff `cell` is occupied and holds `remainder` (an empty cell holds
  // field value 0, which no remainder + 1 equals).
  bool Matches(uint64_t cell, uint64_t remainder) const {
    return (cell & rem_mask_) == remainder + 1;
  }

 private:
  uint32_t r_ = 0, c_ = 0, w_ = 0, cells_ = 0;
  uint64_t cell_mask_ = 0, rem_mask_ = 0;
  uint32_t lanes_ = 1, chunks_ = 0;
  uint64_t rep1_ = 0, lo_ = 0, hi_ = 0, hi_tail_ = 0, field_ = 0;
};

// Reads 64 bits starting at an arbitrary bit position of an array of 64-bit
// words (which must have one readable word of padding past the last bit).
// Word loads are atomics of the given memory order so lock-free readers may
// run while a single writer updates words: relaxed for single-threaded use
// and writers, acquire for thread-safe readers (the seqlock argument is in
// the concurrency note of dleft_counting_bloom_filter.cc).
template <int kOrder>
struct WordBitsT {
  const uint64_t* words;
  uint64_t Load(uint64_t bitpos) const {
    uint64_t i = bitpos >> 6, o = bitpos & 63;
    uint64_t lo = __atomic_load_n(&words[i], kOrder) >> o;
    uint64_t hi = (__atomic_load_n(&words[i + 1], kOrder) << 1) << (63 - o);
    return lo | hi;
  }
  const void* Address(uint64_t bitpos) const { return &words[bitpos >> 6]; }
};
using WordBits = WordBitsT<__ATOMIC_RELAXED>;
using AcquireWordBits = WordBitsT<__ATOMIC_ACQUIRE>;

// Reads at least 57 valid bits at a bit position of a byte buffer of
// `size` bytes, never touching memory outside it (bytes past the end read
// as zero). For read-only views over serialized payloads.
struct ByteBits {
  const char* data;
  size_t size;
  uint64_t Load(uint64_t bitpos) const {
    size_t byte = static_cast<size_t>(bitpos >> 3);
    uint64_t v = 0;
    if (byte + 8 <= size) {
      unsigned char b[8];
      std::memcpy(b, data + byte, 8);
      for (int i = 0; i < 8; ++i) v |= uint64_t{b[i]} << (8 * i);
    } else {
      for (size_t i = 0; byte + i < size && i < 8; ++i) {
        v |= uint64_t{static_cast<unsigned char>(data[byte + i])} << (8 * i);
      }
    }
    return v >> (bitpos & 7);
  }
  const void* Address(uint64_t bitpos) const {
    size_t byte = static_cast<size_t>(bitpos >> 3);
    return data + (byte < size ? byte : 0);
  }
};

// Looks for `remainder` among the L cells of the bucket starting at
// `bucket_bit`; returns the cell index or -1.
// (`cells` and `cell_bits` must be the codec's geometry; kept in the
// signature for call-site clarity and checked in debug builds.)
template <class Bits>
inline int FindInBucket(const Bits& bits, const CellCodec& codec,
                        uint64_t bucket_bit, uint32_t cells, uint32_t cell_bits,
                        uint64_t remainder) {
  assert(cells == codec.cells() && cell_bits == codec.cell_bits());
  (void)cells;
  (void)cell_bits;
  return codec.Find(bits, bucket_bit, remainder);
}

}  // namespace internal
}  // namespace dlcbf
