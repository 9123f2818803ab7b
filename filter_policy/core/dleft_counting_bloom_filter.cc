// d-left counting Bloom filter: implementation.
//
// Design note (Bonomi, Mitzenmacher et al., ESA 2006)
// ---------------------------------------------------
// Numbers for the paper's §5.1 geometry (d = 4, B = 2048, L = 8, r = 14,
// c = 2; 2^20 bits) holding 49152 keys (load 6 of 8 per bucket):
//   - FPR: exactly 1 - (1 - 1/(B*Rn))^F for F stored fingerprints (Claim 3),
//     Rn = 2^r - 1 remainder values (0 marks an empty cell); F <= 49152
//     gives <= 0.001464, under the paper's 24 * 2^-r = 0.001465 bound (which
//     uses B*2^r). Measured by tools/paper/dlcbf_sim.
//   - Space: (r + c) * L * d * B = 2^20 bits = 21.3 bits/key, against
//     2,654,208 bits for a 4-bit CBF at similar FPR (paper §5.1: ratio 2.53).
//   - Probes: one hash, d bucket reads (d independent cache lines, issued
//     together so the misses overlap); ContainsBatch prefetches every bucket
//     of the batch before probing.
// Trade-offs chosen here:
//   - Permutations: P_i(b, q) = ((b + F_i(q)) mod B, q) with a keyed
//     full-avalanche F_i and P_0 = identity (internal/dleft_layout.h),
//     instead of a*f mod 2^q: B may be any positive count (SST filters are
//     sized exactly), P_i^-1 exists, and a query costs d - 1 mixing rounds.
//   - Full buckets: bounded breadth-first relocation (§3.3; §5.2 used a
//     one-level move from subtable 0, available as Relocation::kFirstSubtable).
//     The search plans the whole chain of moves before changing anything, so
//     a failed insert leaves the table bit-for-bit unchanged.
//   - Cells follow the paper's §4 encoding: remainder field 0 is the empty
//     sentinel (Rn = 2^r - 1) and the counter stores multiplicity - 1, so
//     c = 2 counts 1..4 (the paper's largest counter over 10000 trials was
//     4). The top value saturates and sticks (never decremented): never a
//     false negative, at the cost of a permanent false positive for that
//     fingerprint. The paper bounds the chance that 5 keys share a
//     fingerprint by 5.6e-17 at its §5.1 size.
//
// Concurrency (Options::thread_safe)
// ----------------------------------
// Writers serialize on mu_. Table words are read and written with relaxed
// atomics, and a writer only rewrites words through single-word stores that
// preserve every bit it does not own, so a reader always sees every other
// cell intact. A cell being changed (or a fingerprint being moved between
// two of its candidate buckets) is covered by per-bucket-stripe sequence
// counters: the writer makes the stripes of every bucket it touches odd,
// writes, then makes them even again. Readers take no lock; a positive
// answer is returned at once (a transient false positive is harmless), and
// a negative answer is only returned after checking that the stripes of all
// d candidate buckets were even and unchanged across the probe (a seqlock
// per stripe). So a reader can never report a transient false negative.
//
// Memory ordering of the seqlock, without standalone fences (so that
// ThreadSanitizer, which does not model std::atomic_thread_fence, checks it
// too). Writer: stripe -> odd (relaxed); every table word store is a
// RELEASE store; stripe -> even (release). Reader (thread-safe mode):
// stripe load (acquire); every table word load of the probe is an ACQUIRE
// load; stripe re-load (relaxed), compared. If any probe load read a value
// stored after some writer's "odd" store, that load synchronizes with the
// release store that wrote it, so the odd store happens-before the
// reader's re-load, which (read-read coherence) sees it or a later value:
// the compare fails and the reader retries. If no probe load did, the
// reader saw the words as of the stripe value it first read (whose release
// store published every earlier write). This is the classic
// "release fence after the odd store / acquire fence before the re-load"
// seqlock with each fence folded into the data accesses; on x86-64 both
// compile to the same plain MOVs as before. Single-threaded mode keeps
// relaxed loads.

#include "dlcbf/core/dleft_counting_bloom_filter.h"

