// The cache-line-local d-left counting Bloom filter kernel (FastDLeftFilter).
//
// ===========================================================================
// Design note
// ===========================================================================
// Paper: Bonomi, Mitzenmacher, Panigrahy, Singh, Varghese, "An Improved
// Construction for Counting Bloom Filters", ESA 2006 (section numbers below).
//
// Hashing (paper §3.2, two phases). One XXH3-64 per operation, h = H(key).
//   Phase 1, the true fingerprint f = (k, b, q):
//     block k = floor(h * N / 2^64)               N blocks
//     bucket b = (h >> 32) mod Bb                  Bb = 8 / D buckets/subtable
//     remainder q = floor((h mod 2^32) * 8191 / 2^32) + 1,  q in [1, 8191]
//   (q = 0 marks an empty cell, the paper's sentinel, §4; Rn = 8191.)
//   Phase 2, D invertible permutations inside block k:
//     P_i(b, q) = ((b + F_i(q)) mod Bb, q),  F_0 = 0,
//     F_i(q) = top log2(Bb) bits of the 32-bit product (q XOR key_i) * 0x9E3779B1,
//   so P_i^-1(j, q) = ((j - F_i(q)) mod Bb, q): a stored cell gives back its
//   true fingerprint, which relocation (§3.3) and keyless migration
//   (ForEachFingerprint) use.
//
// Layout (the point of this kernel). A block is one 64-byte line: 8 words
// of 64 bits, word w = i * Bb + j is bucket j of subtable i, and a word holds
// L = 4 cells of 16 bits:
//     bits 0..12 remainder q (0 = empty) | 13..14 count - 1 | 15 metadata
//   D = 2: 2 subtables x 4 buckets;  D = 4: 4 subtables x 2 buckets.
// All D candidate buckets of a key are in its own block, so a probe reads
// one line. Cells are word aligned and matched 4 at a time with SWAR
// (portable C++; no SIMD intrinsics, so the -march=native and portable
// builds run the same algorithm).
//   Insert (§3.2): if any candidate holds q, increment its counter (one copy
//   per fingerprint, Claim 1); else put q in the least-loaded candidate,
//   ties to the left. If all D candidates are full, one resident fingerprint
//   of a candidate may move to another of ITS candidates (found with
//   P_i^-1; a one-step version of §3.3 / §5.2's relocation). If that fails,
//   f spills.
//   Spill: the spare area has one 64-byte line per K = 8 blocks; a spare
//   line holds 24 cells of 21 bits (3 per word, top bit of a word unused):
//     q (13) | b (2) | t (4) | count-1 (2),   t = (k mod 8) + 8 * buddy.
//   Block k's own line is g = k / 8 and its buddy line g XOR 1: the first
//   spill of a (block, b) goes to the emptier of the two (power of two
//   choices; ties to its own line), and every later spill of that
//   (block, b) follows it. A spare cell stores f exactly (k is recovered from
//   the line and t), so spare entries are never shared between fingerprints
//   and are invertible too.
//   For each (block, b) a spill value of 4*D bits lives in the metadata bits
//   of the D words {i * Bb + b} (4 lanes x D words): its top bit names the
//   spare line (own / buddy), the other 4D-1 bits count the occurrences of
//   that (block, b)'s fingerprints held in the spare (sticking at their
//   maximum, 127 for D = 2).
//   Query: match the D candidate words; on no match, test the metadata bits
//   of the D spill words (same line); only if the count is non-zero read
//   the one spare line it names. Every operation searches the block, then
//   the spare; a fingerprint is created in the spare only when absent from
//   the block, and created in the block only when the count is zero or the
//   spare does not hold it. So every fingerprint has one copy and erase is
//   exact.
//   Saturation: a counter that reaches 4 (count bits 11) sticks; erase
//   leaves it (and its cell, and for a spare cell its spill count) forever:
//   a permanent false positive, never a false negative. Overflow: when the
//   chosen spare line is full too, Insert returns kOverflow before writing
//   anything.
//
// Spill probability, lines per query, load. A block receives
// X ~ Poisson(32 a) keys at load a (fraction of the 32 cells). With
// relocation the block fills to (almost) 32 before spilling, so about
//     E[(X - 32)+] / (32 a) of the keys spill:  a = 0.70: 0.2%, 0.75: 0.55%,
//     0.80: 1.1%, 0.85: 2.0%;  P(X > 32) = 2.0%, 4.7%, 9.0%, 15.5%.
// Bucket imbalance adds a little (the kernel counts spills and flagged
// (block, b) pairs; peer_bench prints them, README.md quotes them).
// A negative query reads the spare line only when its own (block, b) is
// flagged, so lines per negative query = 1 + flagged fraction
// (SpillFlaggedFraction(); LinesForHash counts it per query; peer_bench
// prints the average).
// Positive queries of keys held in the block never read the spare.
// Spare capacity: the spills of one block are clustered (one Poisson tail
// per block), so one line per 16 blocks without a second choice overflowed
// already at 1M keys, a = 0.85. With K = 8, the own/buddy choice and
// moving a full group to the buddy line, no insert overflowed at 10M keys
// up to a = 0.82; at a = 0.85, 17 of 10M inserts overflowed. MaxLoad is
// therefore 0.80 for both geometries (overflow still returns kOverflow
// with the table unchanged; it is not an error of the structure).
//
// False-positive rate (Claim 3 with B = N * Bb). A query of y is positive
// iff some stored fingerprint equals f(y) (block and spare entries are exact
// fingerprints), so with F stored fingerprints
//     FPR = 1 - (1 - 1 / (N * Bb * 8191))^F  ~  F / (N * Bb * 8191).
//   D = 2 at load a: 32 a / (4 * 8191) = a * 0.0977%  (0.078% at a = 0.80)
//   D = 4 at load a: 32 a / (2 * 8191) = a * 0.195%   (0.156% at a = 0.80)
// (peer_bench prints measured against predicted; README.md quotes it.)
//
// Bits per key, counters included: 512 bits * (N + ceil(N / 8)) / n
//     = 18 / a  (+ rounding): 22.5 at a = 0.80, 25.7 at a = 0.70.
// Each key costs a 13-bit remainder, 2 counter bits and 1 metadata bit in
// a 16-bit cell, plus the slack (1 - a) and the 1/8 spare. That is much
// more than a cuckoo filter at its fill limit (12-bit tags, 95%: 12.6
// bits/key, no counters): about 1.8x. The trade-off chosen: one line per
// query (1 + the flagged fraction), counters and exact erase, word-aligned SWAR
// cells, over bits per key. Denser variants (not built): cells packed
// across words (12-14 bits), quotienting metadata as in the vector
// quotient filter, a smaller spare with spill-aware sizing.
//
// What this learned from (reading only, no code copied):
//   - RocksDB FastLocalBloom: one 64-byte line per key, block by fastrange.
//   - Vector quotient filter (Pandey et al., SIGMOD 2021): 64-byte blocks
//     of small tags, matched with vector compares; load balancing between
//     blocks (here replaced by a flagged spare, to keep one line).
//   - Prefix filter (Even, Even, Morrison, VLDB 2022): a bin per key plus a
//     small spare, consulted only when the bin says it overflowed.
//   - Morton filter (Breslow, Jayasena, VLDB 2018): overflow tracking bits
//     in the block that spare negative queries the second access.
// ===========================================================================
#include "dlcbf/core/fast_dleft_filter.h"

