// Dense d-left counting Bloom filter ("dense dlCBF kernel"): variable-
// occupancy buckets packed in 64-byte blocks.
//
// What it is
//   The d-left counting Bloom filter of Bonomi, Mitzenmacher, Panigrahy,
//   Singh and Varghese (ESA 2006) with the space of the best deletable
//   filters. A key is hashed once; its true fingerprint f = (x, q) has a
//   bucket address x in [B] and a remainder q in [Rn] (Rn = 2^r - 1, r = 8
//   or 16: the two "remainder classes"). d invertible permutations
//   P_i(x, q) = ((x + F_i(q)) mod B, q) give one candidate bucket in each
//   of d subtables; subtable i is a run of 64-byte blocks, each holding
//   K buckets. Inside a block the buckets have NO fixed size: the block
//   stores its remainders packed in bucket order plus a unary directory of
//   bucket sizes, as in the vector quotient filter's mini-filters, so a
//   bucket holds as many remainders as the block has room for. A fingerprint
//   goes to its first candidate block while that block is less than 3/4
//   full, else to the least-loaded candidate (ties to the left); several
//   occurrences of a key are several copies of its remainder (no counter
//   field: copies are denser than counters at these loads). The design note
//   with the layout, the formulas and the measured figures' predictions is
//   at the top of filter_policy/core/dense_dleft_filter.cc.
//
// Why it exists
//   FastDLeftFilter (fast_dleft_filter.h) fixes four 16-bit cells per bucket
//   and leaves about 20% of them empty, so it needs about 24 bits per key.
//   With variable occupancy the same one-line-per-candidate query costs
//   11.5 bits per key at r = 8 (FPR 0.44%) and 19.9 at r = 16 (0.0022%),
//   at the loads MaxLoad gives (design note).
//
// Guarantees (the dlCBF's)
//   - No false negatives for any key inserted more often than erased,
//     unless its Insert returned kOverflow (then nothing changed).
//   - False positive iff the query's true fingerprint equals a stored one
//     (P_i are bijections, so a remainder in subtable i's bucket belongs to
//     exactly one fingerprint): 1 - (1 - 1/(B * Rn))^F for F stored
//     fingerprints.
//   - Erase is exact: it removes one copy of the key's own fingerprint,
//     never another key's. Erasing an absent key returns kNotFound and
//     changes nothing.
//   - Multiplicity: Count returns the exact number of copies (no
//     saturation). A copy takes a slot like a new key.
//   - Full: when all d candidate blocks are full, one resident of a
//     candidate block moves to another of its own candidates (found through
//     P_i^-1); when no resident can move, Insert returns kOverflow and the
//     filter is bit-for-bit unchanged.
//
// Thread safety
//   - Default (thread_safe = false): like the std containers. Const calls
//     may run concurrently; a non-const call needs exclusive access.
//   - thread_safe = true: every call may come from any thread. Writers take
//     one internal mutex; readers take no lock, load the table with acquire
//     loads and accept a negative answer only after re-reading the sequence
//     numbers of the stripes of all d candidate blocks unchanged, so a
//     reader never sees a transient false negative (a resident moving
//     between blocks, or slots shifting inside a block, included).
//
// Ownership
//   The filter owns its table (64-byte aligned, zero-filled = empty).
//
// Errors
//   Create/Deserialize/sizing return dlcbf::Status (status.h); mutations
//   return OpResult. Nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dlcbf/core/counting_filter.h"
#include "dlcbf/core/dense_dleft_probe.h"
#include "dlcbf/core/op_result.h"
#include "dlcbf/core/status.h"

namespace dlcbf {

struct DenseDLeftOptions {
  // Remainder class: 8 (48 slots, 80 buckets per block) or 16 (28 slots,
  // 36 buckets per block).
  uint32_t remainder_bits = 8;
  // d, subtables: 2, 3 or 4. A query reads one block per subtable.
  uint32_t subtables = 2;
  // Blocks per subtable (>= 1); the table has subtables * this many
  // 64-byte blocks. Use a sizing helper.
  uint64_t blocks_per_subtable = 1;
  uint64_t seed = 0x5EEDDE45D1CBF001ULL;    // key hash seed and permutation keys
  uint64_t max_bytes = uint64_t{1} << 36;   // refuse larger tables (64 GiB)
  bool thread_safe = false;                 // see "Thread safety" above