#include "dlcbf/internal/sizing.h"
#include "filter_policy/core/dleft_impl.h"

namespace dlcbf {

const char* ToString(OpResult r) {
  switch (r) {
    case OpResult::kOk: return "OK";
    case OpResult::kNotFound: return "NotFound";
    case OpResult::kOverflow: return "Overflow";
    case OpResult::kNotSupported: return "NotSupported";
  }
  return "Unknown";
}

namespace {

using internal::SizingNumber;

// The load ForBitsPerKey and ForFpr size for: 6 of 8 cells, the paper's
// §5.1 setting, where d = 4 overflows with probability ~1e-30 per bucket.
constexpr double kSizingLoad = 0.75;
// The lowest load ForBitsPerKey goes down to once r is at its widest (32).
constexpr double kMinLoad = 0.05;

// Sets B for n keys at load a with the other fields of *o kept; B saturates
// instead of casting an out-of-range double (undefined behaviour), so
// Validate() reports a B that is too large.
void SizeTo(uint64_t n, double a, DLeftOptions* o) {
  const double cells = static_cast<double>(n) / a;
  const double b = std::ceil(cells / (static_cast<double>(o->subtables) * std::max<uint32_t>(1, o->cells_per_bucket)));
  o->buckets_per_subtable = !(b < 1.8e19) ? UINT64_MAX : std::max<uint64_t>(1, static_cast<uint64_t>(b));
}

Status Commit(const DLeftOptions& o, DLeftOptions* out) {
  Status s = o.Validate();
  if (s.ok()) *out = o;
  return s;
}

}  // namespace

Status DLeftOptions::ForLoad(uint64_t n, double load, DLeftOptions* out) {
  if (!(load > 0 && load <= 1))
    return Status::InvalidArgument("load must be in (0, 1] (got " + SizingNumber(load) + ")");
  if (n == 0) return Status::InvalidArgument("expected_items must be >= 1");
  DLeftOptions o = *out;
  SizeTo(n, load, &o);
  return Commit(o, out);
}

Status DLeftOptions::ForBitsPerKey(uint64_t n, double bpk, DLeftOptions* out) {
  const uint32_t c = out->counter_bits;
  // bits per key = (r + c) / load; r = the widest remainder at kSizingLoad.
  const double lo = (2 + c) / kSizingLoad, hi = (32 + c) / kMinLoad;
  if (!(bpk >= lo && bpk <= hi))
    return Status::InvalidArgument("bits_per_key must be in [" + SizingNumber(lo) + ", " + SizingNumber(hi) +
                                   "] for counter_bits " + std::to_string(c) + " (got " + SizingNumber(bpk) + ")");
  if (n == 0) return Status::InvalidArgument("expected_items must be >= 1");
  DLeftOptions o = *out;
  o.remainder_bits = static_cast<uint32_t>(std::min(32.0, std::floor(bpk * kSizingLoad) - c));
  SizeTo(n, (o.remainder_bits + c) / bpk, &o);
  return Commit(o, out);
}

Status DLeftOptions::ForFpr(uint64_t n, double fpr, DLeftOptions* out) {
  const double per_bucket = static_cast<double>(out->subtables) * out->cells_per_bucket * kSizingLoad;
  // FPR ~ F / (B Rn) = d L a / Rn at load a (paper Claim 3): the narrowest
  // r with d L a / (2^r - 1) <= fpr.
  const double min_fpr = per_bucket / 4294967295.0;
  if (!(fpr >= min_fpr && fpr < 1))
    return Status::InvalidArgument("fpr must be in [" + SizingNumber(min_fpr) + ", 1) (r = 32 at load " +
                                   SizingNumber(kSizingLoad) + " with d L = " +
                                   std::to_string(out->subtables * out->cells_per_bucket) + "; got " +
                                   SizingNumber(fpr) + ")");
  if (n == 0) return Status::InvalidArgument("expected_items must be >= 1");
  DLeftOptions o = *out;
  uint32_t r = 2;
  while (r < 32 && per_bucket / (std::ldexp(1.0, static_cast<int>(r)) - 1) > fpr) ++r;
  o.remainder_bits = r;
  SizeTo(n, kSizingLoad, &o);
  // The exact condition (1 - (1 - 1/(B Rn))^n <= fpr; the fingerprint
  // space is [B] x [Rn], paper Claim 3) may need a few more buckets than
  // the approximation.
  const double need = std::ceil(internal::FingerprintSpaceForFpr(n, fpr) / (std::ldexp(1.0, static_cast<int>(r)) - 1));
  if (need > static_cast<double>(o.buckets_per_subtable))
    o.buckets_per_subtable = need < 1.8e19 ? static_cast<uint64_t>(need) : UINT64_MAX;
  return Commit(o, out);
}

Status DLeftOptions::Validate() const {
  if (const char* why = GeometryOf(*this).Invalid()) {
    return Status::InvalidArgument("DLeftOptions", why);
  }
  if (relocation != Relocation::kNone && relocation != Relocation::kFirstSubtable &&
      relocation != Relocation::kBreadthFirst) {
    return Status::InvalidArgument("DLeftOptions", "relocation: unknown policy");
  }
  if (max_relocation_nodes > (1u << 20)) {
    return Status::InvalidArgument("DLeftOptions",
                                            "max_relocation_nodes must be <= 2^20");
  }
  uint64_t bytes = GeometryOf(*this).total_bytes();
  if (bytes > max_bytes) {
    return Status::MemoryLimit(
        "DLeftOptions", "geometry needs " + std::to_string(bytes) +
                            " bytes, over max_bytes = " + std::to_string(max_bytes));
  }
  return Status::OK();
}


// ---------------------------------------------------------------------------

DLeftCountingBloomFilter::DLeftCountingBloomFilter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
DLeftCountingBloomFilter::~DLeftCountingBloomFilter() = default;

Status DLeftCountingBloomFilter::Create(const DLeftOptions& options,
                                                 std::unique_ptr<DLeftCountingBloomFilter>* out) {
  if (out == nullptr) return Status::InvalidArgument("DLeftCountingBloomFilter::Create", "out is null");
  Status s = options.Validate();
  if (!s.ok()) return s;
  s = internal::CheckFitsInMemory(GeometryOf(options).total_bytes(), "DLeftOptions: geometry");
  if (!s.ok()) return s;
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl(options, internal::PermutationKeys::FromSeed(options.seed)));
  if (!impl || !impl->Allocate()) {
    return Status::MemoryLimit("DLeftCountingBloomFilter::Create",
                                        "allocation of the bit array failed");
  }
  out->reset(new DLeftCountingBloomFilter(std::move(impl)));
  return Status::OK();
}

