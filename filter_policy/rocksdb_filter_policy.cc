// RocksDB FilterPolicy writing static d-left fingerprint tables into SST
// filter blocks (issue #4).
//
// Design note
// -----------
// A static (SST) filter never deletes, so cells carry no counter (c = 0;
// the all-zero cell is the empty sentinel and Rn = 2^r - 1 remainders
// exist). A query hashes the key once (XXH3-64, fixed seed stored in the
// block), derives its true fingerprint f in [B] x [Rn] and probes the d
// candidate buckets P_i(f) (internal/dleft_layout.h). Exactly one copy of
// each stored fingerprint exists, so
//     FPR = F / (B * Rn)  ~=  d * L * alpha / (2^r - 1)
// for F stored fingerprints at cell load alpha = F / (d B L), and the
// payload costs r / alpha bits per key.
//
// Choosing the geometry for a budget of b bits/key: r = floor(b * alpha_max)
// and alpha = r / b, for the (d, L) that minimizes d L alpha / (2^r - 1).
// alpha_max is the highest load at which the table still fills reliably
// with DLeftCountingBloomFilter's bounded breadth-first relocation (256
// buckets per insert). Measured (200 trials at n = 30..3000, 1..20 trials at
// n = 30k..8M):
//     d L   alpha_max  min r   (cuckoo threshold)
//     4 1   0.91       8       (0.977)  0.93 fails at n = 4M (r = 9)
//     3 1   0.85       10      (0.918)  0.88 fails at n = 1M; r = 8 fails
//                                        at load 0.43 (n = 840k)
//     3 2   0.96       7       (0.988)
//     4 2   0.97       7       (0.997)
//     2 L   not used: d = 2 stops filling early at n = 4M (L = 2, r = 12:
//           load 0.70; L = 3, r = 9: 0.91; L = 4, r = 8: 0.94)
// "min r": with few remainder values the candidate buckets of different
// keys are strongly correlated under the current permutation round function
// (internal/dleft_layout.h: F(i, q) = fastrange((q ^ k_i0) * 0x9E37..., B)
// is a Weyl sequence in q, so F_1(q) - F_0(q) takes only 26 distinct values
// over the 255 remainders at r = 8, 31 of 511 at r = 9), and large tables
// stop filling long before the cuckoo threshold. With a Mix64-based round
// function every difference is distinct and d = 3, L = 1, r = 8 fills to
// 0.88 instead of 0.61 (random-walk cuckoo, n = 1M). Reported to the owner
// of dleft_layout.h; re-measure this table if the round function changes
// (it would make d = 3, L = 1 at load 0.9 usable: 0.53% FPR at 10 bits/key
// with 3 probes) -- and bump kBlockVersion, see below.
// Resulting plans (payload only; standard Bloom bound in parentheses):
//     b = 8    d3 L2 r7  alpha .875  FPR 4.13%   (2.16%)
//     b = 9    d4 L1 r8  alpha .889  FPR 1.39%   (1.33%)
//     b = 10   d4 L1 r9  alpha .900  FPR 0.705%  (0.82%; RocksDB
//                                                  FastLocalBloom measured
//                                                  ~0.97%)
//     b = 11   d4 L1 r10 alpha .909  FPR 0.355%  (0.51%)
//     b = 12   d3 L1 r10 alpha .833  FPR 0.244%  (0.31%)
//     b = 14   d3 L2 r13 alpha .929  FPR 0.068%  (0.12%)
//     b = 16   d3 L2 r15 alpha .938  FPR 0.017%  (0.046%)
// The FPR is a sawtooth in b (r is an integer); below ~9.5 bits/key a Bloom
// filter is as good or better. The paper default (d4, L8, r14 + c2) spends
// its bits on counters and is ~1.5x worse at equal space.
//
// Never failing a flush: if an insert overflows (all candidate buckets
// full and no relocation chain found), the table is rebuilt with fresh
// permutation keys, then at 5% lower load each time (more space), up to
// kMaxAttempts; the last resort is a standard Bloom filter in the same
// block format (kind 2), which cannot lose keys. Both are counted and
// logged. Every key hash is inserted: no key is ever dropped.

#include "dlcbf/rocksdb/filter_policy.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "dlcbf/dleft_counting_bloom_filter.h"
#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include "dlcbf/internal/rocksdb_filter_abi.h"
#include "rocksdb/table.h"

