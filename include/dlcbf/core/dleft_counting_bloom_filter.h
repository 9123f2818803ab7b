// d-left counting Bloom filter (dlCBF).
//
// What it is
//   An approximate-membership structure over a multiset of keys that supports
//   insert, erase and count, after Bonomi, Mitzenmacher, Panigrahy, Singh and
//   Varghese, "An Improved Construction for Counting Bloom Filters", ESA 2006.
//   A fingerprint table is split into d subtables of B buckets; each bucket
//   has L cells of (r-bit remainder, c-bit counter). A key's true fingerprint
//   f = H(key) is mapped by d invertible permutations P_i to one
//   (bucket, remainder) pair per subtable; the remainder is stored once, in
//   the least-loaded candidate bucket (ties to the left), and its counter
//   tracks multiplicity. The whole table is one packed bit array.
//
// Why it exists
//   A standard counting Bloom filter spends 4 bits per counter and k
//   counters per key. At equal false-positive rate the dlCBF uses about half
//   the space or less (paper §4, §5.1), and, because at most one copy of any
//   fingerprint is stored (paper Claim 1), erase is exact: it can never
//   remove another key's evidence. So it never yields a false negative for a
//   key inserted and not erased.
//
// Guarantees
//   - No false negatives: Contains(x) is true for every x inserted more
//     times than erased, unless Insert(x) returned kOverflow (then x was NOT
//     inserted and the filter is unchanged).
//   - False positives: Contains(y) for y never inserted is true iff H(y)
//     equals the fingerprint of some stored key; probability
//     1 - (1 - 1/(B*Rn))^F for F stored fingerprints (paper Claim 3),
//     Rn = 2^r - 1 (remainder field 0 marks an empty cell, paper §4).
//   - Counter saturation: c counter bits count multiplicities 1 .. 2^c
//     (the counter stores multiplicity - 1); a counter that reaches 2^c
//     sticks. Further
//     inserts of that fingerprint are counted in Stats::saturations, and it is
//     never decremented again, so erase can never cause a false negative; the
//     cell becomes a permanent (safe) false positive for its fingerprint.
//   - Full: when all d candidate buckets are full, Insert tries a bounded
//     search that moves stored fingerprints to one of their other candidate
//     buckets (paper §3.3, §5.2). If that fails it returns kOverflow and
//     leaves the filter exactly as it was.
//
// Thread safety
//   - Default (Options::thread_safe = false): like std containers. Const
//     methods may run concurrently with each other; any non-const call needs
//     external synchronization.
//   - Options::thread_safe = true: every method may be called from any
//     thread. Writers (Insert/Erase/Clear) serialize on an internal mutex.
//     Readers (Contains, Count, ContainsBatch) take no lock; they validate
//     any negative answer against per-bucket version counters and retry, so a
//     reader never sees a transient false negative, including while a
//     relocation moves a fingerprint between buckets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <string_view>

#include "dlcbf/core/counting_filter.h"
#include "dlcbf/core/op_result.h"
#include "dlcbf/core/status.h"

namespace dlcbf {

// How Insert resolves "all d candidate buckets are full".
enum class Relocation : uint8_t {
  kNone = 0,           // fail with kOverflow at once (paper §5.1 setting)
  kFirstSubtable = 1,  // move one fingerprint out of the subtable-0 candidate
                       // to another of its choices (paper §5.2 failsafe)
  kBreadthFirst = 2,   // bounded breadth-first search over chains of moves
                       // (cuckoo-style), at most max_relocation_nodes buckets
};

struct DLeftOptions {
  // Geometry. Paper §5.1 defaults: 4 x 2048 x 8 cells, r = 14, c = 2, i.e.
  // exactly 2^20 bits, for 49152 keys (load 6 of 8 per bucket).
  uint32_t subtables = 4;                 // d in [2, 8]
  uint64_t buckets_per_subtable = 2048;   // B >= 1, any value
  uint32_t cells_per_bucket = 8;          // L in [1, 64]
  uint32_t remainder_bits = 14;           // r in [2, 32]
  uint32_t counter_bits = 2;              // c in [0, 4]; 0 = static, no erase

  uint64_t seed = 0x5EEDD1CBF0000001ULL;  // hash seed (H and the P_i)

  Relocation relocation = Relocation::kBreadthFirst;
  uint32_t max_relocation_nodes = 256;    // buckets visited by kBreadthFirst

  bool thread_safe = false;               // see "Thread safety" above

  // Refuse geometries whose bit array exceeds this many bytes (clear error
  // instead of an OOM kill).
  uint64_t max_bytes = uint64_t{1} << 36;  // 64 GiB

  // Sizing helpers. Each keeps d, L, c, seed, relocation, thread_safe and
  // max_bytes from `*out` (so set those first) and sets B (ForBitsPerKey
  // and ForFpr also r). They never clamp: a request outside the range is
  // InvalidArgument naming the argument and the range, and *out is left
  // unchanged (as it is when the result fails Validate()).
  //   ForLoad:       load = fraction of the d*B*L cells in use at
  //                  `expected_items` keys, in (0, 1]; r is kept.
  //   ForBitsPerKey: a table of about bits_per_key * expected_items bits:
  //                  the widest r (up to 32) that fits at load 0.75, then
  //                  B for the budget (so the load is <= 0.75, and down to
  //                  0.05 once r = 32).
  //   ForFpr:        the narrowest r whose predicted FPR at load 0.75,
  //                  d L 0.75 / (2^r - 1), is <= fpr, then the smallest B
  //                  with 1 - (1 - 1/(B Rn))^expected_items <= fpr.
  static Status ForLoad(uint64_t expected_items, double load, DLeftOptions* out);
  static Status ForBitsPerKey(uint64_t expected_items, double bits_per_key, DLeftOptions* out);
  static Status ForFpr(uint64_t expected_items, double fpr, DLeftOptions* out);

