// DenseDLeftFilter: the dense dlCBF kernel (public API in
// include/dlcbf/core/dense_dleft_filter.h; block codec in
// dense_dleft_impl.h; on-disk format in dense_dleft_serialize.cc).
//
// ===========================================================================
// Design note
// ===========================================================================
// Source: Bonomi, Mitzenmacher, Panigrahy, Singh, Varghese, "An Improved
// Construction for Counting Bloom Filters", ESA 2006 (dlCBF), §3 (d-left
// hashing, true fingerprints, invertible permutations), with the block
// layout of the vector quotient filter (Pandey et al., SIGMOD 2021:
// variable-size buckets in a 64-byte block, unary-coded sizes).
//
// Hashing (§3.2). h = XXH3-64(key, seed). True fingerprint
// f = (x, q): x = floor(h B / 2^64) in [B], q in [0, Rn), Rn = 2^r - 1
// (internal::Hashing, the project's one hashing path). Subtable i holds
// P_i(f) = ((x + F_i(q)) mod B, q), F_0 = 0: a bijection, so a remainder
// in bucket P_i(f) of subtable i belongs to f and to nothing else. Bucket
// address x' in subtable i is block i * Nb + x' / K, bucket x' mod K in it
// (Nb blocks per subtable, K buckets per block, B = Nb K). For d = 2 the
// same positions come without a division on the way to subtable 0's block
// (internal::DenseD2CandidatesOf, shared with the inline probe): its block
// is floor(h Nb / 2^64), which equals floor(x / K), so its load issues one
// multiply after h; at r = 8, F_1(q) for each of the 255 values of q is
// precomputed split at the block size (a 2 KB table per filter, beside
// the blocks), so subtable 1's block is one L1 load and three adds from q.
// peer_bench in cache (Zen 5): r = 8 hits 12 % and misses 15 % faster.
//
// Block (64 bytes = one cache line), r = 8 | r = 16:
//
//   r = 8:  bytes 0..47   48 slots of 8 bits (value q + 1; 0 = free)
//           bytes 48..63  directory, 128 bits (two LE words): 80 buckets
//   r = 16: bytes 0..55   28 slots of 16 bits (LE)
//           bytes 56..63  directory, 64 bits: 36 buckets
//
//   Directory, from bit 0: for each bucket in order, one 1 per stored
//   remainder then a 0 terminator; bits above the last terminator are 0.
//   Slots hold the remainders in the same order, packed from slot 0.
//   Bucket j's remainders are the slots t with "bit t + j is 1 and exactly
//   t ones lie below it" (a rank test: one popcount, no select).
//   An all-zero block is empty (calloc'd tables need no initialization).
//
// Query (one block per subtable, d lines for a negative): compare q + 1
// against all slots of the block at once, a mask bit per slot (SSE2: 3
// byte compares, or 4 word compares packed to bytes, and their movemasks;
// AVX2 and AVX-512BW below; a portable loop elsewhere), and only for the
// matching slots (rare for a negative: 1 - (1 - 1/Rn)^(used) = 16% of
// negative blocks at r = 8 and full load, 0.04% at r = 16) run the rank
// test for bucket j.
// So the FPR counts only the query's own bucket: it compares on average
// load * S / K remainders per block.
//
// FPR (exact, the paper's Claim 3 argument). A false positive happens iff
// the query's f equals a stored fingerprint:
//   FPR(F) = 1 - (1 - 1/(B Rn))^F  ~  F / (B Rn) = d a S / (K Rn)
// at load a (F = a S d Nb stored fingerprints):
//   r = 8  (S = 48, K = 80):  d = 2, a = 0.93  ->  0.438%
//   r = 16 (S = 28, K = 36):  d = 2, a = 0.92  ->  0.00218%
// Space: 512 / (a S) bits per key: 11.47 (r = 8, a = 0.93),
// 19.88 (r = 16, a = 0.92). (The VQF's 8- and 16-bit blocks have these
// S and K; it fills to 0.93 / 0.88 with two choices and no moves.)
//
// Lines per query: d for a negative (both lines requested before either
// is compared, so their misses overlap), 1 to d for a positive: about
// half the keys sit in subtable 0 at full load (1.50 lines per hit at
// MaxLoad under either insert rule below; peer_bench's lines/hit), and a
// hit there answers without waiting for the second line.
// That half is the price of invertibility when every key tries subtable 0
// first: every P_i maps the same space [B] x [Rn] one-to-one, so the
// subtables are equally large, and at load a subtable 0 holds at most
// 1/(d a) of the keys (53.8 % at d = 2, a = 0.93) whatever the rule. So
// a positive's branch on the first block's answer is a coin flip. The
// VQF's two choices are symmetric (both blocks anywhere in one table), so
// its primary block keeps most keys: a simulation of its rule (threshold
// 3/4, 20,000 blocks of 48 slots filled to 0.93) left 87.9 % of the keys
// in their primary block, against 50.4 % for the same rule on two equal
// halves. Its positives mostly answer from one line with a predictable
// branch; it pays for that with positions that name no true fingerprint
// (no keyless migration). This is why in-cache hits stay behind the
// VQF's while misses match or beat it (docs/BENCHMARKS.md has the figures).
// A per-key order gets the VQF's share without changing the format, and
// was built and measured, not kept: a key whose subtable-0 bucket b is
// odd tries subtable 1 first (for insert, probe and erase; b's parity is
// a function of the true fingerprint, so migration keeps it). Half the
// keys then prefer either subtable, and their first blocks kept 87.9 %
// (r = 8) and 86.8 % (r = 16) of them at MaxLoad (block-level
// simulation, 1M slots, 3 seeds; peer_bench's lines/hit fell from
// 1.49 to 1.12 and 1.13). But the first block's address then waits for
// subtable 1's position (q, then F_1(q)) on every operation, a miss
// included, and the insert's threshold branch (first block at 3/4?) is a
// coin flip over twice as many inserts (the first blocks reach the
// threshold at twice the fill). peer_bench, Zen 5, native, two builds in
// alternating runs, preferred order / subtable order: in cache (100k)
// r = 8 hits 0.83-0.89x the time, misses 1.26-1.33x, inserts 1.14-1.19x,
// deletes 1.07-1.16x; r = 16 hits 0.91-0.92x, misses 1.23-1.24x, inserts
// 1.23-1.26x, deletes 1.17-1.20x. At 10M keys (three pairs, loud
// machine) r = 16 hits 0.70-0.89x, misses 0.88-1.01x, inserts 1.04-1.10x,
// deletes 0.92-0.96x; r = 8 deletes 0.68-0.80x, inserts 1.14-1.25x, hits
// and misses 0.57-1.37x (noise). It also moved the first move below
// MaxLoad at r = 16 (first move at load 0.911-0.920 in the simulation,
// against 0.921-0.923 in subtable order). Faster hits at the cost of
// slower misses and inserts is the wrong trade for an index that mostly
// answers absent keys (LiveKeyDB, the memtable index), so every key keeps
// subtable 0 first.
//
// Insert: the first candidate (subtable 0) takes the remainder while it
// holds fewer than kFirstChoiceSlots = 3/4 of its slots (36 of 48, 21 of
// 28: VQF's threshold); above that the least-loaded candidate block takes
// it, ties to the left (§3.1's rule). Why not §3.1's rule for every insert:
// it compares loads read from both blocks, a branch on data that a CPU
// mispredicts about half the time, and each mispredict holds back the
// next operation's loads; below the threshold the choice is known from
// the first block alone. The trade, measured (3 seeds, 1M slots, random
// keys; first move = the first insert that has to move a resident, first
// kOverflow = the first that fails):
//                       least loaded always       first choice below 3/4
//   r = 8,  d = 2:  move 0.962-0.965, ovf 0.998   move 0.960-0.963, ovf 0.997
//   r = 16, d = 2:  move 0.931-0.936, ovf 0.992   move 0.922-0.929, ovf 0.990
//   d = 3:          move 0.979-0.981 (r = 8), 0.962-0.966 (r = 16) under both
// So space and FPR at the sizing loads are unchanged (the FPR depends only
// on the number of stored fingerprints; MaxLoad 0.93 / 0.92 stays at or
// below every first move), at a cost of up to 0.9 points of load before the
// first move at r = 16. Placement is not part of the format: readers probe
// every candidate, so tables written under either rule read the same.
// One DRAM round trip where the rule allows it: an insert requests the
// second candidate's line before reading the first only once the filter
// holds SecondLineItems items (dense_dleft_impl.h). Below that gate, with
// nearly every key in subtable 0, a first-candidate block's load is
// Poisson with mean items / Nb, and it has reached the threshold (so the
// insert must read the second block, now one round trip later) with
// probability at most 2 %: the first 28 % of a fill to MaxLoad at r = 8,
// 25 % at r = 16, and every insert of a filter sized for growth that is
// still below a quarter of its keys. Above the gate both lines are
// requested together, as before (requesting the second only when needed
// puts a second round trip in series: mixed results in peer_bench). The
// gate is a hint only: bytes and answers are the same with or without it.
// dense_gate_bench (one process, rounds alternating the two variants,
// medians of 11), Zen 5, 10M keys, gated / always: a fill to 25 % 0.92x
// (r = 8) and 0.85x (r = 16) native, 0.84x and 0.87x portable; a fill to
// MaxLoad 0.96x and 0.93x native, 0.94x and 1.01x portable; in cache
// 0.96-1.02x.
// When all d candidates are full, one resident r' of a candidate block is
// moved to another of its own candidates (its f' recovered through
// P_i^-1, as §3.3's moves), scanning the candidate blocks' residents in
// order; if none can move, kOverflow and nothing changed. There is no
// spill area: the move is the defined response to a full block, kOverflow
// the defined response to a full neighbourhood (tests/dense_dleft_filter_
// test.cc checks the property on small tables). MaxLoad (0.93 / 0.92)
// stays below the first move, so sized filters never move in practice,
// and d-left's balance leaves an overflow margin of 6-7 points of load
// for keys beyond the estimate.
//
// Multiplicity: copies. A second Insert of a key adds a second copy of its
// remainder (in whichever candidate is least loaded). A 2-bit counter per
// slot would cost 25% more space at r = 8 for multiplicities that are rare
// in a key-value index; copies cost a slot only when used. Count sums the
// copies in the d candidate buckets; Erase removes one. Nothing saturates.
//
// Why a third kernel, not the fast kernel's successor. The fast kernel
// puts all d candidates in ONE line: a negative reads one line (plus a
// rare spare line). Variable occupancy makes in-line candidates pointless
// (the buckets of a block share its slots, so choosing among them balances
// nothing); balancing has to be across blocks, so a negative query reads
// d = 2 lines, issued together (both are prefetched before either is
// compared). The fast kernel keeps its niche (one line, 24 bits/key); this
// one halves the space. Both share one API shape and the hashing path.
//
// Kernel instances (DenseSimdPath, chosen at Create from the CPU): the
// portable set (SWAR popcounts; SSE2 compares, x86-64's baseline), and
// with POPCNT: SSE2, AVX2 (one 256-bit compare per block, plus a 128-bit
// one at r = 8) or AVX-512BW (one 512-bit compare) compares. Select (the
// insert's bucket terminator, a move's resident) is PDEP where
// internal::PdepIsFast measured it not slower than the portable byte-table
// select at start-up (PDEP is microcoded on AMD before Zen 3), else the
// table; no CPU list. (AVX-512 VBMI2 slot shifts, one expand or compress
// in place of the SSE2 chunks, were measured and not kept: in instance
// sets chosen at run time 0.98-1.02x the SSE2 shifts' time, inline in a
// -march=native caller 0.96-0.98x.) The compare is a small part of an
// operation: on Zen 5 (peer_bench, 100k and 10M keys) the three x86 sets
// ran within the run-to-run noise of each other, so the widest available
// is chosen; none lost. The inline path (d = 2 without thread safety: the
// probe, the common insert and the erase, in dense_dleft_probe.h) is
// compiled into the caller: SSE2 compares, or the widest its own flags
// allow. The insert needs select and popcounts, so it is inline only where
// the caller is built with POPCNT and BMI2 and the CPU's PDEP is fast;
// elsewhere it calls the instances above (inline with the portable select
// and SWAR popcounts it took 1.25-1.35x as long). Inline against the
// instances (peer_bench, 100k keys, Zen 5, native): inserts 0.85x, erases
// 0.87-0.89x the time.
//
// Thread-safe mode: one writer mutex; a per-stripe sequence number
// (stripe = block mod 1024) is odd while a writer changes a block of the
// stripe. Readers load the sequence numbers of all d candidate stripes,
// the blocks, and accept a negative only if every sequence
// number is unchanged and even; otherwise they retry. A move bumps both
// blocks' stripes before either block changes. Readers read each block
// with ReadBlockLockFree (dense_dleft_block.h: the compare path's own
// vector loads on x86, acquire-loaded words under TSan and elsewhere); with
// d = 2 they apply the d = 2 probe's branch-free lowest-match test. The first
// form copied the block word by word and compared the copy as one vector,
// which stalled on store forwarding (a query then cost 3x the
// unsynchronized one; peer_bench's "/ts" rows compare the two modes,
// README.md has the figures). Writers are serialized, so they bump a
// stripe with a load and a store, and store every word of a block they
// changed (a branch per word mispredicted more than the stores cost).
// ===========================================================================
#include "dlcbf/core/dense_dleft_filter.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>