namespace dlcbf {

using rocksdb::FilterBitsBuilder;
using rocksdb::FilterBitsReader;
using rocksdb::Slice;
using rocksdb::Status;

namespace {

constexpr const char* kPolicyName = "dlcbf";
constexpr const char* kPolicyNickName = "dlcbf.DLeftFilterPolicy";
constexpr const char* kCompatibilityName = "dlcbf.DLeftFilter";

// ---------------------------------------------------------------------------
// Filter block format, version 1. All integers little-endian
// (internal/coding.h), written field by field.
//
//  offset  size  field
//  ------  ----  ------------------------------------------------------------
//       0     4  magic "dLSF" (bytes 64 4C 53 46)
//       4     1  format version (1)
//       5     1  kind: 0 = empty (no keys; never matches)
//                      1 = d-left fingerprint table
//                      2 = Bloom bit array (fallback; see below)
//       6     1  d, subtables          (kind 1; else 0)
//       7     1  L, cells per bucket   (kind 1; else 0)
//       8     1  r, remainder bits     (kind 1; else 0)
//       9     1  c, counter bits: always 0 (static; 0 = empty cell)
//      10     1  k, Bloom probes       (kind 2; else 0)
//      11     1  build retries (informational; readers ignore it)
//      12     4  reserved, 0
//      16     8  B buckets per subtable (kind 1) | m Bloom bits (kind 2) | 0
//      24     8  key hash seed: every key/prefix is hashed XXH3-64(key, seed)
//      32     8  entries: distinct key hashes inserted
//      40     8  P, payload bytes
//      48  16*d  permutation keys k[i][0], k[i][1], i = 0 .. d-1 (kind 1 only)
//       H     P  payload, H = 48 + 16 d (kind 1) or 48:
//                kind 1: the packed cell array of DLeftCountingBloomFilter
//                        (AppendPackedBits; layout in internal/dleft_layout.h),
//                        P = ceil(d * B * L * r / 8)
//                kind 2: m bits, bit j = bit (j % 8) of byte (j / 8),
//                        P = ceil(m / 8)
//     H+P     8  XXH3-64 (seed 0) of bytes [0, H + P)
//
// Bloom fallback probes (kind 2): x = h, delta = Mix64(h) | 1; for j < k:
// bit Mul64Hi(x, m) is set, then x += delta.
//
// Version 1 also pins everything the reader recomputes: XXH3-64 key
// hashing, internal::Hashing (FingerprintOf, Permute with the current F/G
// round functions) and the cell layout/codec of internal/dleft_layout.h as
// of this commit. A change to any of them changes the meaning of existing
// blocks (false negatives on old SSTs): bump kBlockVersion and keep a
// reader for version 1. tests/filter_policy_test.cc
// (GoldenVersion1BlockStillReadable) fails if that happens unnoticed.
//
// A reader accepts a block only if every field is in range, the sizes agree
// exactly and the checksum matches; anything else yields a reader that
// answers "may match" for every key (never a false negative), logged to
// DLeftFilterPolicyOptions::info_log.
// ---------------------------------------------------------------------------
constexpr uint32_t kBlockMagic = 0x46534C64;  // "dLSF" read little-endian
constexpr uint8_t kBlockVersion = 1;
constexpr size_t kFixedHeader = 48;
constexpr size_t kChecksumBytes = 8;
enum BlockKind : uint8_t { kKindEmpty = 0, kKindDLeft = 1, kKindBloom = 2 };

constexpr uint64_t kKeyHashSeed = 0xD1CBF55710000001ULL;
constexpr uint64_t kPermSeedBase = 0x5EEDD1CBF0005577ULL;
constexpr int kMaxAttempts = 5;
constexpr uint32_t kMaxBloomProbes = 30;

// Resource limits (issue #7). RocksDB 7.8.3 stores a filter block's size in
// a 64-bit BlockHandle, but its own filters never exceed ~4 GiB: FastLocal-
// Bloom caps its bit array at 0xffffffc0 bytes (filter_policy.cc,
// CalculateSpace / RoundDownUsableSpace) and Ribbon falls back to Bloom above
// 950M entries, and a whole filter block is read, cached and charged to the
// block cache as one allocation. dlcbf therefore never writes a block larger
// than DLeftFilterPolicyOptions::max_filter_block_bytes (default
// kDefaultMaxFilterBlockBytes = 0xffffffc0, RocksDB's own maximum): when the
// d-left table for an SST's keys would be larger, the builder writes a
// Bloom-format block capped at that size instead -- lossless (every key
// hash is set), only its false-positive rate is higher -- counts it in
// bloom_fallbacks and logs a warning that advises partitioned filters
// (partition_filters = true, index_type = kTwoLevelIndexSearch), which keep
// every block small whatever the SST size.
// The builder also never lets std::bad_alloc cross into RocksDB: if it
// cannot hold the key hashes or the block, it writes a tiny block that
// matches every key (lossless, no filtering) and logs why.

constexpr uint64_t kMinFilterBlockLimit = 4096;
constexpr uint64_t kMaxFilterBlockLimit = kDefaultMaxFilterBlockBytes;

size_t HeaderBytes(uint8_t kind, uint32_t d) {
  return kFixedHeader + (kind == kKindDLeft ? 16u * d : 0u);
}

// ---- options: numbers, ids, validation --------------------------------------

std::string FormatNumber(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 6);
  return std::string(buf, res.ptr);
}

// Plain decimal with an optional exponent: [0-9.]+([eE][+-]?[0-9]+)?.
// No sign, no nan/inf/hex. Locale-independent.
bool ParseDecimal(const std::string& s, double* out) {
  if (s.empty() || s.size() > 40) return false;
  size_t i = 0;
  bool digits = false;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
    digits |= s[i] != '.';
    ++i;
  }
  if (!digits) return false;
  if (i < s.size()) {
    if (s[i] != 'e' && s[i] != 'E') return false;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i == s.size()) return false;
    for (; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    }
  }
  double v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ParseUint(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 12) return false;
  uint64_t v = 0;
  for (char ch : s) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  *out = v;
  return true;
}

double Canonical(double v) {
  double c = v;
  std::string s = FormatNumber(v);
  std::from_chars(s.data(), s.data() + s.size(), c, std::chars_format::general);
  return c;
}

Status Invalid(const std::string& msg) {
  return Status::InvalidArgument("dlcbf filter policy: " + msg);
}

// Highest reliable load of (d, L) with the bounded BFS relocation, for
// expert overrides; see the table in the design note.
double MaxLoad(uint32_t d, uint32_t L) {
  if (L == 1) return d <= 2 ? 0.45 : d == 3 ? 0.85 : d == 4 ? 0.91 : 0.93;
  if (L == 2) return d <= 2 ? 0.75 : d == 3 ? 0.96 : 0.97;
  if (L == 3) return d <= 2 ? 0.88 : 0.97;
  return d <= 2 ? 0.92 : 0.97;
}

// Geometries the automatic plan chooses from, with the load and the
// smallest r at which they filled reliably up to n = 8M keys (see the
// design note: with few remainder values the candidate buckets of
// different keys are correlated and large tables stop filling early).
struct Candidate {
  uint32_t d, L;
  double max_load;
  uint32_t min_r;
};
constexpr Candidate kCandidates[] = {
    {4, 1, 0.91, 8}, {3, 1, 0.85, 10}, {3, 2, 0.96, 7}, {4, 2, 0.97, 7}};

double PlanFpr(uint32_t d, uint32_t L, uint32_t r, double load) {
  return d * L * load / (std::ldexp(1.0, static_cast<int>(r)) - 1.0);
}

uint64_t BucketsFor(uint64_t n, double load, uint32_t d, uint32_t L) {
  double b = std::ceil(static_cast<double>(n) / (load * d * L));
  if (!(b >= 1.0)) return 1;
  if (b > 1e15) return uint64_t{1} << 50;  // absurd; Geometry::Invalid rejects
  return static_cast<uint64_t>(b);
}

// ---- shared state of one policy object --------------------------------------

struct PolicyShared {
  std::atomic<uint64_t> filters_built{0};
  std::atomic<uint64_t> entries_built{0};
  std::atomic<uint64_t> placement_retries{0};
  std::atomic<uint64_t> bloom_fallbacks{0};
  std::atomic<uint64_t> unreadable_blocks{0};
  std::atomic<uint64_t> post_verify_failures{0};
  std::shared_ptr<rocksdb::Logger> info_log;
};

