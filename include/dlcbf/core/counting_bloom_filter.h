// Standard counting Bloom filter (CBF) with packed, saturating w-bit counters.
//
// What it is
//   m counters of w bits (1 <= w <= 8) packed into 64-bit words. A key is
//   hashed once (internal::HashKey, XXH3) and its k probe positions are
//   derived from that one 64-bit value by double hashing,
//       pos_i = (h1 + i * s) mod m,   i = 0 .. k-1,
//   with the step s forced coprime to m, so the k positions of a key are
//   always distinct (k <= m). Distinct positions are what the ABF analysis
//   assumes (Kleyko et al. 2019, §3.3: "the k results ... never coincide"),
//   so the autoscaling model in abf_model.h applies without correction.
//   Insert increments the k counters, Erase decrements them, Contains asks
//   whether all k are nonzero (Fan et al. 2000; Bonomi et al. 2006, §2.1).
//
// Why it exists
//   - It is the baseline the dlCBF paper compares against (§4, §5.1:
//     13.5 counters per key, k = 9, 4-bit counters); see tools/dlcbf_vs_cbf.
//   - It is the substrate of the autoscaling Bloom filter
//     (autoscaling_bloom_filter.h), which reads the same counters through a
//     binarization threshold, and of the elastic filter's fallback mode.
//
// Guarantees
//   - No false negatives: Contains(x) is true for every x inserted more
//     times than erased (a live key contributes >= 1 to each of its
//     counters, and the counters are never decremented below that; see
//     saturation below).
//   - Saturation is sticky: a counter at 2^w - 1 is never incremented
//     (the dropped increment is counted in Stats().saturations) and never
//     decremented again (Stats().sticky_erases). Its true value is unknown,
//     so keeping it is the only choice that cannot create a false negative;
//     the price is a permanently set position (a possible false positive).
//   - Erase is all-or-nothing: if any of the key's k counters is zero the
//     key cannot be stored, Erase returns kNotFound and changes nothing.
//     Erasing a key that was never inserted but whose counters are all
//     nonzero (a false positive) removes other keys' evidence, exactly as in
//     any counting filter: callers must only erase keys they inserted.
//
// Thread safety
//   Counter words are always read and written with relaxed atomic word
//   accesses, so one writer at a time may run concurrently with any number
//   of readers (Contains/Count/ContainsBatch/DotProduct) in every mode:
//   a reader never sees a torn counter, and since a live key's counters
//   never drop below 1, a reader never sees a false negative for a key
//   whose Insert happened-before the read.
//   - thread_safe = false (default): like std containers; concurrent
//     writers need external synchronization.
//   - thread_safe = true: Insert/Erase/Clear serialize on an internal
//     mutex and may be called from any thread; readers never lock.
//
// Ownership
//   Create/Deserialize hand out a std::unique_ptr; the filter owns its
//   counter array. Nothing is retained from the arguments.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "dlcbf/core/counting_filter.h"
#include "dlcbf/core/op_result.h"
#include <string_view>
#include "dlcbf/core/status.h"

namespace dlcbf {

struct CountingBloomOptions {
  uint64_t num_counters = uint64_t{1} << 20;  // m in [1, 2^32]
  uint32_t num_probes = 7;                    // k in [1, 4096], k <= m
  uint32_t counter_bits = 4;                  // w in [1, 8]
  uint64_t seed = 0x5EEDC0B1F0000001ULL;      // XXH3 seed for Hash()
  bool thread_safe = false;                   // see "Thread safety"
  // Refuse arrays larger than this many bytes (clear error, not an OOM).
  uint64_t max_bytes = uint64_t{1} << 36;

  // OK, or InvalidArgument naming the offending field.
  Status Validate() const;
};

// The k that minimizes the false-positive rate of a Bloom filter of m
// positions holding n keys: round((m / n) ln 2), at least 1 (Kleyko et al.
// eq. 3). n == 0 is treated as n == 1.
uint32_t OptimalNumProbes(uint64_t m, uint64_t n);

struct CountingBloomStats {
  uint64_t num_counters = 0;        // m
  uint32_t num_probes = 0;          // k
  uint32_t counter_bits = 0;        // w
  uint64_t bytes = 0;               // size of the packed counter array
  uint64_t items = 0;               // inserts minus erases that returned kOk
  uint64_t nonzero_counters = 0;
  double fill = 0;                  // nonzero_counters / m
  uint64_t saturated_counters = 0;  // counters currently at 2^w - 1
  uint32_t max_counter_value = 0;   // largest counter value present now
  uint64_t saturations = 0;         // increments dropped at a saturated counter
  uint64_t sticky_erases = 0;       // decrements skipped at a saturated counter
  // Model FPR for `items` distinct keys: (1 - (1 - k/m)^items)^k
  // (Kleyko et al. eqs. 9, 20 with Θ = 0, T = k).
  double predicted_fpr = 0;
  // FPR implied by the observed fill: fill^k.
  double fill_fpr = 0;
};

class CountingBloomFilter : public CountingFilterApi<CountingBloomFilter> {
 public:
  // Create / Deserialize / Serialize: the life cycle of CountingFilterApi
  // (counting_filter.h).
  static Status Create(const CountingBloomOptions& options,
                                std::unique_ptr<CountingBloomFilter>* out);