#include "dlcbf/internal/cpu.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include "dlcbf/internal/memory.h"
#include "dlcbf/internal/sizing.h"
#include "filter_policy/core/dense_dleft_impl.h"

namespace dlcbf {

// ---------------------------------------------------------------------------
// Options and sizing
// ---------------------------------------------------------------------------
namespace {

using dense_detail::Class16;
using dense_detail::Class8;

uint32_t SlotsFor(uint32_t r) { return r == 8 ? Class8::kSlots : Class16::kSlots; }
uint32_t BucketsFor(uint32_t r) { return r == 8 ? Class8::kBuckets : Class16::kBuckets; }
double RnFor(uint32_t r) { return r == 8 ? 255.0 : 65535.0; }
// FPR ~ F / (B Rn) = d a S / (K Rn) at load a.
double FprAtLoad(uint32_t r, uint32_t d, double a) { return d * a * SlotsFor(r) / (BucketsFor(r) * RnFor(r)); }
using internal::SizingNumber;

// The one place the block count follows from keys and load.
void SizeTo(uint64_t n, double load, uint32_t r, DenseDLeftOptions* o) {
  const double total = std::ceil(static_cast<double>(n) / (load * SlotsFor(r)));
  o->remainder_bits = r;
  o->blocks_per_subtable = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(total / o->subtables)));
}

}  // namespace

uint32_t DenseDLeftOptions::SlotsPerBlock() const { return SlotsFor(remainder_bits); }
uint32_t DenseDLeftOptions::BucketsPerBlock() const { return BucketsFor(remainder_bits); }

double DenseDLeftOptions::MaxLoad(uint32_t remainder_bits) { return remainder_bits == 16 ? 0.92 : 0.93; }

Status DenseDLeftOptions::Validate() const {
  if (remainder_bits != 8 && remainder_bits != 16)
    return Status::InvalidArgument("remainder_bits must be 8 or 16 (got " + std::to_string(remainder_bits) + ")");
  if (subtables < 2 || subtables > 4)
    return Status::InvalidArgument("subtables must be in [2, 4] (got " + std::to_string(subtables) + ")");
  if (blocks_per_subtable == 0) return Status::InvalidArgument("blocks_per_subtable must be >= 1");
  if (blocks_per_subtable >= (uint64_t{1} << 34))
    return Status::InvalidArgument("blocks_per_subtable must be < 2^34 (got " + std::to_string(blocks_per_subtable) +
                                   ")");
  return Status::OK();
}

double DenseDLeftOptions::PredictedFpr(uint64_t items) const {
  const double space = static_cast<double>(blocks_per_subtable) * BucketsPerBlock() * RnFor(remainder_bits);
  return -std::expm1(static_cast<double>(items) * std::log1p(-1.0 / space));
}

Status DenseDLeftOptions::ForLoad(uint64_t n, double load, uint32_t r, DenseDLeftOptions* out) {
  if (r != 8 && r != 16) return Status::InvalidArgument("remainder_bits must be 8 or 16 (got " + std::to_string(r) + ")");
  if (!(load > 0 && load <= MaxLoad(r)))
    return Status::InvalidArgument("load must be in (0, " + SizingNumber(MaxLoad(r)) + "] for remainder_bits " +
                                   std::to_string(r) + " (got " + SizingNumber(load) + ")");
  if (n == 0) return Status::InvalidArgument("expected_items must be >= 1");
  DenseDLeftOptions o = *out;
  SizeTo(n, load, r, &o);
  Status s = o.Validate();
  if (s.ok()) *out = o;
  return s;
}

Status DenseDLeftOptions::ForBitsPerKey(uint64_t n, double bpk, DenseDLeftOptions* out) {
  const double min16 = 512.0 / (Class16::kSlots * MaxLoad(16));
  const double min8 = 512.0 / (Class8::kSlots * MaxLoad(8));
  if (!(bpk >= min8) || !std::isfinite(bpk))
    return Status::InvalidArgument("bits_per_key must be >= " + SizingNumber(min8) + " (the 8-bit class at load " +
                                   SizingNumber(MaxLoad(8)) + "; got " + SizingNumber(bpk) + ")");
  const uint32_t r = bpk >= min16 ? 16 : 8;
  return ForLoad(n, 512.0 / (SlotsFor(r) * bpk), r, out);
}