// ---- block parsing ----------------------------------------------------------

struct ParsedBlock {
  uint8_t kind = kKindEmpty;
  internal::Geometry geo;
  internal::PermutationKeys keys;
  uint32_t bloom_probes = 0;
  uint64_t bloom_bits = 0;
  uint64_t hash_seed = 0;
  uint64_t entries = 0;
  const char* payload = nullptr;
  size_t payload_bytes = 0;
};

// Never reads outside `s`. On failure *why says what is wrong.
bool ParseBlock(const Slice& s, ParsedBlock* out, std::string* why) {
  if (s.size() < kFixedHeader + kChecksumBytes) {
    *why = "truncated block (" + std::to_string(s.size()) + " bytes)";
    return false;
  }
  internal::Decoder dec(s.data(), s.size());
  uint32_t magic = 0, reserved32 = 0;
  uint8_t version = 0, kind = 0, d = 0, L = 0, r = 0, c = 0, k = 0, retries = 0;
  uint64_t size_field = 0, seed = 0, entries = 0, payload = 0;
  dec.Get32(&magic);
  dec.Get8(&version);
  dec.Get8(&kind);
  dec.Get8(&d);
  dec.Get8(&L);
  dec.Get8(&r);
  dec.Get8(&c);
  dec.Get8(&k);
  dec.Get8(&retries);
  dec.Get32(&reserved32);
  dec.Get64(&size_field);
  dec.Get64(&seed);
  dec.Get64(&entries);
  dec.Get64(&payload);
  if (magic != kBlockMagic) {
    *why = "bad magic (not a dlcbf filter block)";
    return false;
  }
  if (version != kBlockVersion) {
    *why = "unsupported format version " + std::to_string(version);
    return false;
  }
  if (c != 0) {
    *why = "counter bits must be 0 in an SST filter";
    return false;
  }
  if (reserved32 != 0) {
    *why = "reserved header bytes are not zero";
    return false;
  }
  const size_t header = HeaderBytes(kind, d);
  if (s.size() < header + kChecksumBytes) {
    *why = "truncated block (" + std::to_string(s.size()) + " bytes)";
    return false;
  }
  if (payload != s.size() - header - kChecksumBytes) {
    *why = "payload size " + std::to_string(payload) + " does not match block size " +
           std::to_string(s.size());
    return false;
  }
  switch (kind) {
    case kKindEmpty:
      if (d || L || r || k || size_field || entries || payload) {
        *why = "inconsistent empty block";
        return false;
      }
      break;
    case kKindDLeft: {
      internal::Geometry g;
      g.subtables = d;
      g.buckets = size_field;
      g.cells = L;
      g.remainder_bits = r;
      g.counter_bits = 0;
      if (const char* bad = g.Invalid()) {
        *why = std::string("bad geometry: ") + bad;
        return false;
      }
      if (g.total_bytes() != payload) {
        *why = "payload size does not match geometry";
        return false;
      }
      if (entries > g.total_cells()) {
        *why = "more entries than cells";
        return false;
      }
      out->geo = g;
      for (uint32_t i = 0; i < d; ++i) {
        dec.Get64(&out->keys.k[i][0]);
        dec.Get64(&out->keys.k[i][1]);
      }
      break;
    }
    case kKindBloom:
      if (k < 1 || k > kMaxBloomProbes || size_field == 0 || d || L || r ||
          (size_field + 7) / 8 != payload) {
        *why = "inconsistent Bloom block";
        return false;
      }
      out->bloom_probes = k;
      out->bloom_bits = size_field;
      break;
    default:
      *why = "unknown block kind " + std::to_string(kind);
      return false;
  }
  const size_t body = header + static_cast<size_t>(payload);
  if (internal::HashKey(s.data(), body, 0) != internal::DecodeFixed64(s.data() + body)) {
    *why = "checksum mismatch";
    return false;
  }
  out->kind = kind;
  out->hash_seed = seed;
  out->entries = entries;
  out->payload = s.data() + header;
  out->payload_bytes = static_cast<size_t>(payload);
  return true;
}

// ---- readers ----------------------------------------------------------------

class ConstantReader final : public FilterBitsReader {
 public:
  explicit ConstantReader(bool answer) : answer_(answer) {}
  bool MayMatch(const Slice&) override { return answer_; }
  void MayMatch(int num_keys, Slice**, bool* may_match) override {
    for (int i = 0; i < num_keys; ++i) may_match[i] = answer_;
  }

 private:
  const bool answer_;
};

class DLeftReader final : public FilterBitsReader {
 public:
  explicit DLeftReader(const ParsedBlock& p)
      : hashing_(p.geo, p.hash_seed, p.keys),
        codec_(p.geo),
        bits_{p.payload, p.payload_bytes},
        buckets_(p.geo.buckets),
        bucket_bits_(p.geo.bucket_bits()),
        d_(p.geo.subtables),
        cells_(p.geo.cells),
        cell_bits_(p.geo.cell_bits()) {}

  bool MayMatch(const Slice& key) override { return HashMayMatch(Hash(key)); }

  // Hash the batch, locate and prefetch every candidate bucket, then probe
  // (subtable-major, so the d loads of different keys overlap).
  void MayMatch(int num_keys, Slice** keys, bool* may_match) override {
    constexpr int kChunk = 32;  // MultiGet batches at most 32 keys
    internal::Fingerprint fp[kChunk];
    uint64_t bit[internal::kMaxSubtables][kChunk];
    uint64_t rem[internal::kMaxSubtables][kChunk];
    for (int base = 0; base < num_keys; base += kChunk) {
      const int m = std::min(kChunk, num_keys - base);
      for (int i = 0; i < m; ++i) fp[i] = hashing_.FingerprintOf(Hash(*keys[base + i]));
      for (uint32_t s = 0; s < d_; ++s) {
        for (int i = 0; i < m; ++i) {
          const internal::Location loc = hashing_.Permute(s, fp[i]);
          const uint64_t b = (uint64_t{s} * buckets_ + loc.bucket) * bucket_bits_;
          bit[s][i] = b;
          rem[s][i] = loc.remainder;
          __builtin_prefetch(bits_.Address(b));
          // The bucket's last byte, if it starts another cache line.
          if ((b >> 9) != ((b + bucket_bits_ - 1) >> 9)) {
            __builtin_prefetch(bits_.Address(b + bucket_bits_ - 1));
          }
        }
      }
      for (int i = 0; i < m; ++i) may_match[base + i] = false;
      for (uint32_t s = 0; s < d_; ++s) {
        for (int i = 0; i < m; ++i) {
          may_match[base + i] |=
              internal::FindInBucket(bits_, codec_, bit[s][i], cells_, cell_bits_, rem[s][i]) >= 0;
        }
      }
    }
  }

