// SST filter readers: the d-left readers of versions 1 to 3 (single and
// batched MayMatch), the Bloom-fallback reader and the constant readers for empty and unreadable
// blocks. Unknown or corrupt data means "may match"; an empty filter never
// matches.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include "filter_policy/rocksdb/sst_filter/block_format.h"
#include "filter_policy/rocksdb/sst_filter/sst_filter_internal.h"

namespace dlcbf {
namespace sst_filter {


namespace {

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

// Version 2: one 64-byte block per query (plus the overflow chain).
class BlockedReader final : public FilterBitsReader {
 public:
  explicit BlockedReader(const ParsedBlock& p)
      : g_(p.blocked), payload_(p.payload), seed_(p.hash_seed),
        d4r9_(BlockedD4R9::Matches(p.blocked) ? &BlockedD4R9::Get() : nullptr) {}

  // Locate first, then touch the home block: the prefetch lets the load of
  // a block that straddles two cache lines (RocksDB does not align filter
  // blocks) and of the next block issue their misses at once.
  bool MayMatch(const Slice& key) override {
    if (d4r9_) return d4r9_->MayMatch(g_, payload_, Hash(key));
    BlockedProbe p;
    BlockedLocate(g_, Hash(key), &p);
    Prefetch(p.block);
    return Probe(p);
  }

  // Hash and locate the whole batch and prefetch every home block (the
  // real addresses, both lines if a block straddles two), then probe them.
  // Keys whose group flag sends them on are collected, their next blocks
  // prefetched and probed in a second round, and so on: the overflow
  // probes of a batch overlap too.
  void MayMatch(int num_keys, Slice** keys, bool* may_match) override {
    constexpr int kChunk = 32;  // MultiGet batches at most 32 keys
    BlockedProbe probe[kChunk];
    int pending[kChunk];
    for (int base = 0; base < num_keys; base += kChunk) {
      const int m = std::min(kChunk, num_keys - base);
      for (int i = 0; i < m; ++i) {
        if (d4r9_) {
          d4r9_->Locate(g_, Hash(*keys[base + i]), &probe[i]);
        } else {
          BlockedLocate(g_, Hash(*keys[base + i]), &probe[i]);
        }
        Prefetch(probe[i].block);
        pending[i] = i;
      }
      int n = m;
      while (n > 0) {
        int next = 0;
        for (int j = 0; j < n; ++j) {
          const int i = pending[j];
          const int r = ProbeBlock(payload_ + probe[i].block * kBlockBytes, probe[i]);
          if (r == 2) {
            ++probe[i].block;
            Prefetch(probe[i].block);
            pending[next++] = i;
          } else {
            may_match[base + i] = r == 1;
          }
        }
        n = next;
      }
    }
  }

  bool HashMayMatch(uint64_t h) const { return BlockedHashMayMatch(g_, payload_, h); }

 private:
  uint64_t Hash(const Slice& key) const {
    return internal::HashKey(key.data(), key.size(), seed_);
  }
  void Prefetch(uint64_t block) const {
    const char* a = payload_ + block * kBlockBytes;
    // The block (two lines if RocksDB's buffer left it unaligned) and the
    // next one, where about one negative query in six continues. Prefetches
    // never fault, so running past the last block is harmless.
    __builtin_prefetch(a);
    __builtin_prefetch(a + kBlockBytes - 1);
    __builtin_prefetch(a + 2 * kBlockBytes - 1);
  }
  bool Probe(const BlockedProbe& p) const {
    if (d4r9_) return BlockedMayMatch<4, 9>(g_, payload_, p);
    switch (g_.d) {
      case 4: return BlockedMayMatch<4>(g_, payload_, p);
      case 3: return BlockedMayMatch<3>(g_, payload_, p);
      case 2: return BlockedMayMatch<2>(g_, payload_, p);
      default: return BlockedMayMatch<0>(g_, payload_, p);
    }
  }
  int ProbeBlock(const char* block, const BlockedProbe& p) const {
    if (d4r9_) return BlockedProbeBlock<4, 9>(g_, block, p);
    switch (g_.d) {
      case 4: return BlockedProbeBlock<4>(g_, block, p);
      case 3: return BlockedProbeBlock<3>(g_, block, p);
      case 2: return BlockedProbeBlock<2>(g_, block, p);
      default: return BlockedProbeBlock<0>(g_, block, p);
    }
  }