Status DenseDLeftOptions::ForFpr(uint64_t n, double fpr, DenseDLeftOptions* out) {
  const uint32_t d = out->subtables;
  if (d < 2 || d > 4) return Status::InvalidArgument("subtables must be in [2, 4] (got " + std::to_string(d) + ")");
  const double min_fpr = FprAtLoad(16, d, 0.05);
  if (!(fpr >= min_fpr && fpr < 1))
    return Status::InvalidArgument("fpr must be in [" + SizingNumber(min_fpr) + ", 1) (the 16-bit class at load 0.05; got " +
                                   SizingNumber(fpr) + ")");
  const uint32_t r = fpr >= FprAtLoad(8, d, 0.5) ? 8 : 16;
  const double load = std::min(MaxLoad(r), fpr / FprAtLoad(r, d, 1.0));
  return ForLoad(n, load, r, out);
}

// ---------------------------------------------------------------------------
// Filter
// ---------------------------------------------------------------------------
namespace {

// The entry points of each mode. The POPCNT instances are compiled for
// that instruction (target attribute) with the whole kernel inlined
// (flatten), so the block codec's popcounts become single instructions;
// they are chosen only on CPUs that have it. Everything else, and every
// instance of the portable classes, is plain x86-64 (or any target).
template <class C, bool TS>
struct Entry {
  static bool Contains(const DenseDLeftFilter::Impl& m, uint64_t h) { return m.Contains<C, TS>(h); }
  static uint32_t Count(const DenseDLeftFilter::Impl& m, uint64_t h) { return m.Count<C, TS>(h); }
  static void ContainsBatch(const DenseDLeftFilter::Impl& m, const uint64_t* h, size_t n, bool* out) {
    m.ContainsBatch<C, TS>(h, n, out);
  }
  static OpResult Insert(DenseDLeftFilter::Impl& m, uint64_t h) { return m.Insert<C, TS>(h); }
  static OpResult Erase(DenseDLeftFilter::Impl& m, uint64_t h) { return m.Erase<C, TS>(h); }
};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DLCBF_DENSE_HAVE_X86_INSTANCES 1
// One instance set per target: the whole kernel inlined (flatten) and
// compiled for the target's instructions. POPCNT alone, + AVX2, +
// AVX-512BW, each with or without BMI2: PDEP is microcoded and slow on AMD
// before Zen 3 (which has AVX2), so the BMI2 sets are chosen only where
// internal::PdepIsFast measured it at start-up; elsewhere select uses the
// portable byte table.
#define DLCBF_DENSE_ENTRY(NAME, TARGET)                                                                   \
  template <class C, bool TS>                                                                            \
  struct NAME {                                                                                          \
    __attribute__((target(TARGET), flatten)) static bool Contains(const DenseDLeftFilter::Impl& m, uint64_t h) { \
      return m.Contains<C, TS>(h);                                                                       \
    }                                                                                                    \
    __attribute__((target(TARGET), flatten)) static uint32_t Count(const DenseDLeftFilter::Impl& m, uint64_t h) { \
      return m.Count<C, TS>(h);                                                                          \
    }                                                                                                    \
    __attribute__((target(TARGET), flatten)) static void ContainsBatch(const DenseDLeftFilter::Impl& m,   \
                                                                      const uint64_t* h, size_t n, bool* out) { \
      m.ContainsBatch<C, TS>(h, n, out);                                                                 \
    }                                                                                                    \
    __attribute__((target(TARGET), flatten)) static OpResult Insert(DenseDLeftFilter::Impl& m, uint64_t h) { \
      return m.Insert<C, TS>(h);                                                                         \
    }                                                                                                    \
    __attribute__((target(TARGET), flatten)) static OpResult Erase(DenseDLeftFilter::Impl& m, uint64_t h) { \
      return m.Erase<C, TS>(h);                                                                          \
    }                                                                                                    \
  };
DLCBF_DENSE_ENTRY(EntryPopcnt, "popcnt")
DLCBF_DENSE_ENTRY(EntryAvx2, "popcnt,avx2")
DLCBF_DENSE_ENTRY(EntryAvx512, "popcnt,avx2,avx512f,avx512bw")
// The same with BMI2 for select (PDEP), where internal::PdepIsFast says so.
DLCBF_DENSE_ENTRY(EntryPopcntBmi2, "popcnt,bmi2")
DLCBF_DENSE_ENTRY(EntryAvx2Bmi2, "popcnt,avx2,bmi2")
DLCBF_DENSE_ENTRY(EntryAvx512Bmi2, "popcnt,avx2,avx512f,avx512bw,bmi2")
#undef DLCBF_DENSE_ENTRY
#endif

template <template <class, bool> class E, class C, bool TS>
constexpr DenseOps MakeOps() {
  return DenseOps{&E<C, TS>::Contains, &E<C, TS>::Count, &E<C, TS>::ContainsBatch, &E<C, TS>::Insert, &E<C, TS>::Erase};
}

// [r8][thread_safe].
constexpr DenseOps kPortableOps[2][2] = {
    {MakeOps<Entry, Class16, false>(), MakeOps<Entry, Class16, true>()},
    {MakeOps<Entry, Class8, false>(), MakeOps<Entry, Class8, true>()}};
#ifdef DLCBF_DENSE_HAVE_X86_INSTANCES
template <template <class, bool> class E, int kLevel, bool kPdep>
struct OpsOf {
  using C8 = dense_detail::WithSimd<Class8, kLevel, kPdep>;
  using C16 = dense_detail::WithSimd<Class16, kLevel, kPdep>;
  static constexpr DenseOps kOps[2][2] = {{MakeOps<E, C16, false>(), MakeOps<E, C16, true>()},
                                          {MakeOps<E, C8, false>(), MakeOps<E, C8, true>()}};
};
// Whether the instance sets select with PDEP (internal::PdepIsFast).
bool UsePdep() {
#ifdef DLCBF_TESTING
  if (dense_testing::ForcedPdep() >= 0) return dense_testing::ForcedPdep() == 1 && __builtin_cpu_supports("bmi2");
#endif
  return internal::PdepIsFast();
}
#endif

// The widest instance set this CPU runs (DenseDLeftFilter::SimdPath), or
// the one DLCBF_DENSE_SIMD names (portable, sse2, avx2, avx512) when the
// CPU has it.
DenseSimdPath CpuPath() {
#ifdef DLCBF_DENSE_HAVE_X86_INSTANCES
#ifdef DLCBF_TESTING
  if (dense_testing::ForcePortable()) return DenseSimdPath::kPortable;
  if (dense_testing::ForcedPath() >= 0) return static_cast<DenseSimdPath>(dense_testing::ForcedPath());
#endif
  static const DenseSimdPath best = [] {
    if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f")) return DenseSimdPath::kAvx512;
    if (__builtin_cpu_supports("avx2")) return DenseSimdPath::kAvx2;
    if (__builtin_cpu_supports("popcnt")) return DenseSimdPath::kSse2;
    return DenseSimdPath::kPortable;
  }();
  const char* env = std::getenv("DLCBF_DENSE_SIMD");
  if (env != nullptr) {
    const std::string e(env);
    const DenseSimdPath want = e == "portable" ? DenseSimdPath::kPortable
                               : e == "sse2"   ? DenseSimdPath::kSse2
                               : e == "avx2"   ? DenseSimdPath::kAvx2
                               : e == "avx512" ? DenseSimdPath::kAvx512
                                               : best;
    if (static_cast<int>(want) <= static_cast<int>(best)) return want;
  }
  return best;
#else
  return DenseSimdPath::kPortable;
#endif
}

}  // namespace

const DenseOps* SelectDenseOps(bool r8, bool thread_safe, DenseSimdPath* path) {
  *path = CpuPath();
#ifdef DLCBF_DENSE_HAVE_X86_INSTANCES
  const bool pdep = *path != DenseSimdPath::kPortable && UsePdep();
  switch (*path) {
    case DenseSimdPath::kAvx512:
      return pdep ? &OpsOf<EntryAvx512Bmi2, 2, true>::kOps[r8][thread_safe]
                  : &OpsOf<EntryAvx512, 2, false>::kOps[r8][thread_safe];
    case DenseSimdPath::kAvx2:
      return pdep ? &OpsOf<EntryAvx2Bmi2, 1, true>::kOps[r8][thread_safe]
                  : &OpsOf<EntryAvx2, 1, false>::kOps[r8][thread_safe];
    case DenseSimdPath::kSse2:
      return pdep ? &OpsOf<EntryPopcntBmi2, 0, true>::kOps[r8][thread_safe]
                  : &OpsOf<EntryPopcnt, 0, false>::kOps[r8][thread_safe];
    case DenseSimdPath::kPortable:
      break;
  }
#endif
  return &kPortableOps[r8][thread_safe];
}

DenseDLeftFilter::DenseDLeftFilter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  const Impl& m = *impl_;
  view_ = m.view;  // its offsets point into *impl_, which lives as long
  inline_ = m.d == 2 && !m.opt.thread_safe;