  // Returns OK or InvalidArgument naming the offending field.
  Status Validate() const;
};

// Occupancy and event counters. Computed on demand by Stats().
struct DLeftStats {
  uint64_t items = 0;          // inserts minus erases that returned kOk
  uint64_t fingerprints = 0;   // occupied cells (distinct fingerprints)
  uint64_t bytes = 0;          // size of the packed bit array
  double bits_per_item = 0;    // 8 * bytes / items (0 when empty)
  // load_ge[i][k]: fraction of subtable i's buckets holding >= k
  // fingerprints, k = 0 .. L + 1 (paper Table 1). load_ge_all averages the
  // subtables.
  std::vector<std::vector<double>> load_ge;
  std::vector<double> load_ge_all;
  uint32_t max_counter = 0;    // largest counter value ever reached
  uint64_t relocations = 0;    // fingerprints moved to resolve a full insert
  // Relocation chains (inserts resolved by moving fingerprints) whose
  // moves touch more buckets than the thread-safe write guard covers at
  // once (more than 16 moves), so they were applied move by move, each
  // under its own guard. Counted in both modes (the branch does not depend
  // on thread_safe); it exists so tests can prove that path ran.
  uint64_t long_relocation_chains = 0;
  uint32_t longest_relocation_chain = 0;  // most moves made by one insert
  uint64_t overflows = 0;      // inserts that returned kOverflow
  uint64_t saturations = 0;    // increments dropped at a saturated counter
  uint64_t sticky_erases = 0;  // erases that left a saturated counter alone
  double predicted_fpr = 0;    // 1 - (1 - 1/(B*Rn))^fingerprints
};

class DLeftCountingBloomFilter : public CountingFilterApi<DLeftCountingBloomFilter> {
 public:
  // Create / Deserialize / Serialize: the life cycle of CountingFilterApi
  // (counting_filter.h).
  static Status Create(const DLeftOptions& options,
                                std::unique_ptr<DLeftCountingBloomFilter>* out);

  // Format: filter_policy/FORMATS.md, "Standalone dlCBF".
  static Status Deserialize(std::string_view data, std::unique_ptr<DLeftCountingBloomFilter>* out,
                            const DeserializeOptions& options = {});

  ~DLeftCountingBloomFilter();

  // The primitives of CountingFilterApi (counting_filter.h), whose
  // contract they follow; the key forms (Insert, Erase, Contains, Count)
  // and the key batches come from there.
  //   Hash: XXH3 of the key with the filter's seed.
  //   EraseHash: kNotSupported when counter_bits == 0.
  //   CountHash: Always 1 for a present key when c == 0; max_counter()
  //     once saturated.
  //   ContainsHashBatch: prefetches every candidate bucket of the batch,
  //     then probes, so the memory accesses of different keys overlap.
  uint64_t Hash(std::string_view key) const;
  OpResult InsertHash(uint64_t hash);
  OpResult EraseHash(uint64_t hash);
  bool ContainsHash(uint64_t hash) const;
  uint32_t CountHash(uint64_t hash) const;
  void ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const;

  // Empties the filter and resets the statistics.
  void Clear();

  // Counters and the load distribution. O(table size).
  DLeftStats Stats() const;

  // Calls fn(f, count) for every stored fingerprint f = (bucket, remainder)
  // in [B] x [Rn], recovered through P_i^-1, with its counter. This is how
  // the filter is migrated without the original keys.
  struct TrueFingerprint {
    uint64_t bucket;
    uint64_t remainder;
    uint64_t packed;  // bucket * Rn + remainder, in [0, B * Rn)
  };
  void ForEachFingerprint(
      const std::function<void(const TrueFingerprint&, uint32_t count)>& fn) const;

  // The true fingerprint of a key hash (phase 1 only).
  TrueFingerprint FingerprintOfHash(uint64_t hash) const;
  // Its inverse: the smallest hash h with FingerprintOfHash(h).packed ==
  // packed. Precondition: packed < B * (2^r - 1). Inserting
  // HashOfFingerprint(f.packed) for every f of ForEachFingerprint rebuilds
  // the same fingerprint multiset in another filter of the same geometry
  // and seed, without the keys.
  uint64_t HashOfFingerprint(uint64_t packed) const;

  // Serialize: see Create above.
  void Serialize(std::string* out) const;

  // Appends only the packed bit array (bytes() bytes, layout in
  // internal/dleft_layout.h), e.g. as the payload of an SST filter block
  // that carries its own header. Read it back with internal::ByteBits.
  void AppendPackedBits(std::string* out) const;

  const DLeftOptions& options() const;
  uint64_t bytes() const;          // packed bit array size
  uint64_t capacity_cells() const; // d * B * L
  uint32_t max_counter() const;    // 2^c, the saturated value (1 when c == 0)
  // The 2*d permutation keys: keys[2*i] and keys[2*i+1] key P_i. Filters
  // made by Create() use internal::PermutationKeys::FromSeed(seed).
  std::vector<uint64_t> permutation_keys() const;
  // 1 - (1 - 1/(B*Rn))^F for the current F fingerprints (paper Claim 3).
  double PredictedFpr() const;

  class Impl;

 private:
  explicit DLeftCountingBloomFilter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlcbf
