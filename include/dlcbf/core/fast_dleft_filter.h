// Cache-line-local d-left counting Bloom filter ("fast dlCBF kernel").
//
// What it is
//   The d-left counting Bloom filter of Bonomi, Mitzenmacher, Panigrahy,
//   Singh and Varghese (ESA 2006) with a layout in which every candidate
//   bucket of a key lies in ONE 64-byte block. A key is hashed once; its
//   true fingerprint is f = (block, b, q) with q a 13-bit remainder in
//   [1, 8191]. Inside the block, D invertible permutations
//   P_i(b, q) = ((b + F_i(q)) mod Bb, q) (F_0 = 0) give one candidate
//   bucket per subtable; a bucket is one 64-bit word of four 16-bit cells
//   (13-bit remainder, 2-bit counter, 1 metadata bit). The remainder is
//   stored once, in the least-loaded candidate (ties to the left), with a
//   counter for its multiplicity. When every candidate is full, one stored
//   fingerprint may move to another of its candidates (found through
//   P_i^-1); failing that the fingerprint spills, exactly, to a shared
//   spare line, and a spill counter kept in the block's metadata bits tells
//   queries of that (block, b) to look there. The design note with the
//   formulas is at the top of filter_policy/core/fast_dleft_filter.cc.
//
// Why it exists
//   The general DLeftCountingBloomFilter (dleft_counting_bloom_filter.h)
//   supports any geometry and the paper's exact layout, but a probe touches
//   d cache lines and decodes bit-packed cells. This kernel has two fixed
//   geometries (D = 2 or 4 subtables; 8 buckets of 4 cells per block),
//   word-aligned cells matched with SWAR, no atomics, and a negative query
//   that reads one line, or two when its (block, b) has spilled.
//
// Guarantees (same as the general dlCBF)
//   - No false negatives for any key inserted more often than erased,
//     unless its Insert returned kOverflow (then nothing changed).
//   - False positive iff the query's true fingerprint equals a stored one:
//     about F / (blocks * Bb * 8191) for F stored fingerprints.
//   - At most one copy of each true fingerprint: erase is exact.
//   - Counters count multiplicity 1..4 and stick at 4 (never decremented
//     again; that fingerprint becomes a permanent false positive).
//   - kOverflow leaves the filter bit-for-bit unchanged.
//
// Thread safety
//   - Default (FastDLeftOptions::thread_safe = false): like the std
//     containers. Const calls may run concurrently with each other; a
//     non-const call needs exclusive access. No lock, no atomic operation.
//   - thread_safe = true: every call may come from any thread. Writers
//     (Insert*, Erase*, InsertFingerprint, Clear) take one internal mutex.
//     Readers (Contains*, Count*, LinesForHash) take no lock: they load
//     table words atomically and validate a negative answer against a
//     per-stripe sequence number, retrying if a writer touched the key's
//     block meanwhile, so a reader never sees a transient false negative
//     (a relocation moving a fingerprint between two buckets included).
//     Stats, SpillFlaggedFraction, ForEachFingerprint and Serialize take
//     the writer lock (a consistent snapshot). tests/fast_dleft_filter_test.cc
//     checks this with an oracle race and a negative control that disables
//     the re-check (a hook of the test builds only) and must see misses.
//
// Ownership
//   The filter owns its table (64-byte aligned). Nothing returned refers
//   into it except through the callbacks of ForEachFingerprint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dlcbf/core/counting_filter.h"
#include "dlcbf/core/op_result.h"
#include "dlcbf/core/fast_dleft_probe.h"
#include <string_view>
#include "dlcbf/core/status.h"

namespace dlcbf {

struct FastDLeftOptions {
  // D, subtables per block: 2 (4 buckets each) or 4 (2 buckets each).
  // D = 2 compares 8 cells per query (half the FPR of D = 4, which compares
  // 16 and spills slightly less).
  uint32_t subtables = 2;
  // Number of 64-byte blocks (>= 1). The spare area adds ceil(blocks/8)
  // lines. Use one of the sizing helpers below.
  uint64_t blocks = 1;
  uint64_t seed = 0x5EEDFA57D1CBF001ULL;  // key hash seed and permutation keys
  uint64_t max_bytes = uint64_t{1} << 36;  // refuse larger tables (64 GiB)
  bool thread_safe = false;                 // see "Thread safety" above