#include "dlcbf/internal/sizing.h"
#include "filter_policy/core/fast_dleft_impl.h"

namespace dlcbf {

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------
double FastDLeftOptions::MaxLoad(uint32_t /*subtables*/) { return 0.80; }


namespace {

using internal::SizingNumber;

// Buckets per subtable in a block (8 buckets of 4 cells per block).
double BucketsPerSubtable(uint32_t subtables) { return subtables == 4 ? 2.0 : 4.0; }
// FPR ~ F / (blocks Bb Rn) = 32 a / (Bb Rn) at load a.
double FprAtLoad(uint32_t subtables, double a) { return 32.0 * a / (BucketsPerSubtable(subtables) * kRn); }
// Bits per key of the whole table (blocks and spare lines) at load a.
double BitsPerKeyAtLoad(double a) {
  const double k = static_cast<double>(kBlocksPerSpare);
  return 512.0 * (k + 1) / k / (32.0 * a);
}
// The lowest load ForFpr and ForBitsPerKey go down to: below it the table
// is mostly empty cells and the dense kernel (or a wider remainder) is the
// better answer.
constexpr double kMinLoad = 0.05;

}  // namespace

Status FastDLeftOptions::ForLoad(uint64_t n, double load, FastDLeftOptions* out) {
  const uint32_t d = out->subtables;
  if (d != 2 && d != 4) return Status::InvalidArgument("subtables must be 2 or 4 (got " + std::to_string(d) + ")");
  if (!(load > 0 && load <= MaxLoad(d)))
    return Status::InvalidArgument("load must be in (0, " + SizingNumber(MaxLoad(d)) + "] (got " +
                                   SizingNumber(load) + ")");
  if (n == 0) return Status::InvalidArgument("expected_items must be >= 1");
  FastDLeftOptions o = *out;
  const double b = std::ceil(static_cast<double>(n) / (32.0 * load));
  o.blocks = b < 1 ? 1 : (b > 9.0e18 ? UINT64_MAX : static_cast<uint64_t>(b));
  Status s = o.Validate();
  if (s.ok()) *out = o;
  return s;
}

Status FastDLeftOptions::ForBitsPerKey(uint64_t n, double bpk, FastDLeftOptions* out) {
  const double lo = BitsPerKeyAtLoad(MaxLoad(out->subtables));
  const double hi = BitsPerKeyAtLoad(kMinLoad);
  if (!(bpk >= lo && bpk <= hi))
    return Status::InvalidArgument("bits_per_key must be in [" + SizingNumber(lo) + ", " + SizingNumber(hi) +
                                   "] (loads " + SizingNumber(MaxLoad(out->subtables)) + " to " +
                                   SizingNumber(kMinLoad) + "; got " + SizingNumber(bpk) + ")");
  return ForLoad(n, BitsPerKeyAtLoad(1.0) / bpk, out);
}

Status FastDLeftOptions::ForFpr(uint64_t n, double fpr, FastDLeftOptions* out) {
  const uint32_t d = out->subtables;
  if (d != 2 && d != 4) return Status::InvalidArgument("subtables must be 2 or 4 (got " + std::to_string(d) + ")");
  const double min_fpr = FprAtLoad(d, kMinLoad);
  if (!(fpr >= min_fpr && fpr < 1))
    return Status::InvalidArgument("fpr must be in [" + SizingNumber(min_fpr) + ", 1) (load " +
                                   SizingNumber(kMinLoad) + " and up; got " + SizingNumber(fpr) +
                                   "); below that use DenseDLeftOptions::ForFpr (16-bit remainders)");
  if (n == 0) return Status::InvalidArgument("expected_items must be >= 1");
  // The exact condition on the table, then the load it implies, capped at
  // MaxLoad (a tiny n may ask for a load above it).
  const double space = internal::FingerprintSpaceForFpr(n, fpr);
  const double blocks = std::ceil(space / (BucketsPerSubtable(d) * kRn));
  const double load = std::min(MaxLoad(d), static_cast<double>(n) / (32.0 * blocks));
  return ForLoad(n, std::max(load, 1e-12), out);
}

double FastDLeftOptions::PredictedFpr(uint64_t items) const {
  const double bb = subtables == 4 ? 2.0 : 4.0;
  const double space = static_cast<double>(blocks) * bb * kRn;
  return -std::expm1(static_cast<double>(items) * std::log1p(-1.0 / space));
}

uint64_t FastDLeftOptions::Bytes() const { return 64 * (blocks + SpareLinesFor(blocks)); }

Status FastDLeftOptions::Validate() const {
  if (subtables != 2 && subtables != 4) {
    return Status::InvalidArgument("FastDLeftOptions::subtables", "must be 2 or 4");
  }
  if (blocks == 0) return Status::InvalidArgument("FastDLeftOptions::blocks", "must be >= 1");
  if (blocks > (uint64_t{1} << 50)) {
    return Status::InvalidArgument("FastDLeftOptions::blocks", "too large");
  }
  if (Bytes() > max_bytes) {
    return Status::MemoryLimit("FastDLeftOptions::max_bytes",
                                        "table of " + std::to_string(Bytes()) + " bytes");
  }
  return Status::OK();
}


#ifdef DLCBF_TESTING
// ---------------------------------------------------------------------------
// Test-only hooks (test builds only).
// ---------------------------------------------------------------------------
namespace internal {
void SetFastDLeftFaultForTesting(FastDLeftFault fault) {
  g_fault.store(static_cast<int>(fault), std::memory_order_relaxed);
}
FastDLeftFault GetFastDLeftFaultForTesting() {
  return static_cast<FastDLeftFault>(g_fault.load(std::memory_order_relaxed));
}
void SetFastDLeftReaderPauseForTesting(uint32_t spins) {
  g_reader_pause.store(spins, std::memory_order_relaxed);
}
}  // namespace internal
#endif  // DLCBF_TESTING

// ---------------------------------------------------------------------------
// Public wrappers: dispatch on D (2 or 4) once per call.
// ---------------------------------------------------------------------------
FastDLeftFilter::FastDLeftFilter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  // The inline probe (internal/fast_dleft_probe.h) mirrors Contains<2> of
  // the default mode; the table pointer never changes after creation.
  view_.blocks = impl_->blocks;
  view_.nblocks = impl_->nblocks;
  view_.key1 = impl_->pkeys[1];
  inline_probe_ = impl_->opt.subtables == 2 && !impl_->opt.thread_safe;
}
FastDLeftFilter::~FastDLeftFilter() = default;