  // Format: filter_policy/FORMATS.md, "Counting Bloom filter".
  static Status Deserialize(std::string_view data, std::unique_ptr<CountingBloomFilter>* out,
                            const DeserializeOptions& options = {});

  ~CountingBloomFilter();

  // The primitives of CountingFilterApi (counting_filter.h), whose
  // contract they follow; the key forms and key batches come from there.
  //   Hash: XXH3-64 of the key with options().seed. The *Hash calls take
  //     this value or any uniformly distributed 64-bit value the caller
  //     derives (e.g. from a dlCBF fingerprint).
  //   InsertHash: always kOk (saturation is counted, not an error).
  //   EraseHash: kNotFound (and no change) if any of the k counters is
  //     zero; otherwise decrements every non-saturated counter.
  //   ContainsHash: all k counters nonzero.
  //   CountHash: the smallest of the k counters (saturated ones read
  //     2^w - 1).
  //   ContainsHashBatch: prefetches a block's first probe words, then
  //     probes.
  uint64_t Hash(std::string_view key) const;
  OpResult InsertHash(uint64_t hash);
  OpResult EraseHash(uint64_t hash);
  bool ContainsHash(uint64_t hash) const;
  uint32_t CountHash(uint64_t hash) const;
  void ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const;

  // How many of the key's k counters exceed `theta`: the dot product of the
  // binarized filter [counter > theta] with the key's indicator vector
  // (Kleyko et al. §3.4). Stops early once `stop_at` is reached, so
  // DotProductHash(h, theta, T) >= T decides ABF membership cheaply.
  uint32_t DotProductHash(uint64_t hash, uint32_t theta,
                          uint32_t stop_at = UINT32_MAX) const;

  // The k distinct probe positions of `hash`, in probe order, into
  // out[0 .. num_probes()-1].
  void Positions(uint64_t hash, uint64_t* out) const;
  // The counter at position `pos` (< num_counters()). For tools and tests.
  uint32_t CounterAt(uint64_t pos) const;

  // Zeroes every counter and resets the statistics.
  void Clear();

  // Writes one word of every 4 KiB page of counter bytes [first_byte,
  // first_byte + max_bytes), unchanged, so the OS maps those pages now
  // rather than on first insert; returns the bytes covered (0 at the end).
  // For callers that fill a new filter in small steps (ElasticFilter's
  // incremental migration). Precondition: no concurrent writer.
  uint64_t Prefault(uint64_t first_byte, uint64_t max_bytes);

  // O(m) scan plus the event counters.
  CountingBloomStats Stats() const;

  // Serialize: see Create above.
  void Serialize(std::string* out) const;

  const CountingBloomOptions& options() const { return options_; }
  uint64_t num_counters() const { return m_; }
  uint32_t num_probes() const { return k_; }
  uint32_t counter_bits() const { return w_; }
  uint32_t max_counter() const { return max_; }  // 2^w - 1
  uint64_t bytes() const { return num_words_ * 8; }
  uint64_t items() const { return items_.load(std::memory_order_relaxed); }

 private:
  explicit CountingBloomFilter(const CountingBloomOptions& options);
  bool Allocate();

  // First position and step of the probe sequence of `hash`.
  void Start(uint64_t hash, uint64_t* pos, uint64_t* step) const;
  uint64_t WordOf(uint64_t pos) const;
  uint32_t Load(uint64_t pos) const;
  void Prefetch(uint64_t hash) const;

  CountingBloomOptions options_;
  uint64_t m_ = 0;
  uint32_t k_ = 0;
  uint32_t w_ = 0;
  uint32_t max_ = 0;
  uint32_t per_word_ = 0;     // floor(64 / w) counters per word
  uint64_t recip_ = 0;        // floor(2^64 / per_word_) + 1 (exact / for pos < 2^32)
  uint64_t num_words_ = 0;
  uint32_t num_primes_ = 0;   // distinct prime factors of m (<= 9 for m <= 2^32)
  uint64_t primes_[10] = {};
  uint64_t prime_inv_[10] = {};  // p^-1 mod 2^64 (odd p): s divisible iff s*inv <= lim
  uint64_t prime_lim_[10] = {};  // floor((2^64 - 1) / p)
  // calloc'ed: large arrays come from mmap as zero pages, so creating a
  // filter does not touch (fault in) all of its memory at once.
  struct FreeWords {
    void operator()(uint64_t* p) const;
  };
  std::unique_ptr<uint64_t[], FreeWords> words_;

  std::atomic<uint64_t> items_{0};
  std::atomic<uint64_t> saturations_{0};
  std::atomic<uint64_t> sticky_erases_{0};
  mutable std::mutex mu_;  // writers, thread_safe mode only
};

}  // namespace dlcbf
