// CountingFilterApi: the one contract of the counting filters of dlcbf/core.
//
// What it is
//   Every counting filter here (CountingBloomFilter, AutoscalingBloomFilter,
//   DLeftCountingBloomFilter, FastDLeftFilter, DenseDLeftFilter,
//   ElasticFilter) answers the same calls with the same meaning. This header
//   states that meaning once and writes the calls that follow from a
//   filter's few primitives, so the filters' own headers declare only the
//   primitives and what is theirs alone (options, stats, migration).
//
// Why a template base (CRTP) and not a virtual interface
//   A membership probe costs a few nanoseconds; a virtual call per probe is
//   a cost the benchmarks show, and it would hide the inline probe of the
//   fast kernel from the compiler. `class F : public CountingFilterApi<F>`
//   binds every call below to F's primitives at compile time. Code that
//   must choose a kernel at run time (ElasticFilter, the memtable index)
//   does so once per table, not per probe (internal::CountingKernel).
//
// The primitives a filter F provides (public members):
//   uint64_t F::Hash(std::string_view key) const;     // the filter's key hash
//   OpResult F::InsertHash(uint64_t hash);
//   OpResult F::EraseHash(uint64_t hash);
//   bool     F::ContainsHash(uint64_t hash) const;
// and, where it has one, a faster batched form of each (prefetching every
// key's line before probing). Where it has none, the loops below stand in.
// Filters that count (all but ElasticFilter) also provide
//   uint32_t F::CountHash(uint64_t hash) const;
//
// The contract (every filter, every call)
//   - No false negatives: Contains(x) is true for every x inserted more
//     times than erased, where each such Insert returned kOk. (The one
//     exception is an AutoscalingBloomFilter whose thresholds were set
//     lossy on purpose: see its header.)
//   - Insert: kOk, or kOverflow with the filter unchanged (the key is NOT
//     in it). Never a partial insert.
//   - Erase: kOk; kNotFound when the key's evidence is absent (filter
//     unchanged); kNotSupported on a filter without counters. Erase only
//     keys you inserted: erasing a never-inserted key that collides with a
//     stored one removes that key's evidence, as in any counting filter.
//   - Saturated counters stick and are never decremented, so erase never
//     causes a false negative (each filter says when its counters saturate).
//   - The key form of a call is the hash form on Hash(key): a caller that
//     already hashed (an SST builder, a memtable) never hashes twice.
//   - Batched forms: out[i] is exactly what the single call on keys[i]
//     (hashes[i]) would return, the calls applied in index order. A batch
//     of inserts that overflows at i has applied 0..i-1 and goes on with
//     i+1; nothing is rolled back.
//   - Thread safety is the filter's own (its header says which calls may
//     race); the batched forms have the thread safety of their single
//     calls. A batch is not atomic: a concurrent reader may see part of it.
//   - Pointers: keys/hashes and out point to n elements (n may be 0); the
//     filter keeps no pointer after the call returns.
//
// The life cycle (every filter F with options type O)
//   static Status F::Create(const O& options, std::unique_ptr<F>* out);
//     Validates `options` and allocates an empty filter. InvalidArgument
//     naming the bad field; MemoryLimit above options' max_bytes or the
//     machine's memory. *out is set only on success.
//   void F::Serialize(std::string* out) const;
//     Appends the filter's versioned little-endian format (magic, version,
//     fixed-width fields, checksum; each drawn in filter_policy/FORMATS.md).
//   static Status F::Deserialize(std::string_view data, std::unique_ptr<F>* out,
//                                const DeserializeOptions& options = {});
//     Parses what Serialize wrote. Corruption (with the reason) for any
//     truncated, mis-sized, wrong-magic, bad-checksum or internally
//     inconsistent input; NotSupported for a version it does not know;
//     never reads outside `data`, never aborts. The thread-safety mode
//     comes from `options`, not from the bytes.
//   Filters own their memory, are movable only through the unique_ptr and
//   are not copyable (this base deletes the copy operations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dlcbf/core/op_result.h"

namespace dlcbf {

// How Deserialize builds a filter from its bytes: choices that are not
// part of the format. One struct for every filter's Deserialize.
struct DeserializeOptions {
  // The mode of the new filter (see the filter's "Thread safety").
  bool thread_safe = false;
  // AutoscalingBloomFilter only: required to load a filter whose stored
  // thresholds (Θ, T) are lossy; without it such bytes are
  // InvalidArgument. The other filters are always lossless and ignore it.
  bool allow_false_negatives = false;
};

template <class F>
class CountingFilterApi {
 public:
  // Keys hashed per block by the batched key forms: enough misses in
  // flight to hide memory latency, small enough for a stack buffer.
  static constexpr size_t kKeyBlock = 32;

  // ---- Single keys: the hash form on Hash(key). ----
  OpResult Insert(std::string_view key) { return self().InsertHash(cself().Hash(key)); }
  OpResult Erase(std::string_view key) { return self().EraseHash(cself().Hash(key)); }
  bool Contains(std::string_view key) const { return cself().ContainsHash(cself().Hash(key)); }
  // The multiplicity of the key's evidence: 0 if absent, else an upper
  // bound on its count (exact without collisions; the saturated value once
  // saturated). Only filters that provide CountHash have it.
  uint32_t Count(std::string_view key) const { return cself().CountHash(cself().Hash(key)); }

  // ---- Batches by key: hashed kKeyBlock at a time, then the hash batch. ----
  void InsertBatch(const std::string_view* keys, size_t n, OpResult* out) {
    ByKeyBlocks(keys, n, out, [this](const uint64_t* h, size_t len, OpResult* o) { self().InsertHashBatch(h, len, o); });
  }
  void EraseBatch(const std::string_view* keys, size_t n, OpResult* out) {
    ByKeyBlocks(keys, n, out, [this](const uint64_t* h, size_t len, OpResult* o) { self().EraseHashBatch(h, len, o); });
  }
  void ContainsBatch(const std::string_view* keys, size_t n, bool* out) const {
    ByKeyBlocks(keys, n, out, [this](const uint64_t* h, size_t len, bool* o) { cself().ContainsHashBatch(h, len, o); });
  }

  // ---- Batches by hash: single calls in order, unless F declares its own
  // (prefetching) form, which hides these. ----
  void InsertHashBatch(const uint64_t* hashes, size_t n, OpResult* out) {
    for (size_t i = 0; i < n; ++i) out[i] = self().InsertHash(hashes[i]);
  }
  void EraseHashBatch(const uint64_t* hashes, size_t n, OpResult* out) {
    for (size_t i = 0; i < n; ++i) out[i] = self().EraseHash(hashes[i]);
  }
  void ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const {
    for (size_t i = 0; i < n; ++i) out[i] = cself().ContainsHash(hashes[i]);
  }

 protected:
  CountingFilterApi() = default;
  ~CountingFilterApi() = default;
  CountingFilterApi(const CountingFilterApi&) = delete;
  CountingFilterApi& operator=(const CountingFilterApi&) = delete;

 private:
  F& self() { return static_cast<F&>(*this); }
  const F& cself() const { return static_cast<const F&>(*this); }

  template <class Out, class Batch>
  void ByKeyBlocks(const std::string_view* keys, size_t n, Out* out, Batch&& batch) const {
    uint64_t hashes[kKeyBlock];
    for (size_t base = 0; base < n; base += kKeyBlock) {
      const size_t len = n - base < kKeyBlock ? n - base : kKeyBlock;
      for (size_t i = 0; i < len; ++i) hashes[i] = cself().Hash(keys[base + i]);
      batch(hashes, len, out + base);
    }
  }
};

}  // namespace dlcbf
