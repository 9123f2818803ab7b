// Mutable-memtable index: a MemTableRepFactory decorator that keeps an
// elastic d-left counting Bloom filter over the user keys of each memtable,
// so a point lookup for a key the memtable does not hold returns without
// searching the skiplist.
//
// Why
//   A memtable is sized in bytes, so how many keys it holds varies with key
//   and value sizes by orders of magnitude. RocksDB's memtable Bloom
//   (memtable_whole_key_filtering + memtable_prefix_bloom_size_ratio) has a
//   fixed size and 6 probes and silently degrades when the estimate is off;
//   it also hashes with a 32-bit legacy hash that clusters on low-entropy
//   keys. This index spends the same kind of budget on a dlCBF whose probe
//   reads one cache line (24 bits/key; the general kernel: 20 bits/key; the
//   FPR formulas are in the kernels' design notes), never fails an insert,
//   never gives a false negative, and degrades along a model when the key
//   count drifts (measured figures: filter_policy/rocksdb/memtable_index/README.md).
//
// Quick start
//   rocksdb::Options o;
//   dlcbf::MemTableIndexOptions mi;
//   mi.expected_entries = 500000;          // keys per memtable you expect
//   o.memtable_factory.reset(dlcbf::NewDLeftIndexedMemTableRepFactory(nullptr, mi));
// or by name (registered when libdlcbf_plugin.so loads; static users call
// dlcbf::RegisterAll first):
//   MemTableRepFactory::CreateFromString(cfg, "dlcbf_index:500000", &f);
//   OPTIONS file:   memtable_factory=dlcbf_index:500000
//   stock db_bench: LD_PRELOAD=libdlcbf_plugin.so db_bench -memtablerep=dlcbf_index
//
// What it does (contract)
//   - Every MemTableRep call is forwarded to the base rep (SkipListFactory
//     by default), with the base's results (the bool "duplicate" results of
//     the Insert* variants included). Iteration, snapshots, merges,
//     duplicate detection and concurrent inserts behave exactly as the
//     base's; the factory reports the base's IsInsertConcurrentlySupported()
//     and CanHandleDuplicatedKey(). (The protected MemTableRep::UserKey
//     cannot be forwarded -- C++ grants access to a protected member only
//     through the caller's own type -- and needs no forwarding: it is only
//     called by a rep on itself, and no 7.8.3 rep overrides it.)
//   - Inserts: the user key (timestamp stripped, see below) of every entry
//     -- value, tombstone, single delete, merge operand alike -- is added to
//     the index BEFORE the entry is handed to the base rep. A reader that can
//     see the entry can therefore see its key in the index: no false
//     negatives, also with concurrent memtable writes. When the base reports
//     a duplicate <key, seq> the index keeps the extra count; harmless,
//     because memtables never delete and the index is never asked to erase.
//   - Get: the index is consulted first. "No" returns without calling the
//     callback (exactly what MemTable expects for "not in this memtable");
//     "maybe" delegates to the base rep. Range tombstones are handled by
//     MemTable before the rep is asked, and live in a separate rep.
//   - Drift: the index is sized for options.expected_entries (or a byte
//     budget). Past that it migrates once, in place and without the keys,
//     to a lossless autoscaling Bloom filter in the same budget
//     (dlcbf/elastic_filter.h): inserts never fail and lookups never miss;
//     only the false-positive rate rises, as predicted by the model.
//   - Prefixes (optional, needs a prefix_extractor): prefixes of inserted
//     keys are indexed too, so a prefix Seek of the memtable's
//     GetDynamicPrefixIterator returns "no entries" at once when no key of
//     the memtable has that prefix (the contract of that iterator and of
//     RocksDB's own memtable prefix Bloom; total-order and auto-prefix
//     iterators use GetIterator and are never filtered). Like RocksDB's
//     prefix Bloom, a memtable keeps the extractor it was created with when
//     SetOptions changes prefix_extractor.
//
// User-defined timestamps and comparators (fail-safe rules)
//   A lookup carries the read timestamp, the entry the write timestamp, so
//   the index must drop the timestamp. The public MemTableRep API does not
//   say how large it is; the rep reads it from the user comparator behind
//   MemTable's KeyComparator, identified by its exact dynamic type (see
//   filter_policy/rocksdb/abi/memtable_abi.h). The index is used only when:
//     - that comparator is identified (otherwise: bypass, every Get is
//       delegated; see Stats().bypass_reason), and
//     - equal keys have equal bytes: the comparator says
//       CanKeysWithDifferentByteContentsBeEqual() == false (the bytewise
//       comparators), or it is one of RocksDB's u64 timestamp comparators,
//       or options.trust_comparator is set. A hash index cannot find "ABC"
//       for a case-insensitive lookup of "abc", so the default is to bypass.
//   options.assume_timestamp_size lets a caller that wraps the KeyComparator
//   (so it cannot be identified) state the timestamp size instead.
//
// Memory
//   ApproximateMemoryUsage() = base + index bytes (both filters and their
//   8 KiB insert dedupe caches), so the write-buffer accounting includes the
//   index. About 3 bytes per expected key by default (2.5 with the general
//   kernel). A migration builds the ABF in the same bytes; the frozen
//   dlCBF, which lock-free readers may still be inside, is counted until
//   it is reclaimed: once every reader that was inside has left (a grace period; retried every 256 inserts and
//   at MarkReadOnly/MarkFlushed). The index is capped at
//   max_write_buffer_fraction of the write buffer size as estimated from
//   the memtable arena's block size.
//
// Statistics
//   GetMemTableIndexStats(factory) reports, per live memtable and summed
//   over all memtables ever created by the factory: mode (dlcbf /
//   autoscaling), entries, predicted FPR, skipped searches, delegated
//   searches, false positives (measured), bytes. The same line is written
//   to the info LOG when a memtable is flushed (MarkFlushed) and when an
//   index migrates.
//
// Thread safety
//   The factory is immutable after creation and may be shared by column
//   families and DBs. A rep allows what MemTableRep requires: concurrent
//   readers with (concurrent, if the base supports it) writers. The index
//   is an ElasticFilter with thread_safe = true: lock-free readers,
//   writers serialized on its mutex (inserts of a key already in the small
//   dedupe cache skip the lock).
//
// Ownership
//   The factory shares ownership of the base factory. Each rep owns its
//   base rep and its filters; statistics of destroyed reps are folded into
//   the factory's totals.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlcbf/core/elastic_filter.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/status.h"
#include "rocksdb/utilities/object_registry.h"