  // Sizing helpers. Each keeps `subtables`, `seed`, `max_bytes` and
  // `thread_safe` from `*out` (so set those first) and sets `blocks`. The
  // remainder width is fixed (13 bits); for a wider or narrower one use
  // DenseDLeftOptions. They never clamp: a request outside the kernel's
  // range is InvalidArgument naming the argument and the range, and *out is
  // left unchanged.
  //   ForLoad:       load = fraction of the 32 cells per block in use at
  //                  `expected_items` keys, in (0, MaxLoad(subtables)].
  //   ForBitsPerKey: the whole table (blocks and spare lines) is about
  //                  bits_per_key * expected_items bits; from the bits per
  //                  key at MaxLoad (22.5) to those at load 0.05.
  //   ForFpr:        the smallest table whose predicted FPR at
  //                  expected_items keys is <= fpr; from the FPR at load
  //                  0.05 up (a lower fpr needs the dense kernel's 16-bit
  //                  class).
  static Status ForLoad(uint64_t expected_items, double load, FastDLeftOptions* out);
  static Status ForBitsPerKey(uint64_t expected_items, double bits_per_key, FastDLeftOptions* out);
  static Status ForFpr(uint64_t expected_items, double fpr, FastDLeftOptions* out);
  // The highest load the sizing helpers use for `subtables` (see the
  // design note for the spill probabilities behind it).
  static double MaxLoad(uint32_t subtables);

  // Predicted FPR with `items` distinct fingerprints stored:
  // 1 - (1 - 1/(blocks * Bb * 8191))^items, Bb = 8 / subtables.
  double PredictedFpr(uint64_t items) const;
  // Total table bytes (blocks and spare lines).
  uint64_t Bytes() const;

  // OK, or InvalidArgument naming the field.
  Status Validate() const;
};

struct FastDLeftStats {
  uint64_t items = 0;           // inserts minus erases that returned kOk
  uint64_t fingerprints = 0;    // occupied cells (block + spare)
  uint64_t spilled = 0;         // occupied spare cells
  uint64_t bytes = 0;           // table bytes (blocks + spare)
  double bits_per_item = 0;     // 8 * bytes / items (0 when empty)
  uint64_t relocations = 0;     // fingerprints moved to make room
  uint64_t overflows = 0;       // inserts that returned kOverflow
  uint64_t saturations = 0;     // increments dropped at a saturated counter
  uint64_t sticky_erases = 0;   // erases that left a saturated counter alone
  double predicted_fpr = 0;     // PredictedFpr(fingerprints)
};

class FastDLeftFilter : public CountingFilterApi<FastDLeftFilter> {
 public:
  // Create / Deserialize / Serialize: the life cycle of CountingFilterApi
  // (counting_filter.h).
  static Status Create(const FastDLeftOptions& options,
                                std::unique_ptr<FastDLeftFilter>* out);

  // Format: filter_policy/FORMATS.md, "Fast kernel".
  static Status Deserialize(std::string_view data, std::unique_ptr<FastDLeftFilter>* out,
                            const DeserializeOptions& options = {});

  ~FastDLeftFilter();