  bool HashMayMatch(uint64_t h) const {
    Probe p;
    Locate(h, &p);
    return Probe_(p);
  }

 private:
  struct Probe {
    uint64_t bit[internal::kMaxSubtables];
    uint64_t remainder[internal::kMaxSubtables];
  };
  uint64_t Hash(const Slice& key) const { return hashing_.Hash(key.data(), key.size()); }
  void Locate(uint64_t h, Probe* p) const {
    const internal::Fingerprint f = hashing_.FingerprintOf(h);
    for (uint32_t i = 0; i < d_; ++i) {
      const internal::Location loc = hashing_.Permute(i, f);
      p->bit[i] = (uint64_t{i} * buckets_ + loc.bucket) * bucket_bits_;
      p->remainder[i] = loc.remainder;
    }
  }
  bool Probe_(const Probe& p) const {
    for (uint32_t i = 0; i < d_; ++i) {
      if (internal::FindInBucket(bits_, codec_, p.bit[i], cells_, cell_bits_, p.remainder[i]) >= 0) {
        return true;
      }
    }
    return false;
  }

  const internal::Hashing hashing_;
  const internal::CellCodec codec_;
  const internal::ByteBits bits_;
  const uint64_t buckets_;
  const uint64_t bucket_bits_;
  const uint32_t d_;
  const uint32_t cells_;
  const uint32_t cell_bits_;
};

class BloomReader final : public FilterBitsReader {
 public:
  explicit BloomReader(const ParsedBlock& p)
      : data_(p.payload), bits_(p.bloom_bits), probes_(p.bloom_probes), seed_(p.hash_seed) {}
  bool MayMatch(const Slice& key) override {
    return HashMayMatch(internal::HashKey(key.data(), key.size(), seed_));
  }
  bool HashMayMatch(uint64_t h) const {
    uint64_t x = h;
    const uint64_t delta = internal::Mix64(h) | 1;
    for (uint32_t j = 0; j < probes_; ++j) {
      const uint64_t pos = internal::Mul64Hi(x, bits_);
      if (((static_cast<unsigned char>(data_[pos >> 3]) >> (pos & 7)) & 1) == 0) return false;
      x += delta;
    }
    return true;
  }

 private:
  const char* data_;
  const uint64_t bits_;
  const uint32_t probes_;
  const uint64_t seed_;
};

// Creates the reader for a block; never fails. `unreadable` (if non-null)
// is set when the block could not be parsed.
FilterBitsReader* MakeReader(const Slice& contents, PolicyShared* shared, bool* unreadable) {
  ParsedBlock p;
  std::string why;
  if (unreadable) *unreadable = false;
  if (!ParseBlock(contents, &p, &why)) {
    if (unreadable) *unreadable = true;
    if (shared) {
      shared->unreadable_blocks.fetch_add(1, std::memory_order_relaxed);
      if (shared->info_log) {
        rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, shared->info_log.get(),
                     "[dlcbf] unreadable filter block (%s, %zu bytes); every key "
                     "will be treated as a possible match",
                     why.c_str(), contents.size());
      }
    }
    return new ConstantReader(true);
  }
  switch (p.kind) {
    case kKindDLeft: return new DLeftReader(p);
    case kKindBloom: return new BloomReader(p);
    default: return new ConstantReader(false);  // empty: no key was added
  }
}

// ---- builder ----------------------------------------------------------------

void PutHeader(std::string* out, uint8_t kind, uint8_t d, uint8_t L, uint8_t r, uint8_t k,
               uint8_t retries, uint64_t size_field, uint64_t entries, uint64_t payload) {
  internal::PutFixed32(out, kBlockMagic);
  internal::PutFixed8(out, kBlockVersion);
  internal::PutFixed8(out, kind);
  internal::PutFixed8(out, d);
  internal::PutFixed8(out, L);
  internal::PutFixed8(out, r);
  internal::PutFixed8(out, 0);  // c
  internal::PutFixed8(out, k);
  internal::PutFixed8(out, retries);
  internal::PutFixed32(out, 0);
  internal::PutFixed64(out, size_field);
  internal::PutFixed64(out, kKeyHashSeed);
  internal::PutFixed64(out, entries);
  internal::PutFixed64(out, payload);
}

class DLeftBuilder final : public FilterBitsBuilder {
 public:
  DLeftBuilder(const DLeftFilterPlan& plan, uint32_t max_nodes, uint64_t max_block_bytes,
               std::shared_ptr<PolicyShared> shared, bool verify, rocksdb::Logger* info_log)
      : plan_(plan), max_nodes_(max_nodes), max_block_bytes_(max_block_bytes),
        shared_(std::move(shared)), verify_(verify), info_log_(info_log) {}

  void AddKey(const Slice& key) override {
    const uint64_t h = internal::HashKey(key.data(), key.size(), kKeyHashSeed);
    if (match_all_) return;  // out of memory earlier: the block will match every key
    if (!hashes_.empty() && hashes_.back() == h) return;  // adjacent repeat
    try {
      hashes_.push_back(h);
    } catch (const std::bad_alloc&) {
      OutOfMemory("holding the key hashes");
      return;
    }
    if (verify_) xor_ ^= h;
  }

  size_t EstimateEntriesAdded() override { return match_all_ ? match_all_keys_ : hashes_.size(); }

  Slice Finish(std::unique_ptr<const char[]>* buf) override { return Finish(buf, nullptr); }