namespace dlcbf {

struct MemTableIndexOptions {
  // Sizing: the number of distinct user keys a memtable is expected to
  // hold (every Put, Delete, Merge... of a new key; repeated writes of a key
  // take no new cell). The dlCBF is built for it at 75 % cell load.
  // [1, 2^32]. Ignored when budget_bytes > 0.
  uint64_t expected_entries = 100000;
  // If > 0: the whole-key index gets this many bytes instead, [64, 2^34].
  uint64_t budget_bytes = 0;

  // Kernel (id fields "fast" / "general").
  // true (the default): the cache-line-local FastDLeftFilter
  // (ElasticKernel::kFast, D = 2). Every probe reads one 64-byte line (1 +
  // the spill-flagged fraction on average); 16-bit cells (13-bit remainder,
  // 2-bit counter, 1 metadata bit) plus a 1/8 spare area, sized at 75 %
  // load: 18 / 0.75 = 24 bits per entry, FPR at sizing
  // 0.75 * 32 / (4 * 8191). It overflows (and migrates) only
  // above the kernel's MaxLoad of 0.80 (a spare line pair full), ~1.07x the
  // sizing. A probe costs about half of the general kernel's (one line
  // instead of two buckets in two lines).
  // false: the general DLeftCountingBloomFilter with the geometry below:
  // 20 bits per entry, FPR d L 0.75 / (2^r - 1) at sizing: denser and more
  // exact, slower
  // per probe. Setting subtables, cells_per_bucket or remainder_bits to a
  // non-default value requires fast_kernel = false (Validate says so); in
  // an id, a d/L/r field selects the general kernel by itself.
  bool fast_kernel = true;
  // Id field "dense": the variable-occupancy DenseDLeftFilter
  // (ElasticKernel::kDense, 16-bit remainders, d = 2) instead. Sized at 75 %
  // of its slots: 512 / (28 * 0.75) = 24.4 bits per entry, FPR at sizing
  // 2 * 0.75 * 28 / (36 * 65535) = 0.0018 % (40x below the fast kernel's in
  // the same memory), at two 64-byte lines per probe instead of one; it
  // overflows (and migrates, in one go) at about 0.99 of its slots, ~1.3x
  // the sizing. Requires fast_kernel = true (the default) and the default
  // general-kernel geometry (Validate names the conflict).
  bool dense_kernel = false;
  // Dense kernel only: its remainder class, 16 (id field "dense", above)
  // or 8 (id field "dense8"): 8-bit remainders sized at 85 % of the slots,
  // 512 / (48 * 0.85) = 12.5 bits per entry (half the fast kernel's), FPR
  // at sizing 2 * 0.85 * 48 / (80 * 255) = 0.40 %; it overflows (and
  // migrates) at about 0.99 of its slots, ~1.16x the sizing. Any other
  // value, or 8 without dense_kernel, is InvalidArgument.
  uint32_t dense_remainder_bits = 16;