  const BlockedGeometry g_;
  const char* const payload_;
  const uint64_t seed_;
  const BlockedD4R9* const d4r9_;  // the default geometry's tables, or null
};

// Version 3: the packed table, one 64-byte block per query (plus the
// prefix-carry chain). The probes are compiled twice: portable, and for
// POPCNT + BMI2 (PackedCpuIsFast picks per process, by a start-up
// measurement of PDEP).
template <bool kFast>
inline bool PackedHashMayMatchImpl(const PackedGeometry& g, const char* payload, uint64_t h) {
  PackedProbe p;
  PackedLocate(g, h, &p);
  const char* a = payload + p.block * kPackedBlockBytes;
  // The home block (two lines if RocksDB left it unaligned) and the next,
  // where ~1 negative query in 9 continues: no dependent second miss.
  // Prefetches never fault, so running past the last block is harmless.
  __builtin_prefetch(a);
  __builtin_prefetch(a + kPackedBlockBytes - 1);
  __builtin_prefetch(a + 2 * kPackedBlockBytes - 1);
  return PackedMayMatch<kFast>(g, payload, p);
}

// The batch: locate and prefetch every home block first, then probe; keys
// that go on to the next block are probed in a second round, and so on.
template <bool kFast>
inline void PackedBatchImpl(const PackedGeometry& g, const char* payload, const uint64_t* h, int m,
                            bool* may_match) {
  constexpr int kChunk = 32;
  PackedProbe probe[kChunk];
  int pending[kChunk];
  const char* const last = payload + (g.total_blocks - 1) * kPackedBlockBytes;
  for (int i = 0; i < m; ++i) {
    PackedLocate(g, h[i], &probe[i]);
    const char* a = payload + probe[i].block * kPackedBlockBytes;
    __builtin_prefetch(a);
    __builtin_prefetch(a + kPackedBlockBytes - 1);
    pending[i] = i;
  }
  int n = m;
  while (n > 0) {
    int next = 0;
    for (int k = 0; k < n; ++k) {
      const int i = pending[k];
      const char* a = payload + probe[i].block * kPackedBlockBytes;
      const int r = PackedProbeBlock<kFast>(g, a, probe[i].b, probe[i].q);
      if (r == 2 && a != last) {
        ++probe[i].block;
        __builtin_prefetch(a + kPackedBlockBytes);
        __builtin_prefetch(a + 2 * kPackedBlockBytes - 1);
        pending[next++] = i;
      } else {
        may_match[i] = r != 0;
      }
    }
    n = next;
  }
}

class PackedReaderBase : public FilterBitsReader {
 public:
  explicit PackedReaderBase(const ParsedBlock& p) : g_(p.packed), payload_(p.payload), seed_(p.hash_seed) {}

 protected:
  uint64_t Hash(const Slice& key) const { return internal::HashKey(key.data(), key.size(), seed_); }
  // MultiGet batches at most 32 keys; longer batches go in chunks.
  template <bool kFast>
  void Batch(int num_keys, Slice** keys, bool* may_match) const {
    constexpr int kChunk = 32;
    uint64_t h[kChunk];
    for (int base = 0; base < num_keys; base += kChunk) {
      const int m = std::min(kChunk, num_keys - base);
      for (int i = 0; i < m; ++i) h[i] = Hash(*keys[base + i]);
      PackedBatchImpl<kFast>(g_, payload_, h, m, may_match + base);
    }
  }

  const PackedGeometry g_;
  const char* const payload_;
  const uint64_t seed_;
};

class PackedReaderPortable final : public PackedReaderBase {
 public:
  using PackedReaderBase::PackedReaderBase;
  bool MayMatch(const Slice& key) override { return HashMayMatch(Hash(key)); }
  void MayMatch(int num_keys, Slice** keys, bool* may_match) override {
    Batch<false>(num_keys, keys, may_match);
  }
  bool HashMayMatch(uint64_t h) const { return PackedHashMayMatchImpl<false>(g_, payload_, h); }
};

#if defined(DLCBF_PACKED_HAVE_FAST)
// The same reader compiled for POPCNT + BMI2: the whole query, key hashing
// included, is one function of that target (flatten), so no call is left
// between the virtual MayMatch and the probe.
#define DLCBF_PACKED_FAST_FN __attribute__((target("popcnt,bmi2"), flatten))
class PackedReaderFast final : public PackedReaderBase {
 public:
  using PackedReaderBase::PackedReaderBase;
  DLCBF_PACKED_FAST_FN bool MayMatch(const Slice& key) override {
    return PackedHashMayMatchImpl<true>(g_, payload_, Hash(key));
  }
  DLCBF_PACKED_FAST_FN void MayMatch(int num_keys, Slice** keys, bool* may_match) override {
    Batch<true>(num_keys, keys, may_match);
  }
  DLCBF_PACKED_FAST_FN bool HashMayMatch(uint64_t h) const { return PackedHashMayMatchImpl<true>(g_, payload_, h); }
};
#undef DLCBF_PACKED_FAST_FN
#else
using PackedReaderFast = PackedReaderPortable;
#endif

FilterBitsReader* NewPackedReader(const ParsedBlock& p) {
  if (PackedCpuIsFast()) return new PackedReaderFast(p);
  return new PackedReaderPortable(p);
}

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

}  // namespace

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
    case kKindBlocked: return new BlockedReader(p);
    case kKindPacked: return NewPackedReader(p);
    case kKindBloom: return new BloomReader(p);
    default: return new ConstantReader(false);  // empty: no key was added
  }
}


bool AllHashesMayMatch(const ParsedBlock& p, const std::vector<uint64_t>& hashes) {
  if (p.kind == kKindDLeft) {
    DLeftReader reader(p);
    for (uint64_t h : hashes) {
      if (!reader.HashMayMatch(h)) return false;
    }
    return true;
  }
  if (p.kind == kKindBlocked) {
    for (uint64_t h : hashes) {
      if (!BlockedHashMayMatch(p.blocked, p.payload, h)) return false;
    }
    return true;
  }
  if (p.kind == kKindPacked) {
    // Both instances: a build checked by one is read by either.
    const PackedReaderPortable portable(p);
    for (uint64_t h : hashes) {
      if (!portable.HashMayMatch(h)) return false;
    }
    if (PackedCpuIsFast()) {
      const PackedReaderFast fast(p);
      for (uint64_t h : hashes) {
        if (!fast.HashMayMatch(h)) return false;
      }
    }
    return true;
  }
  if (p.kind == kKindBloom) {
    BloomReader reader(p);
    for (uint64_t h : hashes) {
      if (!reader.HashMayMatch(h)) return false;
    }
    return true;
  }
  return hashes.empty();
}

}  // namespace sst_filter
}  // namespace dlcbf