uint64_t DLeftCountingBloomFilter::Hash(std::string_view key) const {
  return impl_->hashing_.Hash(key.data(), key.size());
}

OpResult DLeftCountingBloomFilter::InsertHash(uint64_t hash) { return impl_->Insert(hash); }
OpResult DLeftCountingBloomFilter::EraseHash(uint64_t hash) { return impl_->Erase(hash); }

bool DLeftCountingBloomFilter::ContainsHash(uint64_t hash) const {
  Impl::Probe p;
  impl_->MakeProbe(hash, &p);
  return impl_->Lookup(p, false) != 0;
}

uint32_t DLeftCountingBloomFilter::CountHash(uint64_t hash) const {
  Impl::Probe p;
  impl_->MakeProbe(hash, &p);
  return impl_->Lookup(p, true);
}

void DLeftCountingBloomFilter::ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const {
  constexpr size_t kBatch = 16;
  Impl::Probe probes[kBatch];
  for (size_t base = 0; base < n; base += kBatch) {
    size_t m = std::min(kBatch, n - base);
    for (size_t i = 0; i < m; ++i) {
      impl_->MakeProbe(hashes[base + i], &probes[i]);
      impl_->Prefetch(probes[i]);
    }
    for (size_t i = 0; i < m; ++i) out[base + i] = impl_->Lookup(probes[i], false) != 0;
  }
}

void DLeftCountingBloomFilter::Clear() { impl_->Clear(); }