  Slice Finish(std::unique_ptr<const char[]>* buf, Status* status) override {
    if (status) *status = Status::OK();
    if (verify_) {
      uint64_t x = 0;
      for (uint64_t h : hashes_) x ^= h;
      if (x != xor_ && status) {
        *status = Status::Corruption("dlcbf filter: key hashes changed in memory before Finish");
      }
    }
    std::string block;
    char* mem = nullptr;
    try {
      if (match_all_) {
        BuildMatchAll(&block);
      } else {
        Build(&block);
      }
      mem = new char[block.size()];
    } catch (const std::bad_alloc&) {
      OutOfMemory("building the filter block");
      std::string().swap(block);
      BuildMatchAll(&block);  // ~64 bytes
      mem = new char[block.size()];
    }
    shared_->filters_built.fetch_add(1, std::memory_order_relaxed);
    shared_->entries_built.fetch_add(hashes_.size(), std::memory_order_relaxed);
    std::memcpy(mem, block.data(), block.size());
    buf->reset(mem);
    // Reset for the next partition. Keep the hashes for MaybePostVerify.
    if (verify_) {
      pending_.swap(hashes_);
    }
    hashes_.clear();
    xor_ = 0;
    match_all_ = false;
    match_all_keys_ = 0;
    return Slice(mem, block.size());
  }

  Status MaybePostVerify(const Slice& content) override {
    if (!verify_) return Status::OK();
    std::vector<uint64_t> pending;
    pending.swap(pending_);
    ParsedBlock p;
    std::string why;
    Status result;
    if (!ParseBlock(content, &p, &why)) {
      result = Status::Corruption("dlcbf filter post-verify: " + why);
    } else if (p.kind == kKindDLeft) {
      DLeftReader reader(p);
      for (uint64_t h : pending) {
        if (!reader.HashMayMatch(h)) {
          result = Status::Corruption("dlcbf filter post-verify: a key hash is missing");
          break;
        }
      }
    } else if (p.kind == kKindBloom) {
      BloomReader reader(p);
      for (uint64_t h : pending) {
        if (!reader.HashMayMatch(h)) {
          result = Status::Corruption("dlcbf filter post-verify: a key hash is missing");
          break;
        }
      }
    } else if (!pending.empty()) {
      result = Status::Corruption("dlcbf filter post-verify: empty filter for added keys");
    }
    if (!result.ok()) shared_->post_verify_failures.fetch_add(1, std::memory_order_relaxed);
    return result;
  }

  size_t ApproximateNumEntries(size_t bytes) override {
    const size_t overhead = HeaderBytes(kKindDLeft, plan_.subtables) + kChecksumBytes;
    if (bytes <= overhead) return 0;
    const double payload_bits = static_cast<double>(bytes - overhead) * 8.0;
    double est = std::floor(payload_bits * plan_.load / plan_.remainder_bits);
    if (est > 1e12) est = 1e12;
    uint64_t n = static_cast<uint64_t>(est);
    // Step down until the block built for n entries fits.
    while (n > 0 && BlockBytesFor(n) > bytes) n -= std::max<uint64_t>(1, n / 1024);
    return static_cast<size_t>(n);
  }

 private:
  uint64_t BlockBytesFor(uint64_t n) const { return BlockBytesFor(n, plan_.load); }
  uint64_t BlockBytesFor(uint64_t n, double load) const {
    internal::Geometry g;
    g.subtables = plan_.subtables;
    g.cells = plan_.cells_per_bucket;
    g.remainder_bits = plan_.remainder_bits;
    g.buckets = BucketsFor(n, load, g.subtables, g.cells);
    return HeaderBytes(kKindDLeft, g.subtables) + g.total_bytes() + kChecksumBytes;
  }