  // Sizing helpers. Each keeps `seed`, `subtables` and `thread_safe` from
  // `*out` (so set those first) and sets the class and the block count.
  // They never clamp: a request outside the kernel's range is
  // InvalidArgument naming the argument and the range, and *out is left
  // unchanged.
  //   ForLoad:       remainder class r, load = fraction of the slots in use
  //                  at `expected_items` keys, in (0, MaxLoad(r)].
  //   ForBitsPerKey: the table is at most bits_per_key * expected_items
  //                  bits; the 16-bit class when it fits at MaxLoad(16),
  //                  else the 8-bit class (from 512 / (48 MaxLoad(8)) bits
  //                  per key up).
  //   ForFpr:        the smallest table whose predicted FPR at
  //                  expected_items keys is <= fpr: the 8-bit class when it
  //                  reaches fpr at a load >= 0.5, else the 16-bit class
  //                  (down to the 16-bit class's FPR at load 0.05).
  static Status ForLoad(uint64_t expected_items, double load, uint32_t remainder_bits,
                        DenseDLeftOptions* out);
  static Status ForBitsPerKey(uint64_t expected_items, double bits_per_key, DenseDLeftOptions* out);
  static Status ForFpr(uint64_t expected_items, double fpr, DenseDLeftOptions* out);
  // The highest load the sizing helpers use for class r (8 or 16): 0.93 /
  // 0.92, below the load of the first move (and far below the first
  // kOverflow) in the design note's d = 2 trials.
  static double MaxLoad(uint32_t remainder_bits);

  // Predicted FPR with `items` fingerprints stored: 1 - (1 - 1/(B Rn))^items.
  double PredictedFpr(uint64_t items) const;
  uint64_t Blocks() const { return blocks_per_subtable * subtables; }
  // The table's bytes (what bits/key counts). Beside it each filter holds a
  // fixed few KB: 2 KB of subtable-1 offsets (read at r = 8) and, thread-safe,
  // 4 KB of stripe counters.
  uint64_t Bytes() const { return 64 * Blocks(); }
  uint32_t SlotsPerBlock() const;
  uint32_t BucketsPerBlock() const;

  // OK, or InvalidArgument naming the field and its range.
  Status Validate() const;
};

// The kernel instances a filter runs, chosen from the CPU when the filter
// is created or deserialized: the widest this CPU has. Every path gives
// the same answers and the same bytes (the tests compare them). The
// environment variable DLCBF_DENSE_SIMD=portable|sse2|avx2|avx512 caps the
// choice (for comparing paths, or ruling one out); a name the CPU lacks, or
// any other value, is ignored. The inline probe of ContainsHash
// (dense_dleft_probe.h) is compiled into the caller instead: SSE2, or
// AVX2 / AVX-512BW where the caller is compiled for them.
enum class DenseSimdPath : int {
  kPortable = 0,  // no POPCNT: SWAR popcounts, SSE2 compares where the target has SSE2
  kSse2 = 1,      // POPCNT, SSE2 compares
  kAvx2 = 2,      // POPCNT, AVX2 compares
  kAvx512 = 3,    // POPCNT, AVX-512BW compares
};
const char* DenseSimdPathName(DenseSimdPath path);

struct DenseDLeftStats {
  uint64_t items = 0;         // inserts minus erases that returned kOk
  uint64_t bytes = 0;         // table bytes
  double bits_per_item = 0;   // 8 * bytes / items (0 when empty)
  double load = 0;            // items / (blocks * slots per block)
  uint64_t relocations = 0;   // residents moved to make room
  uint64_t overflows = 0;     // inserts that returned kOverflow
  double predicted_fpr = 0;   // PredictedFpr(items)
};

class DenseDLeftFilter : public CountingFilterApi<DenseDLeftFilter> {
 public:
  // Create / Deserialize / Serialize: the life cycle of CountingFilterApi
  // (counting_filter.h).
  static Status Create(const DenseDLeftOptions& options, std::unique_ptr<DenseDLeftFilter>* out);