DLeftStats DLeftCountingBloomFilter::Stats() const {
  auto lock = impl_->MaybeLock();
  const Impl& m = *impl_;
  const Geometry& g = m.geo_;
  DLeftStats s;
  s.items = m.items_;
  s.fingerprints = m.fingerprints_;
  s.bytes = g.total_bytes();
  s.bits_per_item = s.items ? 8.0 * static_cast<double>(s.bytes) / static_cast<double>(s.items) : 0.0;
  s.max_counter = m.max_counter_;
  s.relocations = m.relocations_;
  s.long_relocation_chains = m.long_chains_;
  s.longest_relocation_chain = m.longest_chain_;
  s.overflows = m.overflows_;
  s.saturations = m.saturations_;
  s.sticky_erases = m.sticky_erases_;
  s.predicted_fpr = m.PredictedFpr(m.fingerprints_);
  // hist[i][load] then a suffix sum gives "load >= k".
  std::vector<std::vector<uint64_t>> hist(g.subtables, std::vector<uint64_t>(g.cells + 2, 0));
  for (uint32_t i = 0; i < g.subtables; ++i) {
    for (uint64_t b = 0; b < g.buckets; ++b) {
      uint64_t base = m.BucketBit(i, b);
      uint32_t load = 0;
      for (uint32_t j = 0; j < g.cells; ++j) {
        load += m.codec_.Occupied(m.ReadCell(base + uint64_t{j} * m.cell_bits_)) ? 1 : 0;
      }
      ++hist[i][load];
    }
  }
  s.load_ge.assign(g.subtables, std::vector<double>(g.cells + 2, 0.0));
  s.load_ge_all.assign(g.cells + 2, 0.0);
  for (uint32_t i = 0; i < g.subtables; ++i) {
    uint64_t acc = 0;
    for (int k = static_cast<int>(g.cells) + 1; k >= 0; --k) {
      acc += hist[i][static_cast<size_t>(k)];
      s.load_ge[i][static_cast<size_t>(k)] = static_cast<double>(acc) / static_cast<double>(g.buckets);
      s.load_ge_all[static_cast<size_t>(k)] += s.load_ge[i][static_cast<size_t>(k)] / g.subtables;
    }
  }
  return s;
}

uint64_t DLeftCountingBloomFilter::HashOfFingerprint(uint64_t packed) const {
  return impl_->hashing_.HashOfPacked(packed);
}

DLeftCountingBloomFilter::TrueFingerprint DLeftCountingBloomFilter::FingerprintOfHash(uint64_t hash) const {
  Fingerprint f = impl_->hashing_.FingerprintOf(hash);
  return TrueFingerprint{f.bucket, f.remainder, impl_->hashing_.Pack(f)};
}

void DLeftCountingBloomFilter::ForEachFingerprint(
    const std::function<void(const TrueFingerprint&, uint32_t)>& fn) const {
  auto lock = impl_->MaybeLock();
  const Impl& m = *impl_;
  m.ForEachCell([&](uint32_t sub, uint64_t bucket, uint64_t cell) {
    if (!m.codec_.Occupied(cell)) return;
    Fingerprint f = m.hashing_.Invert(sub, Location{bucket, m.codec_.Remainder(cell)});
    fn(TrueFingerprint{f.bucket, f.remainder, m.hashing_.Pack(f)}, m.codec_.Counter(cell));
  });
}

const DLeftOptions& DLeftCountingBloomFilter::options() const { return impl_->opt_; }
uint64_t DLeftCountingBloomFilter::bytes() const { return impl_->geo_.total_bytes(); }
uint64_t DLeftCountingBloomFilter::capacity_cells() const { return impl_->geo_.total_cells(); }
uint32_t DLeftCountingBloomFilter::max_counter() const { return impl_->geo_.max_counter(); }
double DLeftCountingBloomFilter::PredictedFpr() const {
  auto lock = impl_->MaybeLock();
  return impl_->PredictedFpr(impl_->fingerprints_);
}
std::vector<uint64_t> DLeftCountingBloomFilter::permutation_keys() const {
  std::vector<uint64_t> k;
  for (uint32_t i = 0; i < impl_->geo_.subtables; ++i) {
    k.push_back(impl_->hashing_.keys().k[i][0]);
    k.push_back(impl_->hashing_.keys().k[i][1]);
  }
  return k;
}

}  // namespace dlcbf