  void Build(std::string* out) {
    const uint64_t n = hashes_.size();
    if (n == 0) {
      PutHeader(out, kKindEmpty, 0, 0, 0, 0, 0, 0, 0, 0);
      internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
      return;
    }
    if (BlockBytesFor(n, plan_.load) > max_block_bytes_) {
      Warn("a d-left filter for %llu keys needs %llu bytes, over the filter block limit of %llu "
           "bytes (max_filter_block_bytes; RocksDB's own filters stop at ~4 GiB). Writing a "
           "Bloom-format block capped at the limit instead (lossless, higher FP rate). Use "
           "partitioned filters (BlockBasedTableOptions::partition_filters = true, index_type = "
           "kTwoLevelIndexSearch) or smaller SST files to keep the full FP rate.",
           static_cast<unsigned long long>(n),
           static_cast<unsigned long long>(BlockBytesFor(n, plan_.load)),
           static_cast<unsigned long long>(max_block_bytes_));
      BuildBloom(out);
      return;
    }
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      const double load = plan_.load * std::pow(0.95, std::max(0, attempt - 1));
      if (BlockBytesFor(n, load) > max_block_bytes_) break;  // retries at lower load grow the table
      DLeftOptions o;
      o.subtables = plan_.subtables;
      o.cells_per_bucket = plan_.cells_per_bucket;
      o.remainder_bits = plan_.remainder_bits;
      o.counter_bits = 0;
      o.buckets_per_subtable = BucketsFor(n, load, o.subtables, o.cells_per_bucket);
      o.seed = internal::Mix64(kPermSeedBase + static_cast<uint64_t>(attempt));
      o.relocation = Relocation::kBreadthFirst;
      o.max_relocation_nodes = max_nodes_;
      std::unique_ptr<DLeftCountingBloomFilter> f;
      Status s = DLeftCountingBloomFilter::Create(o, &f);
      if (!s.ok()) {
        Warn("cannot allocate a d-left table for %llu keys (%s)",
             static_cast<unsigned long long>(n), s.ToString().c_str());
        break;
      }
      bool ok = true;
      for (uint64_t h : hashes_) {
        if (f->InsertHash(h) != OpResult::kOk) {
          ok = false;
          break;
        }
      }
      if (!ok) {
        shared_->placement_retries.fetch_add(1, std::memory_order_relaxed);
        Warn("d-left placement overflow at load %.3f (attempt %d, %llu keys); rebuilding", load,
             attempt + 1, static_cast<unsigned long long>(n));
        continue;
      }
      const std::vector<uint64_t> pk = f->permutation_keys();
      const uint64_t payload = f->bytes();
      out->reserve(HeaderBytes(kKindDLeft, o.subtables) + payload + kChecksumBytes);
      PutHeader(out, kKindDLeft, static_cast<uint8_t>(o.subtables),
                static_cast<uint8_t>(o.cells_per_bucket), static_cast<uint8_t>(o.remainder_bits), 0,
                static_cast<uint8_t>(attempt), o.buckets_per_subtable, n, payload);
      for (uint64_t key : pk) internal::PutFixed64(out, key);
      f->AppendPackedBits(out);
      internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
      return;
    }
    BuildBloom(out);
  }

  void BuildBloom(std::string* out) {
    shared_->bloom_fallbacks.fetch_add(1, std::memory_order_relaxed);
    const uint64_t n = hashes_.size();
    Warn("writing a Bloom-format filter block for %llu keys", static_cast<unsigned long long>(n));
    const double want_bpk = plan_.bits_per_key;
    // Capped at max_filter_block_bytes (header and checksum included).
    const uint64_t max_bits = (max_block_bytes_ - kFixedHeader - kChecksumBytes) * 8;
    const uint64_t m = std::min<uint64_t>(
        max_bits, std::max<uint64_t>(64, static_cast<uint64_t>(std::ceil(want_bpk * n))));
    const double bpk = static_cast<double>(m) / static_cast<double>(std::max<uint64_t>(1, n));
    const uint32_t k = std::min<uint32_t>(
        kMaxBloomProbes, std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(bpk * 0.6931))));
    const uint64_t payload = (m + 7) / 8;
    PutHeader(out, kKindBloom, 0, 0, 0, static_cast<uint8_t>(k), kMaxAttempts, m, n, payload);
    const size_t start = out->size();
    out->append(static_cast<size_t>(payload), '\0');
    char* bits = &(*out)[start];
    for (uint64_t h : hashes_) {
      uint64_t x = h;
      const uint64_t delta = internal::Mix64(h) | 1;
      for (uint32_t j = 0; j < k; ++j) {
        const uint64_t pos = internal::Mul64Hi(x, m);
        bits[pos >> 3] = static_cast<char>(bits[pos >> 3] | (1 << (pos & 7)));
        x += delta;
      }
    }
    internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
  }

  // A Bloom-format block of 64 set bits: matches every key (lossless, no
  // filtering). Used when memory ran out; needs ~72 bytes.
  void BuildMatchAll(std::string* out) {
    out->clear();
    PutHeader(out, kKindBloom, 0, 0, 0, 1, kMaxAttempts, 64, match_all_keys_, 8);
    internal::PutFixed64(out, ~uint64_t{0});
    internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
  }

  void OutOfMemory(const char* where) {
    if (!match_all_) {
      match_all_keys_ = hashes_.size();
      Warn("out of memory while %s (%llu keys); this SST gets a filter that matches every key "
           "(no false negatives, no filtering)",
           where, static_cast<unsigned long long>(hashes_.size()));
      shared_->bloom_fallbacks.fetch_add(1, std::memory_order_relaxed);
    }
    match_all_ = true;
    xor_ = 0;
    pending_.clear();
    std::vector<uint64_t>().swap(hashes_);
  }

  template <typename... Args>
  void Warn(const char* fmt, Args... args) {
    if (info_log_ == nullptr) return;
    std::string f = std::string("[dlcbf] ") + fmt;
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_, f.c_str(), args...);
  }

  const DLeftFilterPlan plan_;
  const uint32_t max_nodes_;
  const uint64_t max_block_bytes_;
  const std::shared_ptr<PolicyShared> shared_;
  const bool verify_;
  rocksdb::Logger* const info_log_;
  std::vector<uint64_t> hashes_;
  std::vector<uint64_t> pending_;
  uint64_t xor_ = 0;
  bool match_all_ = false;      // out of memory: write a match-all block
  uint64_t match_all_keys_ = 0;
};

// ---- the policy ---------------------------------------------------------------

class DLeftFilterPolicy final : public rocksdb::FilterPolicy {
 public:
  DLeftFilterPolicy(const DLeftFilterPolicyOptions& o, const DLeftFilterPlan& plan)
      : options_(o), plan_(plan), id_(DLeftFilterPolicyId(o)), shared_(std::make_shared<PolicyShared>()) {
    shared_->info_log = o.info_log;
  }

  static const char* kClassName() { return kPolicyName; }
  const char* Name() const override { return kPolicyName; }
  const char* NickName() const override { return kPolicyNickName; }
  std::string GetId() const override { return id_; }
  const char* CompatibilityName() const override { return kCompatibilityName; }

  FilterBitsBuilder* GetBuilderWithContext(const rocksdb::FilterBuildingContext& ctx) const override {
    return new DLeftBuilder(plan_, options_.max_relocation_nodes, options_.max_filter_block_bytes,
                            shared_, ctx.table_options.detect_filter_construct_corruption,
                            ctx.info_log);
  }

  FilterBitsReader* GetFilterBitsReader(const Slice& contents) const override {
    return MakeReader(contents, shared_.get(), nullptr);
  }

  const DLeftFilterPolicyOptions& options() const { return options_; }
  const PolicyShared& shared() const { return *shared_; }

 private:
  const DLeftFilterPolicyOptions options_;
  const DLeftFilterPlan plan_;
  const std::string id_;
  const std::shared_ptr<PolicyShared> shared_;
};

const DLeftFilterPolicy* AsDLeft(const rocksdb::FilterPolicy* p) {
  if (p == nullptr || std::strcmp(p->Name(), kPolicyName) != 0) return nullptr;
  return static_cast<const DLeftFilterPolicy*>(p);
}

}  // namespace

// ---- public API ---------------------------------------------------------------

Status DLeftFilterPolicyOptions::Validate() const {
  if (fp_rate == 0.0) {
    if (!std::isfinite(bits_per_key) || bits_per_key < 4.0 || bits_per_key > 48.0) {
      return Invalid("bits_per_key must be in [4, 48], got " + FormatNumber(bits_per_key));
    }
  } else if (!std::isfinite(fp_rate) || fp_rate < 1e-9 || fp_rate > 0.5) {
    return Invalid("fp_rate must be in [1e-9, 0.5] (or 0 to use bits_per_key), got " +
                   FormatNumber(fp_rate));
  }
  if (subtables != 0 && (subtables < 2 || subtables > 8)) {
    return Invalid("subtables (d) must be in [2, 8], got " + std::to_string(subtables));
  }
  if (cells_per_bucket != 0 && cells_per_bucket > 8) {
    return Invalid("cells_per_bucket (L) must be in [1, 8], got " + std::to_string(cells_per_bucket));
  }
  if (remainder_bits != 0 && (remainder_bits < 2 || remainder_bits > 32)) {
    return Invalid("remainder_bits (r) must be in [2, 32], got " + std::to_string(remainder_bits));
  }
  if (load != 0.0 && (!std::isfinite(load) || load < 0.05 || load > 0.99)) {
    return Invalid("load must be in [0.05, 0.99], got " + FormatNumber(load));
  }
  if (max_filter_block_bytes < kMinFilterBlockLimit || max_filter_block_bytes > kMaxFilterBlockLimit) {
    return Invalid("max_filter_block_bytes must be in [" + std::to_string(kMinFilterBlockLimit) + ", " +
                   std::to_string(kMaxFilterBlockLimit) + "], got " + std::to_string(max_filter_block_bytes));
  }
  if (max_relocation_nodes > 65536) {
    return Invalid("max_relocation_nodes must be in [0, 65536], got " +
                   std::to_string(max_relocation_nodes));
  }
  if (fp_rate == 0.0 && remainder_bits != 0 && load != 0.0) {
    return Invalid("give at most one of remainder_bits (r) and load with a bits_per_key budget "
                   "(the other follows: load = r / bits_per_key)");
  }
  return Status::OK();
}

Status PlanDLeftFilter(const DLeftFilterPolicyOptions& o, DLeftFilterPlan* out) {
  Status s = o.Validate();
  if (!s.ok()) return s;
  bool found = false;
  DLeftFilterPlan best;
  std::string last_problem = "no geometry fits";
  auto consider = [&](uint32_t d, uint32_t L, double cand_load, uint32_t min_r) {
    DLeftFilterPlan p;
    p.subtables = d;
    p.cells_per_bucket = L;
    const double max_load = o.load != 0.0 ? o.load : cand_load;
    if (o.fp_rate == 0.0) {
      const double b = o.bits_per_key;
      if (o.remainder_bits != 0) {
        p.remainder_bits = o.remainder_bits;
        p.load = o.remainder_bits / b;
        if (p.load > 0.99) {
          last_problem = "remainder_bits (r) = " + std::to_string(o.remainder_bits) +
                         " needs load r / bits_per_key = " + FormatNumber(p.load) +
                         " > 0.99; lower r or raise bits_per_key";
          return;
        }
      } else {
        const double rr = std::floor(b * max_load + 1e-9);
        p.remainder_bits = static_cast<uint32_t>(std::min(32.0, rr));
        if (p.remainder_bits < 2) {
          last_problem = "bits_per_key " + FormatNumber(b) + " is too small for load " +
                         FormatNumber(max_load) + " (needs r >= 2)";
          return;
        }
        p.load = o.load != 0.0 ? o.load : p.remainder_bits / b;
      }
    } else {
      p.load = max_load;
      if (o.remainder_bits != 0) {
        p.remainder_bits = o.remainder_bits;
      } else {
        const double need = std::log2(d * L * p.load / o.fp_rate + 1.0);
        const double rr = std::max<double>(min_r, std::max(2.0, std::ceil(need - 1e-12)));
        if (rr > 32) {
          last_problem = "fp_rate " + FormatNumber(o.fp_rate) + " needs more than 32 remainder bits";
          return;
        }
        p.remainder_bits = static_cast<uint32_t>(rr);
      }
    }
    if (o.remainder_bits == 0 && p.remainder_bits < min_r) {
      last_problem = "no reliable geometry for this budget (needs remainder bits >= " +
                     std::to_string(min_r) + ")";
      return;
    }
    p.bits_per_key = p.remainder_bits / p.load;
    p.predicted_fpr = PlanFpr(d, L, p.remainder_bits, p.load);
    bool better;
    if (!found) {
      better = true;
    } else if (o.fp_rate == 0.0) {
      better = p.predicted_fpr < best.predicted_fpr * (1 - 1e-9) ||
               (p.predicted_fpr <= best.predicted_fpr * (1 + 1e-9) &&
                d * L < best.subtables * best.cells_per_bucket);
    } else {
      better = p.bits_per_key < best.bits_per_key * (1 - 1e-9) ||
               (p.bits_per_key <= best.bits_per_key * (1 + 1e-9) &&
                p.predicted_fpr < best.predicted_fpr);
    }
    if (better) {
      best = p;
      found = true;
    }
  };
  if (o.subtables != 0 || o.cells_per_bucket != 0) {
    const uint32_t d_lo = o.subtables ? o.subtables : 2, d_hi = o.subtables ? o.subtables : 4;
    const uint32_t l_lo = o.cells_per_bucket ? o.cells_per_bucket : 1;
    const uint32_t l_hi = o.cells_per_bucket ? o.cells_per_bucket : 4;
    for (uint32_t d = d_lo; d <= d_hi; ++d) {
      for (uint32_t L = l_lo; L <= l_hi; ++L) consider(d, L, MaxLoad(d, L), 2);
    }
  } else {
    for (const Candidate& c : kCandidates) consider(c.d, c.L, c.max_load, c.min_r);
    // Small budgets (below ~8.5 bits/key): nothing is reliable for large
    // tables; take the best anyway (big SSTs may then be rebuilt at lower
    // load or fall back to the Bloom format, which is better there).
    if (!found) {
      for (const Candidate& c : kCandidates) consider(c.d, c.L, c.max_load, 2);
    }
  }
  if (!found) return Invalid(last_problem);
  *out = best;
  return Status::OK();
}

std::string DLeftFilterPolicyId(const DLeftFilterPolicyOptions& o) {
  std::string id = kPolicyName;
  id += ':';
  id += o.fp_rate > 0 ? "fpr" + FormatNumber(o.fp_rate) : FormatNumber(o.bits_per_key);
  if (o.subtables) id += ":d" + std::to_string(o.subtables);
  if (o.cells_per_bucket) id += ":L" + std::to_string(o.cells_per_bucket);
  if (o.remainder_bits) id += ":r" + std::to_string(o.remainder_bits);
  if (o.load != 0.0) id += ":load" + FormatNumber(o.load);
  if (o.max_relocation_nodes != DLeftFilterPolicyOptions().max_relocation_nodes) {
    id += ":nodes" + std::to_string(o.max_relocation_nodes);
  }
  return id;
}

Status ParseDLeftFilterPolicyId(const std::string& id, DLeftFilterPolicyOptions* options) {
  DLeftFilterPolicyOptions o;
  std::vector<std::string> tok;
  size_t start = 0;
  for (;;) {
    size_t colon = id.find(':', start);
    tok.push_back(id.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (tok[0] != kPolicyName && tok[0] != kPolicyNickName) {
    return Invalid("id must start with \"dlcbf\", got \"" + id + "\"");
  }
  if (tok.size() >= 2) {
    const std::string& b = tok[1];
    if (b.compare(0, 3, "fpr") == 0) {
      if (!ParseDecimal(b.substr(3), &o.fp_rate)) {
        return Invalid("fp_rate: \"" + b.substr(3) + "\" is not a positive decimal number");
      }
      if (o.fp_rate == 0.0) return Invalid("fp_rate must be in [1e-9, 0.5], got 0");
    } else if (!ParseDecimal(b, &o.bits_per_key)) {
      return Invalid("bits_per_key: \"" + b +
                     "\" is not a positive decimal number (expected e.g. dlcbf:10 or dlcbf:fpr0.01)");
    }
  }
  bool seen[5] = {false, false, false, false, false};
  for (size_t i = 2; i < tok.size(); ++i) {
    const std::string& t = tok[i];
    size_t n = 0;
    while (n < t.size() && std::isalpha(static_cast<unsigned char>(t[n]))) ++n;
    const std::string name = t.substr(0, n), value = t.substr(n);
    static const char* const kNames[] = {"d", "L", "r", "load", "nodes"};
    int which = -1;
    for (int j = 0; j < 5; ++j) {
      if (name == kNames[j]) which = j;
    }
    if (which < 0) {
      return Invalid("unknown option \"" + t +
                     "\" (expected d<subtables>, L<cells_per_bucket>, r<remainder_bits>, "
                     "load<fraction> or nodes<max_relocation_nodes>)");
    }
    if (seen[which]) return Invalid("option \"" + name + "\" given twice");
    seen[which] = true;
    if (which == 3) {
      if (!ParseDecimal(value, &o.load) || o.load == 0.0) {
        return Invalid("load: \"" + value + "\" is not a decimal in [0.05, 0.99]");
      }
      continue;
    }
    uint64_t v = 0;
    static const char* const kFields[] = {"subtables (d)", "cells_per_bucket (L)", "remainder_bits (r)",
                                          "", "max_relocation_nodes (nodes)"};
    if (!ParseUint(value, &v)) {
      return Invalid(std::string(kFields[which]) + ": \"" + value + "\" is not an unsigned integer");
    }
    if (v > 1000000) {
      return Invalid(std::string(kFields[which]) + ": " + value + " is out of range");
    }
    const uint32_t v32 = static_cast<uint32_t>(v);
    if (v32 == 0 && which != 4) {
      return Invalid(std::string(kFields[which]) + " must be positive");
    }
    switch (which) {
      case 0: o.subtables = v32; break;
      case 1: o.cells_per_bucket = v32; break;
      case 2: o.remainder_bits = v32; break;
      default: o.max_relocation_nodes = v32; break;
    }
  }
  Status s = o.Validate();
  if (!s.ok()) return s;
  o.info_log = options->info_log;
  *options = o;
  return Status::OK();
}

namespace {
Status CanonicalOptions(const DLeftFilterPolicyOptions& in, DLeftFilterPolicyOptions* out,
                        DLeftFilterPlan* plan) {
  DLeftFilterPolicyOptions o = in;
  o.bits_per_key = Canonical(o.bits_per_key);
  o.fp_rate = Canonical(o.fp_rate);
  o.load = Canonical(o.load);
  Status s = PlanDLeftFilter(o, plan);
  if (!s.ok()) return s;
  *out = o;
  return Status::OK();
}
}  // namespace

Status NewDLeftFilterPolicy(const DLeftFilterPolicyOptions& options,
                            std::shared_ptr<const rocksdb::FilterPolicy>* out) {
  std::unique_ptr<const rocksdb::FilterPolicy> p;
  Status s = NewDLeftFilterPolicy(options, &p);
  if (s.ok()) out->reset(p.release());
  return s;
}

Status NewDLeftFilterPolicy(const DLeftFilterPolicyOptions& options,
                            std::unique_ptr<const rocksdb::FilterPolicy>* out) {
  DLeftFilterPolicyOptions o;
  DLeftFilterPlan plan;
  Status s = CanonicalOptions(options, &o, &plan);
  if (!s.ok()) return s;
  out->reset(new DLeftFilterPolicy(o, plan));
  return Status::OK();
}

std::shared_ptr<const rocksdb::FilterPolicy> NewDLeftFilterPolicy(double bits_per_key) {
  DLeftFilterPolicyOptions o;
  o.bits_per_key = bits_per_key;
  std::shared_ptr<const rocksdb::FilterPolicy> p;
  if (!NewDLeftFilterPolicy(o, &p).ok()) return nullptr;
  return p;
}

const char* DLeftFilterPolicyName() { return kPolicyName; }
const char* DLeftFilterCompatibilityName() { return kCompatibilityName; }

bool IsDLeftFilterPolicy(const rocksdb::FilterPolicy* policy, DLeftFilterPolicyOptions* options) {
  const DLeftFilterPolicy* p = AsDLeft(policy);
  if (p == nullptr) return false;
  if (options) *options = p->options();
  return true;
}

DLeftFilterPolicyCounters GetDLeftFilterPolicyCounters(const rocksdb::FilterPolicy* policy) {
  DLeftFilterPolicyCounters c;
  const DLeftFilterPolicy* p = AsDLeft(policy);
  if (p == nullptr) return c;
  const PolicyShared& s = p->shared();
  c.filters_built = s.filters_built.load(std::memory_order_relaxed);
  c.entries_built = s.entries_built.load(std::memory_order_relaxed);
  c.placement_retries = s.placement_retries.load(std::memory_order_relaxed);
  c.bloom_fallbacks = s.bloom_fallbacks.load(std::memory_order_relaxed);
  c.unreadable_blocks = s.unreadable_blocks.load(std::memory_order_relaxed);
  c.post_verify_failures = s.post_verify_failures.load(std::memory_order_relaxed);
  return c;
}

}  // namespace dlcbf