Status FastDLeftFilter::Create(const FastDLeftOptions& options,
                                        std::unique_ptr<FastDLeftFilter>* out) {
  Status s = options.Validate();
  if (!s.ok()) return s;
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (!impl) return Status::MemoryLimit("FastDLeftFilter", "allocation failed");
  impl->opt = options;
  DeriveKeys(options.seed, impl->pkeys);
  s = impl->Allocate();
  if (!s.ok()) return s;
  out->reset(new FastDLeftFilter(std::move(impl)));
  return Status::OK();
}

uint64_t FastDLeftFilter::Hash(std::string_view key) const {
  return internal::HashKey(key.data(), key.size(), impl_->opt.seed);
}

OpResult FastDLeftFilter::InsertHash(uint64_t h) {
  Impl& m = *impl_;
  if (m.opt.subtables == 4) {
    const Impl::Fp f = m.Split<4>(h);
    return m.Write(f.k, [&](auto ts) { return m.Insert<4, decltype(ts)::value>(f, 1); });
  }
  const Impl::Fp f = m.Split<2>(h);
  return m.Write(f.k, [&](auto ts) { return m.Insert<2, decltype(ts)::value>(f, 1); });
}

OpResult FastDLeftFilter::EraseHash(uint64_t h) {
  Impl& m = *impl_;
  if (m.opt.subtables == 4) {
    const Impl::Fp f = m.Split<4>(h);
    return m.Write(f.k, [&](auto ts) { return m.Erase<4, decltype(ts)::value>(f); });
  }
  const Impl::Fp f = m.Split<2>(h);
  return m.Write(f.k, [&](auto ts) { return m.Erase<2, decltype(ts)::value>(f); });
}