#ifdef DLCBF_TESTING
  if (dense_testing::NoInlineProbe()) inline_ = false;
#endif
}
DenseDLeftFilter::~DenseDLeftFilter() = default;

Status DenseDLeftFilter::Create(const DenseDLeftOptions& options, std::unique_ptr<DenseDLeftFilter>* out) {
  Status s = options.Validate();
  if (!s.ok()) return s;
  const uint64_t bytes = options.Bytes();
  if (bytes > options.max_bytes)
    return Status::MemoryLimit("DenseDLeftFilter needs " + std::to_string(bytes) + " bytes, more than max_bytes " +
                               std::to_string(options.max_bytes));
  if (bytes > internal::PhysicalMemoryBytes())
    return Status::MemoryLimit("DenseDLeftFilter needs " + std::to_string(bytes) +
                               " bytes, more than this machine's physical memory");
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (!impl) return Status::MemoryLimit("DenseDLeftFilter: allocation failed");
  impl->opt = options;
  impl->Init(internal::PermutationKeys::FromSeed(options.seed));
  if (!impl->Allocate()) return Status::MemoryLimit("DenseDLeftFilter: allocation failed");
  out->reset(new DenseDLeftFilter(std::move(impl)));
  return Status::OK();
}

uint64_t DenseDLeftFilter::Hash(std::string_view key) const {
  return internal::HashKey(key.data(), key.size(), impl_->opt.seed);
}

OpResult DenseDLeftFilter::InsertHashOutOfLine(uint64_t hash) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.lock_writers) g.lock();
  return m.ops->insert(m, hash);
}

OpResult DenseDLeftFilter::EraseHashOutOfLine(uint64_t hash) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.lock_writers) g.lock();
  return m.ops->erase(m, hash);
}

bool DenseDLeftFilter::ContainsHashOutOfLine(uint64_t hash) const {
  const Impl& m = *impl_;
  return m.ops->contains(m, hash);
}

uint32_t DenseDLeftFilter::CountHash(uint64_t hash) const {
  const Impl& m = *impl_;
  return m.ops->count(m, hash);
}

uint32_t DenseDLeftFilter::LinesForHash(uint64_t hash) const {
  const Impl& m = *impl_;
  return m.r8 ? m.Lines<Class8>(hash) : m.Lines<Class16>(hash);
}

void DenseDLeftFilter::PrefetchHash(uint64_t hash) const {
  const Impl& m = *impl_;
  Impl::Cand c[Impl::kMaxD];
  if (m.r8) {
    m.Candidates<Class8>(hash, c);
  } else {
    m.Candidates<Class16>(hash, c);
  }
  for (uint32_t i = 0; i < m.d; ++i) {
    __builtin_prefetch(m.Blk(c[i].block), 0, 3);
    if (m.opt.thread_safe) __builtin_prefetch(&m.Stripe(c[i].block), 0, 3);
  }
}

namespace {
constexpr size_t kBatch = DenseDLeftFilter::Impl::kBatch;  // keys whose blocks are in flight together
}  // namespace

void DenseDLeftFilter::ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const {
  const Impl& m = *impl_;
  for (size_t base = 0; base < n; base += kBatch) {
    const size_t len = std::min(kBatch, n - base);
    m.ops->contains_batch(m, hashes + base, len, out + base);
  }
}

namespace {
// Batched inserts / erases: each group's candidate lines are requested
// before the first operation of the group.
template <class Op>
void MutateInBatches(const DenseDLeftFilter& f, const uint64_t* hashes, size_t n, OpResult* out, Op&& op) {
  for (size_t base = 0; base < n; base += kBatch) {
    const size_t len = std::min(kBatch, n - base);
    for (size_t i = 0; i < len; ++i) f.PrefetchHash(hashes[base + i]);
    for (size_t i = 0; i < len; ++i) out[base + i] = op(hashes[base + i]);
  }
}
}  // namespace