  // General kernel only: d subtables of buckets with L cells of r remainder
  // bits plus one counter bit (r + 1 bits per cell, sized at 75 % load, so
  // (r + 1) / 0.75 bits per entry). FPR at sizing = d L 0.75 / (2^r - 1).
  // The default d = 2, L = 3, r = 14 spends 20 bits per entry for 0.027 %
  // and probes two buckets of one SWAR step each; it overflows (and
  // migrates) at ~94 % cell load, i.e. ~1.26x the sizing. The paper's
  // d = 4, L = 8 has 5x the FPR in the same bits and twice the probes (it
  // balances loads for deletions, which a memtable index never sees);
  // d = 2, L = 4 gives 0.037 % and ~97 %, but its 60-bit buckets need two
  // SWAR steps (~30 % slower lookups). d in [2, 8], L in [1, 64],
  // r in [4, 30].
  uint32_t subtables = 2;
  uint32_t cells_per_bucket = 3;
  uint32_t remainder_bits = 14;

  // After migration the ABF's number of probes is optimal for abf_growth
  // times the keys present at migration, [1, 1000]. Larger values favour
  // heavy drift. Predicted FPR at 2x / 10x the sizing (default geometry):
  // growth 1: k = 11, 0.012 / 0.96; growth 2: k = 5, 0.010 / 0.65;
  // growth 4: k = 3, 0.018 / 0.47; growth 10: k = 1, 0.096 / 0.40.
  double abf_growth = 4.0;

  // Which keys are indexed. At least one must be true. Whole keys serve
  // Get; prefixes (prefix_extractor required, otherwise ignored) serve
  // prefix seeks, and Get too when whole_keys is false.
  bool whole_keys = true;
  bool prefixes = false;
  // Sizing of the prefix index (distinct prefixes expected). 0 = a quarter
  // of the whole-key sizing (all of it with whole_keys = false), at least
  // 1024. budget_bytes applies to the whole-key index only.
  uint64_t expected_prefixes = 0;

  // Use the index even if the user comparator may consider keys with
  // different bytes equal (CanKeysWithDifferentByteContentsBeEqual()).
  // Only set this if such keys are in fact never written.
  bool trust_comparator = false;
  // -1: the timestamp size must be read from the comparator (bypass if it
  // cannot be). >= 0: the user asserts this timestamp size (bytes) when the
  // comparator cannot be identified. [-1, 255].
  int assume_timestamp_size = -1;

  // Cap of the index memory as a fraction of the estimated write buffer
  // (8 x the arena block size, RocksDB's default arena_block_size rule);
  // (0, 1]. Applies only when the estimate is below 8 MiB, i.e. when the
  // arena block size says the write buffer is small.
  double max_write_buffer_fraction = 0.25;

  // OK, or InvalidArgument naming the field.
  rocksdb::Status Validate() const;
};

// One memtable's index (or the sum over many: then mode/bool fields
// describe nothing and counters are totals).
struct MemTableIndexStats {
  bool active = false;          // Get consults the index
  std::string bypass_reason;    // why not, when !active
  uint32_t column_family_id = 0;
  uint64_t timestamp_size = 0;

  ElasticMode mode = ElasticMode::kDLeft;
  MigrationCause migration_cause = MigrationCause::kNone;
  uint64_t migrations = 0;       // 0 or 1 per index (summed in totals)
  uint64_t entries = 0;          // entries inserted into the memtable
  uint64_t index_inserts = 0;    // of those, inserted into the filter
                                 // (the rest hit the dedupe cache)
  uint64_t sized_for = 0;        // expected entries of the dlCBF
  uint64_t index_bytes = 0;      // every filter byte, retained included
  uint64_t retained_bytes = 0;   // frozen dlCBF after migration
  bool capped = false;           // sizing reduced by max_write_buffer_fraction
  double predicted_fpr = 0;      // model, whole-key index
  bool fast_kernel = false;      // the dlCBF is FastDLeftFilter (else general)
  bool dense_kernel = false;     // the dlCBF is DenseDLeftFilter
  uint32_t dense_remainder_bits = 0;  // its class (8 or 16); 0 for the other kernels
  uint32_t abf_probes = 0;       // k of the ABF after migration (0 before)
  uint64_t migrated_items = 0;   // items in the dlCBF when it migrated

  uint64_t gets = 0;             // Get calls
  uint64_t skipped_searches = 0; // index said "no": skiplist not searched
  uint64_t delegated = 0;        // index said "maybe" (or bypassed)
  uint64_t false_positives = 0;  // "maybe" but no entry had the key
  // false_positives / (false_positives + skipped_searches): the index's FPR
  // over lookups of keys absent from the memtable. -1 if there were none.
  double MeasuredFpr() const;

  // Prefix index (when built).
  bool prefixes_indexed = false;
  ElasticMode prefix_mode = ElasticMode::kDLeft;
  uint64_t prefix_inserts = 0;
  double prefix_predicted_fpr = 0;
  uint64_t prefix_seeks = 0;          // dynamic-prefix Seek/SeekForPrev
  uint64_t prefix_seeks_skipped = 0;  // answered "no entries" by the index

  // One line, as written to the LOG.
  std::string ToString() const;
};

struct MemTableIndexFactoryStats {
  uint64_t reps_created = 0;
  uint64_t reps_live = 0;
  uint64_t reps_bypassed = 0;    // created without an active index
  MemTableIndexStats total;      // counters summed over every rep
  std::vector<MemTableIndexStats> live;  // mutable + immutable memtables
};

// The decorator factory. `base` null = SkipListFactory(). nullptr if the
// options are invalid (use the Status overload to learn why).
rocksdb::MemTableRepFactory* NewDLeftIndexedMemTableRepFactory(
    std::shared_ptr<rocksdb::MemTableRepFactory> base = nullptr,
    const MemTableIndexOptions& options = MemTableIndexOptions());
rocksdb::Status NewDLeftIndexedMemTableRepFactory(
    std::shared_ptr<rocksdb::MemTableRepFactory> base, const MemTableIndexOptions& options,
    std::shared_ptr<rocksdb::MemTableRepFactory>* out);

// Statistics of a factory made by NewDLeftIndexedMemTableRepFactory (or by
// name). InvalidArgument for any other factory.
rocksdb::Status GetMemTableIndexStats(const rocksdb::MemTableRepFactory* factory,
                                      MemTableIndexFactoryStats* out);

// Id strings (GetId() returns the canonical form; OPTIONS files store it)
//   dlcbf_index                    expected_entries = 100000
//   dlcbf_index:<n>                expected entries, integer [1, 2^32]
//   dlcbf_index:bytes<n>           byte budget instead, [64, 2^34]
//   ...then optional fields, each ":<field>":
//     general           the general kernel (fast_kernel = false)
//     fast              the fast kernel (the default; accepted for ids
//                       written before it was)
//     dense             the dense kernel (dense_kernel = true)
//     dense8            the dense kernel, 8-bit class (dense_kernel = true,
//                       dense_remainder_bits = 8)
//     d<2..8>           subtables                   dlcbf_index:1000000:d4:L8
//     L<1..64>          cells per bucket            (d, L, r: the general
//     r<4..30>          remainder bits               kernel; they select it)
//     growth<x>         abf_growth, decimal [1, 1000]
//     prefix            also index prefixes
//     prefix_only       index prefixes only (whole_keys = false)
//     prefixes<n>       expected_prefixes
//     trust_comparator  see MemTableIndexOptions
//     ts<n>             assume_timestamp_size = n
//     cap<x>            max_write_buffer_fraction, decimal (0, 1]
//     base:<id>         the base factory's id; takes the rest of the string
//                       (dlcbf_index:50000:base:skip_list:16). Default
//                       base omitted.
//   Anything else is InvalidArgument naming the field.
constexpr const char* kMemTableIndexId = "dlcbf_index";
constexpr const char* kMemTableIndexClassName = "DLeftIndexedMemTableRepFactory";
rocksdb::Status ParseMemTableIndexId(const std::string& id, MemTableIndexOptions* options,
                                     std::string* base_id);
std::string MemTableIndexId(const MemTableIndexOptions& options, const std::string& base_id = "");

// Registers "dlcbf_index", "dlcbf_index:<...>" and the class name with
// `library`. Idempotent; returns the number of factories added now. Called
// by RegisterAll (dlcbf/rocksdb/registration.h).
int RegisterDLeftIndexedMemTableRepFactory(rocksdb::ObjectLibrary& library);

}  // namespace dlcbf