void FastDLeftFilter::PrefetchHash(uint64_t h) const {
  const uint64_t k = Mul64Hi(h, view_.nblocks);
  __builtin_prefetch(view_.blocks + k * kWordsPerBlock, 1);
  const Impl& m = *impl_;
  if (m.opt.thread_safe) {
    __builtin_prefetch(&m.Stripe(k), 1);
    __builtin_prefetch(&m.mu, 1);
  }
}

bool FastDLeftFilter::ContainsHashOutOfLine(uint64_t h) const {
  const Impl& m = *impl_;
  if (!m.opt.thread_safe) return m.opt.subtables == 4 ? m.Contains<4>(h) : m.Contains<2>(h);
  if (m.opt.subtables == 4) return m.Validated(h, [&] { return m.Contains<4, true>(h); });
  return m.Validated(h, [&] { return m.Contains<2, true>(h); });
}

uint32_t FastDLeftFilter::CountHash(uint64_t h) const {
  const Impl& m = *impl_;
  if (!m.opt.thread_safe) return m.opt.subtables == 4 ? m.Count<4>(h) : m.Count<2>(h);
  if (m.opt.subtables == 4) return m.Validated(h, [&] { return m.Count<4, true>(h); });
  return m.Validated(h, [&] { return m.Count<2, true>(h); });
}

uint32_t FastDLeftFilter::LinesForHash(uint64_t h) const {
  const Impl& m = *impl_;
  if (!m.opt.thread_safe) return m.opt.subtables == 4 ? m.Lines<4>(h) : m.Lines<2>(h);
  return m.opt.subtables == 4 ? m.Lines<4, true>(h) : m.Lines<2, true>(h);
}

void FastDLeftFilter::ContainsHashBatch(const uint64_t* h, size_t n, bool* out) const {
  const Impl& m = *impl_;
  if (m.opt.thread_safe) {
    if (m.opt.subtables == 4) {
      m.ContainsBatch<4, true>(h, n, out);
    } else {
      m.ContainsBatch<2, true>(h, n, out);
    }
  } else if (m.opt.subtables == 4) {
    m.ContainsBatch<4, false>(h, n, out);
  } else {
    m.ContainsBatch<2, false>(h, n, out);
  }
}

namespace {
// Batched mutations: prefetch a group's blocks for writing, then apply op to
// each hash of the group (one loop for InsertHashBatch and EraseHashBatch).
template <class Op>
void MutateBatch(const uint64_t* blocks, uint64_t nblocks, size_t group, const uint64_t* h,
                 size_t n, OpResult* out, Op&& op) {
  for (size_t base = 0; base < n; base += group) {
    const size_t len = std::min(group, n - base);
    for (size_t i = 0; i < len; ++i) {
      __builtin_prefetch(blocks + Mul64Hi(h[base + i], nblocks) * kWordsPerBlock, 1, 3);
    }
    for (size_t i = 0; i < len; ++i) out[base + i] = op(h[base + i]);
  }
}
}  // namespace

void FastDLeftFilter::InsertHashBatch(const uint64_t* h, size_t n, OpResult* out) {
  const Impl& m = *impl_;
  MutateBatch(m.blocks, m.nblocks, Impl::kGroup, h, n, out,
              [this](uint64_t x) { return InsertHash(x); });
}

void FastDLeftFilter::EraseHashBatch(const uint64_t* h, size_t n, OpResult* out) {
  const Impl& m = *impl_;
  MutateBatch(m.blocks, m.nblocks, Impl::kGroup, h, n, out,
              [this](uint64_t x) { return EraseHash(x); });
}

void FastDLeftFilter::Clear() {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.opt.thread_safe) {
    g.lock();
    // Every stripe odd while the words are zeroed (atomically, word by word).
    for (uint64_t i = 0; i < Impl::kStripes; ++i) m.seq[i].fetch_add(1, std::memory_order_relaxed);
    for (uint64_t i = 0; i < 8 * (m.nblocks + m.nspare); ++i) Impl::St<true>(&m.mem[i], 0);
    for (uint64_t i = 0; i < Impl::kStripes; ++i) m.seq[i].fetch_add(1, std::memory_order_release);
  } else {
    std::memset(m.mem.get(), 0, 64 * (m.nblocks + m.nspare));
  }
  m.items = m.fingerprints = m.spilled = 0;
  m.relocations = m.overflows = m.saturations = m.sticky_erases = 0;
}

FastDLeftStats FastDLeftFilter::Stats() const {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.opt.thread_safe) g.lock();
  FastDLeftStats s;
  s.items = m.items;
  s.fingerprints = m.fingerprints;
  s.spilled = m.spilled;
  s.bytes = bytes();
  s.bits_per_item = m.items ? 8.0 * static_cast<double>(s.bytes) / static_cast<double>(m.items) : 0;
  s.relocations = m.relocations;
  s.overflows = m.overflows;
  s.saturations = m.saturations;
  s.sticky_erases = m.sticky_erases;
  s.predicted_fpr = m.opt.PredictedFpr(m.fingerprints);
  return s;
}

double FastDLeftFilter::SpillFlaggedFraction() const {
  std::unique_lock<std::mutex> g(impl_->mu, std::defer_lock);
  if (impl_->opt.thread_safe) g.lock();
  return impl_->FlaggedFraction();
}