  // The primitives of CountingFilterApi (counting_filter.h), whose
  // contract they follow; the key forms and key batches come from there.
  //   Hash: XXH3-64(key, seed).
  //   ContainsHash: D = 2 without thread safety probes inline; other modes
  //     and spilled buckets call into the library.
  //   CountHash: 0 if absent, 1..4 (4 = saturated or more).
  //   The hash batches prefetch the blocks of a group of keys before any is
  //     probed.
  uint64_t Hash(std::string_view key) const;
  OpResult InsertHash(uint64_t hash);
  OpResult EraseHash(uint64_t hash);
  bool ContainsHash(uint64_t hash) const {
    if (inline_probe_) {
      const internal::FastProbe r = internal::FastDLeftProbeD2(view_, hash);
      if (r != internal::FastProbe::kAskSpare) return r == internal::FastProbe::kPresent;
    }
    return ContainsHashOutOfLine(hash);
  }
  uint32_t CountHash(uint64_t hash) const;
  void ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const;
  void InsertHashBatch(const uint64_t* hashes, size_t n, OpResult* out);
  void EraseHashBatch(const uint64_t* hashes, size_t n, OpResult* out);

  // Asks the CPU to start loading what a call on `hash` reads first (its
  // block; in the thread-safe mode also its stripe's sequence number and
  // the writer lock) and returns at once: a hint that changes nothing, for
  // callers with other work to do before they probe or insert. Any mode,
  // any thread.
  void PrefetchHash(uint64_t hash) const;

  // Cache lines a query of `hash` reads: 1, or 2 when its (block, b) has
  // spilled fingerprints and the block holds no match.
  uint32_t LinesForHash(uint64_t hash) const;

  // Empties the filter and resets the statistics.
  void Clear();

  // O(1) counters.
  FastDLeftStats Stats() const;
  // Fraction of (block, b) pairs whose spill counter is non-zero: a
  // negative query reads 1 + this many lines on average. O(table).
  double SpillFlaggedFraction() const;

  // The true fingerprint of a key: block in [blocks], bucket b in [Bb],
  // remainder q in [1, 8191].
  struct TrueFingerprint {
    uint64_t block;
    uint32_t bucket;
    uint32_t remainder;
  };
  TrueFingerprint FingerprintOfHash(uint64_t hash) const;
  // A key hash whose true fingerprint is f (the smallest one with that
  // block and bucket bits): FingerprintOfHash(HashOfFingerprint(f)) == f
  // for every f in range. Lets a fingerprint read by ForEachFingerprint be
  // re-inserted through any *Hash call of a filter with the same blocks,
  // subtables and seed (a lossless keyless handover).
  uint64_t HashOfFingerprint(const TrueFingerprint& f) const;
  // Calls fn(f, count) for every stored fingerprint (block cells recovered
  // through P_i^-1, spare cells decoded), count in 1..4. Keyless migration.
  void ForEachFingerprint(
      const std::function<void(const TrueFingerprint&, uint32_t count)>& fn) const;
  // The same for the fingerprints whose block is in [first_block,
  // end_block): those blocks and the spare lines that hold their spills.
  // Precondition: first_block is a multiple of kGroupBlocks and end_block
  // is a multiple of it or equal to options().blocks (a spare line pair
  // serves exactly one such group, so the ranges partition the filter);
  // otherwise nothing is called. Lets a migration copy the filter in steps.
  static constexpr uint64_t kGroupBlocks = 16;
  void ForEachFingerprintInBlocks(
      uint64_t first_block, uint64_t end_block,
      const std::function<void(const TrueFingerprint&, uint32_t count)>& fn) const;
  // Adds `count` occurrences of a true fingerprint (as from
  // ForEachFingerprint of a filter with the same blocks, subtables and
  // seed). kOk or kOverflow (unchanged). InvalidArgument-like misuse (out of
  // range fields) returns kNotFound and changes nothing.
  OpResult InsertFingerprint(const TrueFingerprint& f, uint32_t count = 1);

  // Serialize: see Create above.
  void Serialize(std::string* out) const;

  const FastDLeftOptions& options() const;
  uint64_t bytes() const;
  double PredictedFpr() const;

  class Impl;

 private:
  explicit FastDLeftFilter(std::unique_ptr<Impl> impl);
  bool ContainsHashOutOfLine(uint64_t hash) const;
  std::unique_ptr<Impl> impl_;
  internal::FastDLeftView view_;  // the table, for the inline probe
  bool inline_probe_ = false;     // D == 2 and not thread-safe
};

}  // namespace dlcbf