  // Format: filter_policy/FORMATS.md, "Dense kernel".
  static Status Deserialize(std::string_view data, std::unique_ptr<DenseDLeftFilter>* out,
                            const DeserializeOptions& options = {});

  ~DenseDLeftFilter();

  // The primitives of CountingFilterApi (counting_filter.h), whose
  // contract they follow; the key forms and key batches come from there.
  //   Hash: XXH3-64(key, seed).
  //   CountHash: copies of the key's fingerprint (0 if absent).
  //   The hash batches prefetch the candidate blocks of a group of keys
  //     before any is probed.
  //   ContainsHash, InsertHash, EraseHash: d = 2 without thread safety
  //     runs inline (dense_dleft_probe.h; an insert whose candidate block
  //     is full, which moves a resident, calls into the kernel, and so do
  //     inserts compiled without POPCNT and BMI2 or run where PDEP is
  //     slow); other modes call into the kernel.
  uint64_t Hash(std::string_view key) const;
  OpResult InsertHash(uint64_t hash) {
#if DLCBF_DENSE_INLINE_INSERT
    if (inline_ && view_.pdep_fast && internal::DenseDLeftInsertD2(view_, hash)) return OpResult::kOk;
#endif
    return InsertHashOutOfLine(hash);
  }
  OpResult EraseHash(uint64_t hash) {
    if (inline_) return internal::DenseDLeftEraseD2(view_, hash) ? OpResult::kOk : OpResult::kNotFound;
    return EraseHashOutOfLine(hash);
  }
  bool ContainsHash(uint64_t hash) const {
    if (inline_) return internal::DenseDLeftProbeD2(view_, hash);
    return ContainsHashOutOfLine(hash);
  }
  uint32_t CountHash(uint64_t hash) const;
  void ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const;
  void InsertHashBatch(const uint64_t* hashes, size_t n, OpResult* out);
  void EraseHashBatch(const uint64_t* hashes, size_t n, OpResult* out);

  // A hint: start loading the candidate blocks of `hash`. Any mode, any thread.
  void PrefetchHash(uint64_t hash) const;
  // Cache lines a query of `hash` reads: the blocks probed up to the first
  // match (d for a negative query).
  uint32_t LinesForHash(uint64_t hash) const;

  // Empties the filter and resets the statistics.
  void Clear();
  // O(1) counters.
  DenseDLeftStats Stats() const;

  // The true fingerprint: bucket address in [B], remainder in [0, Rn).
  struct TrueFingerprint {
    uint64_t bucket;
    uint32_t remainder;
  };
  TrueFingerprint FingerprintOfHash(uint64_t hash) const;
  // The smallest hash whose true fingerprint is f (FingerprintOfHash of it
  // gives f back): re-inserts a fingerprint through any *Hash call of a
  // filter with the same geometry and seed, or a keyless migration.
  uint64_t HashOfFingerprint(const TrueFingerprint& f) const;
  // Calls fn(f, copies) for every stored fingerprint (recovered through
  // P_i^-1), copies >= 1. In the thread-safe mode it holds the writer lock.
  void ForEachFingerprint(const std::function<void(const TrueFingerprint&, uint32_t copies)>& fn) const;
  // Adds `copies` occurrences of f: kOk, or kOverflow (the stored
  // multiset unchanged: copies added before the failing one are taken
  // back); kNotFound (unchanged) when f is out of range.
  OpResult InsertFingerprint(const TrueFingerprint& f, uint32_t copies = 1);

  // Owner-serialized writers, for a caller that already serializes its
  // own writes (ElasticFilter holds its writer mutex around every call it
  // makes here). After this call the non-const calls, Stats,
  // ForEachFingerprint and Serialize no longer take the filter's writer
  // mutex: the caller guarantees that no two of them overlap. ContainsHash,
  // CountHash, ContainsHashBatch, PrefetchHash and LinesForHash are
  // unchanged: in the thread-safe mode they stay lock-free, may run
  // concurrently with a writer and never see a transient false negative.
  // Precondition: called before the filter is shared with another thread.
  // No effect without thread_safe (writers then need exclusive access anyway).
  void SetWritersSerializedByCaller();
  // Serialize: see Create above.
  void Serialize(std::string* out) const;
  // Serialize's bytes, copied `chunk_blocks` blocks at a time while holding
  // `writers` (the mutex that serializes this filter's writers: the
  // owner's after SetWritersSerializedByCaller, or null for the filter's
  // own writer lock in thread-safe mode) around each chunk only, so
  // writers wait for one chunk, never for the whole table. The image is no
  // single state of the filter; for every fingerprint it holds at least
  // the fewest copies the filter held at any instant of the call (the
  // argument: dense_dleft_serialize.cc). So a key counted throughout the
  // call is in it; one inserted or erased meanwhile may or may not be. Its
  // header counts the entries it holds (`items`, if not null), so it
  // loads like Serialize's. Returns false, `out` as it was, for d != 2 and
  // when a relocation (an insert into full candidate blocks, past MaxLoad)
  // moved an entry during the copy. `between_chunks`, if set, is called
  // between two chunks with the blocks copied so far, no lock held.
  // Without thread safety the caller must keep writers out, as for
  // Serialize.
  bool SerializeInChunks(std::string* out, std::mutex* writers, uint64_t chunk_blocks, uint64_t* items = nullptr,
                         const std::function<void(uint64_t)>* between_chunks = nullptr) const;
  // The same image streamed: each piece goes to `sink` as it is copied
  // (no lock held; one chunk buffered, never the table), so the caller can
  // write it to a file as it comes. Two fixed64 fields are known only at
  // the end and are streamed as zeros: the item count, at
  // kImageItemsOffset (its value: `*items`), and the checksum, the last 8
  // bytes, HashKey(seed kImageChecksumSeed) of every byte before it, item
  // count included. The caller writes both once the copy returns true.
  // False when `sink` returns false (the copy stops), and as above; then
  // whatever was streamed is no image and every changed-block bit is set
  // again (TrackChangedBlocks).
  //
  // `layout` kSparse streams a sparse image instead (FORMATS.md, "Sparse
  // dense image"): the same 64-byte header, then a record per block that
  // holds a nonzero byte (fixed64 block number, ascending, then the
  // block's 64 bytes, as in CopyChangedBlocks), then the checksum as
  // above (of everything before it). Every block not listed is zero.
  // Smaller while fewer than 8 in 9 blocks are in use (72 bytes a record
  // against 64 a block): a fresh or lightly filled index.
  // ExpandSparseImage turns it into the image.
  // `layout` kSparseCompact streams the sparse image with compact records
  // (FORMATS.md, "Compact sparse dense image": each record as
  // CompactRecords writes it, one run from block 0): 24-27 bytes a block
  // in use at LiveKeyDB's fills against 72. DeserializeWithRecords reads
  // it.
  using ImageSink = std::function<bool(std::string_view piece)>;
  enum class ImageLayout { kWhole, kSparse, kSparseCompact };
  static constexpr uint64_t kImageItemsOffset = 32;
  static constexpr uint64_t kImageChecksumSeed = 0;
  bool SerializeInChunks(const ImageSink& sink, std::mutex* writers, uint64_t chunk_blocks, uint64_t* items,
                         const std::function<void(uint64_t)>* between_chunks = nullptr,
                         ImageLayout layout = ImageLayout::kWhole) const;
  // A sparse image (above) as the whole image Serialize stores, item
  // count and checksum recomputed. Corruption for a bad checksum, a
  // malformed header, a record out of range or out of order, or an item
  // count that does not match the blocks.
  static Status ExpandSparseImage(std::string_view sparse, std::string* image);
  // Serialize's size in bytes (fixed at Create).
  uint64_t SerializedBytes() const;

  // Changed blocks, for checkpoints that write what changed (LiveKeyDB).
  // TrackChangedBlocks: from now on every block write sets the block's
  // bit; all bits start set. Thread-safe filters only (false otherwise, or
  // when the bitmap, one bit per block, cannot be allocated). Call it
  // before writers run, or holding their lock.
  bool TrackChangedBlocks();
  // Appends a record per block whose bit is set (fixed64 block number,
  // then the block's 64 bytes as Serialize stores them) and clears the
  // bits, `chunk_blocks` blocks at a time under `writers` (as
  // SerializeInChunks; SerializeInChunks clears the bits it copies too).
  // The records applied to the image the previous copy produced
  // (PatchSerializedBlocks) give the image a SerializeInChunks call would
  // have produced now, with its guarantee. False, `out` as it was and
  // every bit set again, for d != 2, without TrackChangedBlocks, and after
  // a relocation during the call. `blocks_copied`: the records appended.
  bool CopyChangedBlocks(std::string* out, std::mutex* writers, uint64_t chunk_blocks, uint64_t* blocks_copied,
                         const std::function<void(uint64_t)>* between_chunks = nullptr) const;
  // The same records streamed to `sink`, each chunk's once the lock is
  // released (one chunk buffered). False as above, and when `sink` fails
  // (the copy stops; every bit is set again).
  bool CopyChangedBlocks(const ImageSink& sink, std::mutex* writers, uint64_t chunk_blocks, uint64_t* blocks_copied,
                         const std::function<void(uint64_t)>* between_chunks = nullptr) const;
  // Writes changed-block records into `image` (Serialize's or
  // SerializeInChunks' bytes) and recomputes its item count (`items`, if
  // not null) and checksum.
  // Corruption for a record out of the image's range or a malformed image;
  // each block's encoding is checked later, by Deserialize.
  static Status PatchSerializedBlocks(std::string* image, std::string_view records, uint64_t* items = nullptr);
  // Changed-block records in the compact form LiveKeyDB's index file
  // (version 6) stores (FORMATS.md, "Compact changed-block records"):
  // per record a varint of the block number's distance from `*next` (the
  // previous record's block plus one; 0 to begin a run), a byte marking
  // the block's nonzero words, then those words. CompactRecords appends
  // the compact form of `records` (whole 72-byte records, blocks
  // ascending from *next, as CopyChangedBlocks copies them; a partial
  // record at the end is ignored) to `out` and advances *next; chunks of
  // one run are compacted in order with the same `next`.
  // ExpandCompactRecords appends the 72-byte records of one compact run to
  // `records`; Corruption for a truncated or malformed run (block ranges
  // are checked where the records are applied).
  static void CompactRecords(std::string_view records, uint64_t* next, std::string* out);
  static Status ExpandCompactRecords(std::string_view compact, std::string* records);

  // The filter an image stands for with changed-block records written over
  // it, built in place: `image` is Serialize's (layout kWhole) or one of
  // SerializeInChunks' sparse layouts (kSparse, kSparseCompact); `record_runs` hold
  // CopyChangedBlocks' records, applied run by run, in order. The result
  // equals, bit for bit, Deserialize of PatchSerializedBlocks(image, the
  // runs concatenated) (the sparse image expanded first), but a sparse
  // image's cost follows its
  // records, not the table: the table is allocated zeroed and only the
  // blocks named are written and checked, with no intermediate image.
  // Corruption as those calls report it, and for a record whose block is
  // not a valid encoding. `items`: the item count after the records.
  // `compact_runs`: each run holds compact records (CompactRecords, one
  // run each), read as they lie.
  static Status DeserializeWithRecords(std::string_view image, ImageLayout layout,
                                       const std::vector<std::string_view>& record_runs,
                                       std::unique_ptr<DenseDLeftFilter>* out,
                                       const DeserializeOptions& options = {}, uint64_t* items = nullptr,
                                       bool compact_runs = false);

  const DenseDLeftOptions& options() const;
  // The kernel instances this filter runs (see DenseSimdPath).
  DenseSimdPath simd_path() const;
  uint64_t bytes() const;
  double PredictedFpr() const;

  class Impl;

 private:
  explicit DenseDLeftFilter(std::unique_ptr<Impl> impl);
  bool ContainsHashOutOfLine(uint64_t hash) const;
  OpResult InsertHashOutOfLine(uint64_t hash);
  OpResult EraseHashOutOfLine(uint64_t hash);
  std::unique_ptr<Impl> impl_;
  internal::DenseDLeftView view_;  // the table, for the inline path
  bool inline_ = false;            // d == 2 and not thread-safe
};

}  // namespace dlcbf