void DenseDLeftFilter::InsertHashBatch(const uint64_t* hashes, size_t n, OpResult* out) {
  MutateInBatches(*this, hashes, n, out, [this](uint64_t h) { return InsertHash(h); });
}

void DenseDLeftFilter::EraseHashBatch(const uint64_t* hashes, size_t n, OpResult* out) {
  MutateInBatches(*this, hashes, n, out, [this](uint64_t h) { return EraseHash(h); });
}

void DenseDLeftFilter::Clear() {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.lock_writers) g.lock();
  for (uint64_t b = 0; b < m.nblocks; ++b) {
    if (m.opt.thread_safe) {
      m.BeginWrite<true>(b, b);
      m.Mutate<true>(b, [](uint8_t* x) { std::memset(x, 0, 64); });
      m.EndWrite<true>(b, b);
    } else {
      std::memset(m.Blk(b), 0, 64);
    }
  }
  m.items = m.relocations = m.overflows = 0;
}

DenseDLeftStats DenseDLeftFilter::Stats() const {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.lock_writers) g.lock();
  DenseDLeftStats s;
  s.items = m.items;
  s.bytes = m.opt.Bytes();
  s.bits_per_item = m.items == 0 ? 0 : 8.0 * static_cast<double>(s.bytes) / static_cast<double>(m.items);
  s.load = static_cast<double>(m.items) / (static_cast<double>(m.nblocks) * m.opt.SlotsPerBlock());
  s.relocations = m.relocations;
  s.overflows = m.overflows;
  s.predicted_fpr = m.opt.PredictedFpr(m.items);
  return s;
}

DenseDLeftFilter::TrueFingerprint DenseDLeftFilter::FingerprintOfHash(uint64_t hash) const {
  const internal::Fingerprint f = impl_->hashing.FingerprintOf(hash);
  return TrueFingerprint{f.bucket, static_cast<uint32_t>(f.remainder)};
}

uint64_t DenseDLeftFilter::HashOfFingerprint(const TrueFingerprint& f) const {
  return impl_->hashing.HashOfPacked(impl_->hashing.Pack(internal::Fingerprint{f.bucket, f.remainder}));
}

void DenseDLeftFilter::ForEachFingerprint(
    const std::function<void(const TrueFingerprint&, uint32_t copies)>& fn) const {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.lock_writers) g.lock();
  auto each = [&fn](const internal::Fingerprint& f, uint32_t copies) {
    fn(TrueFingerprint{f.bucket, static_cast<uint32_t>(f.remainder)}, copies);
  };
  if (m.r8) {
    m.ForEach<Class8>(each);
  } else {
    m.ForEach<Class16>(each);
  }
}

OpResult DenseDLeftFilter::InsertFingerprint(const TrueFingerprint& f, uint32_t copies) {
  const Impl& m = *impl_;
  const uint64_t buckets = m.nb * m.opt.BucketsPerBlock();
  if (f.bucket >= buckets || f.remainder >= RnFor(m.opt.remainder_bits)) return OpResult::kNotFound;
  const uint64_t h = HashOfFingerprint(f);
  for (uint32_t k = 0; k < copies; ++k) {
    if (InsertHash(h) == OpResult::kOk) continue;
    // Leave the filter as it was: take back the copies added so far.
    for (uint32_t u = 0; u < k; ++u) {
      const OpResult back = EraseHash(h);
      (void)back;  // kOk: this call added that copy
    }
    return OpResult::kOverflow;
  }
  return OpResult::kOk;
}

void DenseDLeftFilter::SetWritersSerializedByCaller() { impl_->lock_writers = false; }

const DenseDLeftOptions& DenseDLeftFilter::options() const { return impl_->opt; }
DenseSimdPath DenseDLeftFilter::simd_path() const { return impl_->simd; }

const char* DenseSimdPathName(DenseSimdPath path) {
  switch (path) {
    case DenseSimdPath::kPortable:
      return "portable";
    case DenseSimdPath::kSse2:
      return "sse2";
    case DenseSimdPath::kAvx2:
      return "avx2";
    case DenseSimdPath::kAvx512:
      return "avx512";
  }
  return "unknown";
}
uint64_t DenseDLeftFilter::bytes() const { return impl_->opt.Bytes(); }
double DenseDLeftFilter::PredictedFpr() const { return impl_->opt.PredictedFpr(impl_->items); }

}  // namespace dlcbf