FastDLeftFilter::TrueFingerprint FastDLeftFilter::FingerprintOfHash(uint64_t h) const {
  const Impl& m = *impl_;
  const Impl::Fp f = m.opt.subtables == 4 ? m.Split<4>(h) : m.Split<2>(h);
  return TrueFingerprint{f.k, f.b, f.q};
}

uint64_t FastDLeftFilter::HashOfFingerprint(const TrueFingerprint& f) const {
  // Inverts phase 1 (design note): the low 32 bits are the smallest lo with
  // floor(lo * 8191 / 2^32) = q - 1, bits 32..33 carry b (Bb <= 4), and
  // the hash is the smallest value >= ceil(k * 2^64 / N) with those low 34
  // bits. Block k's range of hashes is 2^64 / N wide, >= 2^34 while
  // N <= 2^30 (tables up to 64 GiB), so it holds such a value. Callers
  // that need certainty check FingerprintOfHash of the result.
  const uint64_t n = impl_->nblocks;
  const uint64_t lo = ((static_cast<uint64_t>(f.remainder - 1) << 32) + (kRn - 1)) / kRn;
  const uint64_t low34 = lo | (static_cast<uint64_t>(f.bucket & 3) << 32);
  __extension__ typedef unsigned __int128 u128;  // as in internal::Mul64Hi
  const u128 num = (static_cast<u128>(f.block) << 64) + (n - 1);
  const uint64_t start = static_cast<uint64_t>(num / n);
  constexpr uint64_t kLow34 = (uint64_t{1} << 34) - 1;
  uint64_t h = (start & ~kLow34) | low34;
  if (h < start) h += uint64_t{1} << 34;
  return h;
}

void FastDLeftFilter::ForEachFingerprint(
    const std::function<void(const TrueFingerprint&, uint32_t)>& fn) const {
  std::unique_lock<std::mutex> g(impl_->mu, std::defer_lock);
  if (impl_->opt.thread_safe) g.lock();
  if (impl_->opt.subtables == 4) {
    impl_->ForEach<4>(fn);
  } else {
    impl_->ForEach<2>(fn);
  }
}

// A range of whole spare line pairs: FastDLeftFilter::kGroupBlocks must be a
// multiple of the 2K blocks one pair serves.
static_assert(FastDLeftFilter::kGroupBlocks % (2 * kBlocksPerSpare) == 0,
              "kGroupBlocks must cover whole spare line pairs");

void FastDLeftFilter::ForEachFingerprintInBlocks(
    uint64_t first_block, uint64_t end_block,
    const std::function<void(const TrueFingerprint&, uint32_t)>& fn) const {
  std::unique_lock<std::mutex> g(impl_->mu, std::defer_lock);
  if (impl_->opt.thread_safe) g.lock();
  const uint64_t n = impl_->nblocks;
  if (first_block % kGroupBlocks != 0 || first_block >= n ||
      (end_block % kGroupBlocks != 0 && end_block != n) || end_block <= first_block) {
    return;
  }
  if (impl_->opt.subtables == 4) {
    impl_->ForEach<4>(fn, first_block, end_block);
  } else {
    impl_->ForEach<2>(fn, first_block, end_block);
  }
}

OpResult FastDLeftFilter::InsertFingerprint(const TrueFingerprint& f, uint32_t count) {
  Impl& m = *impl_;
  const uint32_t bb = m.opt.subtables == 4 ? 2 : 4;
  if (f.block >= m.nblocks || f.bucket >= bb || f.remainder == 0 || f.remainder > kRn ||
      count == 0 || count > 4) {
    return OpResult::kNotFound;
  }
  const Impl::Fp fp{f.block, f.bucket, f.remainder};
  if (m.opt.subtables == 4) {
    return m.Write(fp.k, [&](auto ts) { return m.Insert<4, decltype(ts)::value>(fp, count); });
  }
  return m.Write(fp.k, [&](auto ts) { return m.Insert<2, decltype(ts)::value>(fp, count); });
}

const FastDLeftOptions& FastDLeftFilter::options() const { return impl_->opt; }
uint64_t FastDLeftFilter::bytes() const { return 64 * (impl_->nblocks + impl_->nspare); }
double FastDLeftFilter::PredictedFpr() const { return Stats().predicted_fpr; }

}  // namespace dlcbf
