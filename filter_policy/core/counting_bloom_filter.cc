// Standard counting Bloom filter: packed saturating w-bit counters, k probes
// by double hashing from one XXH3 value.
//
// Design note (numbers for the dlCBF paper's §4/§5.1 baseline: m/n = 13.5
// counters per key, k = 9, w = 4):
//   - Expected FPR. Positions are distinct per key, so a counter is zero
//     with probability (1 - k/m)^n (Kleyko et al. eq. 9) and
//     FPR = (1 - (1 - k/m)^n)^k = (1 - e^{-k n/m})^k to within O(k/m):
//     (1 - e^{-9/13.5})^9 = 0.001529, exactly the paper's measured average
//     (§5.1); tools/dlcbf_vs_cbf measures 0.001521 +- 0.000019 on the same
//     churn workload.
//   - Space. w bits per counter, floor(64/w) counters per 64-bit word, so
//     m * w bits for w in {1, 2, 4, 8} and at most 64 mod w wasted bits per
//     word otherwise (w = 5: 4 of 64, 6 %). §5.1: 663,552 counters * 4 bits
//     = 2,654,208 bits for 49,152 keys (54 bits/key) vs the dlCBF's 2^20.
//   - Saturation. A counter's load is ~Poisson(λ = k n / m). At λ = 2/3 a
//     4-bit counter reaches 15 with probability 9.4e-16 per counter (6e-10
//     for all 663,552), i.e. never in practice (paper §5.1 saw 13 at most
//     over 10,000 trials); the ABF's Fig. 2 load (λ = 5) saturates 2.3e-4
//     of 4-bit counters, and Fig. 4 (λ = 50) needs w >= 7 (Pr(>= 127) =
//     6e-20; with w = 6, Pr(>= 63) = 0.042). Saturated counters
//     stick (never decremented), trading a permanent position for the
//     no-false-negative guarantee.
//   - Probes. h1 = fastrange(H, m), s = 1 + fastrange(Mix64(H ^ salt), m-1),
//     bumped to the next value coprime to m (divisibility by each prime
//     factor of m via a multiply, no division). Coprime s makes the k
//     positions distinct (k <= m), matching the ABF model's hypergeometric
//     individual filters (§3.3). Double hashing has the same asymptotic FPR
//     as k independent hashes (Kirsch & Mitzenmacher 2006).
//   - Trade-off. One cache miss per probe (k misses per lookup, early exit
//     on the first zero for negatives); ContainsBatch overlaps them.
#include "dlcbf/core/counting_bloom_filter.h"

#include "dlcbf/internal/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"

namespace dlcbf {

namespace {

constexpr uint32_t kMaxProbes = 4096;
constexpr uint64_t kMaxCounters = uint64_t{1} << 32;
constexpr uint64_t kStepSalt = 0x9AE16A3B2F90404FULL;

// Serialized format: filter_policy/FORMATS.md, "Counting Bloom filter".
constexpr uint32_t kMagic = 0x31464243;
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderSize = 60;
constexpr size_t kTrailerSize = 8;

// Modular inverse of an odd p mod 2^64 (Newton: each step doubles the
// correct low bits).
uint64_t InverseMod64(uint64_t p) {
  uint64_t x = p;  // correct to 3 bits for odd p
  for (int i = 0; i < 5; ++i) x *= 2 - p * x;
  return x;
}

}  // namespace

Status CountingBloomOptions::Validate() const {
  if (counter_bits < 1 || counter_bits > 8) {
    return Status::InvalidArgument("counter_bits (w) must be in [1, 8]");
  }
  if (num_counters < 1 || num_counters > kMaxCounters) {
    return Status::InvalidArgument("num_counters (m) must be in [1, 2^32]");
  }
  if (num_probes < 1 || num_probes > kMaxProbes) {
    return Status::InvalidArgument("num_probes (k) must be in [1, 4096]");
  }
  if (num_probes > num_counters) {
    return Status::InvalidArgument(
        "num_probes (k) must be <= num_counters (m): probe positions are distinct");
  }
  return Status::OK();
}

uint32_t OptimalNumProbes(uint64_t m, uint64_t n) {
  if (n == 0) n = 1;
  double k = std::round(static_cast<double>(m) / static_cast<double>(n) * std::log(2.0));
  if (!(k >= 1)) return 1;
  if (k > kMaxProbes) return kMaxProbes;
  return static_cast<uint32_t>(k);
}

CountingBloomFilter::CountingBloomFilter(const CountingBloomOptions& options)
    : options_(options),
      m_(options.num_counters),
      k_(options.num_probes),
      w_(options.counter_bits),
      max_((1u << options.counter_bits) - 1u),
      per_word_(64 / options.counter_bits) {
  recip_ = ~uint64_t{0} / per_word_ + 1;
  num_words_ = (m_ + per_word_ - 1) / per_word_;
  // Distinct prime factors of m, for the coprime step. A prime m needs no
  // check (every s in [1, m-1] is coprime), so it gets an empty list.
  uint64_t rest = m_;
  for (uint64_t p = 2; p * p <= rest; ++p) {
    if (rest % p == 0) {
      primes_[num_primes_++] = p;
      while (rest % p == 0) rest /= p;
    }
  }
  if (rest > 1 && rest != m_) primes_[num_primes_++] = rest;
  for (uint32_t i = 0; i < num_primes_; ++i) {
    prime_inv_[i] = primes_[i] == 2 ? 0 : InverseMod64(primes_[i]);
    prime_lim_[i] = ~uint64_t{0} / primes_[i];
  }
}

CountingBloomFilter::~CountingBloomFilter() = default;

void CountingBloomFilter::FreeWords::operator()(uint64_t* p) const { std::free(p); }

uint64_t CountingBloomFilter::Prefault(uint64_t first_byte, uint64_t max_bytes) {
  const uint64_t total = num_words_ * 8;
  if (first_byte >= total) return 0;
  const uint64_t end = std::min(total, first_byte + max_bytes);
  for (uint64_t b = first_byte; b < end; b += 4096) {
    uint64_t* w = &words_[b / 8];
    __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  }
  return end - first_byte;
}

bool CountingBloomFilter::Allocate() {
  words_.reset(static_cast<uint64_t*>(std::calloc(num_words_ + 1, sizeof(uint64_t))));
  return words_ != nullptr;
}

Status CountingBloomFilter::Create(const CountingBloomOptions& options,
                                            std::unique_ptr<CountingBloomFilter>* out) {
  if (out == nullptr) return Status::InvalidArgument("out must not be null");
  Status s = options.Validate();
  if (!s.ok()) return s;
  std::unique_ptr<CountingBloomFilter> f(new CountingBloomFilter(options));
  if (f->bytes() > options.max_bytes) {
    return Status::MemoryLimit("counter array of " + std::to_string(f->bytes()) +
                                        " bytes exceeds max_bytes");
  }
  s = internal::CheckFitsInMemory(f->bytes(), "counting Bloom filter: counter array");
  if (!s.ok()) return s;
  if (!f->Allocate()) {
    return Status::MemoryLimit("cannot allocate counter array");
  }
  *out = std::move(f);
  return Status::OK();
}

uint64_t CountingBloomFilter::Hash(std::string_view key) const {
  return internal::HashKey(key.data(), key.size(), options_.seed);
}

inline void CountingBloomFilter::Start(uint64_t hash, uint64_t* pos, uint64_t* step) const {
  *pos = internal::Mul64Hi(hash, m_);
  if (m_ == 1) {
    *step = 0;  // k == 1
    return;
  }
  uint64_t s = 1 + internal::Mul64Hi(internal::Mix64(hash ^ kStepSalt), m_ - 1);
  for (uint32_t i = 0; i < num_primes_;) {
    const bool divisible =
        primes_[i] == 2 ? (s & 1) == 0 : s * prime_inv_[i] <= prime_lim_[i];
    if (divisible) {
      s = (s + 1 == m_) ? 1 : s + 1;
      i = 0;  // re-check every factor for the new s
    } else {
      ++i;
    }
  }
  *step = s;
}

inline uint64_t CountingBloomFilter::WordOf(uint64_t pos) const {
  return internal::Mul64Hi(pos, recip_);
}

inline uint32_t CountingBloomFilter::Load(uint64_t pos) const {
  const uint64_t wi = WordOf(pos);
  const uint32_t shift = static_cast<uint32_t>(pos - wi * per_word_) * w_;
  const uint64_t word = __atomic_load_n(&words_[wi], __ATOMIC_RELAXED);
  return static_cast<uint32_t>(word >> shift) & max_;
}

OpResult CountingBloomFilter::InsertHash(uint64_t hash) {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  uint64_t pos, step;
  Start(hash, &pos, &step);
  uint64_t dropped = 0;
  for (uint32_t i = 0; i < k_; ++i) {
    const uint64_t wi = WordOf(pos);
    const uint32_t shift = static_cast<uint32_t>(pos - wi * per_word_) * w_;
    const uint64_t word = __atomic_load_n(&words_[wi], __ATOMIC_RELAXED);
    if (((word >> shift) & max_) == max_) {
      ++dropped;
    } else {
      __atomic_store_n(&words_[wi], word + (uint64_t{1} << shift), __ATOMIC_RELEASE);
    }
    pos += step;
    if (pos >= m_) pos -= m_;
  }
  if (dropped != 0) saturations_.fetch_add(dropped, std::memory_order_relaxed);
  items_.fetch_add(1, std::memory_order_relaxed);
  return OpResult::kOk;
}

OpResult CountingBloomFilter::EraseHash(uint64_t hash) {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  uint64_t start, step;
  Start(hash, &start, &step);
  uint64_t pos = start;
  for (uint32_t i = 0; i < k_; ++i) {
    if (Load(pos) == 0) return OpResult::kNotFound;
    pos += step;
    if (pos >= m_) pos -= m_;
  }
  pos = start;
  uint64_t sticky = 0;
  for (uint32_t i = 0; i < k_; ++i) {
    const uint64_t wi = WordOf(pos);
    const uint32_t shift = static_cast<uint32_t>(pos - wi * per_word_) * w_;
    const uint64_t word = __atomic_load_n(&words_[wi], __ATOMIC_RELAXED);
    if (((word >> shift) & max_) == max_) {
      ++sticky;
    } else {
      __atomic_store_n(&words_[wi], word - (uint64_t{1} << shift), __ATOMIC_RELEASE);
    }
    pos += step;
    if (pos >= m_) pos -= m_;
  }
  if (sticky != 0) sticky_erases_.fetch_add(sticky, std::memory_order_relaxed);
  if (items_.load(std::memory_order_relaxed) > 0) {
    items_.fetch_sub(1, std::memory_order_relaxed);
  }
  return OpResult::kOk;
}

bool CountingBloomFilter::ContainsHash(uint64_t hash) const {
  uint64_t pos, step;
  Start(hash, &pos, &step);
  for (uint32_t i = 0; i < k_; ++i) {
    if (Load(pos) == 0) return false;
    pos += step;
    if (pos >= m_) pos -= m_;
  }
  return true;
}

uint32_t CountingBloomFilter::CountHash(uint64_t hash) const {
  uint64_t pos, step;
  Start(hash, &pos, &step);
  uint32_t best = max_;
  for (uint32_t i = 0; i < k_ && best != 0; ++i) {
    best = std::min(best, Load(pos));
    pos += step;
    if (pos >= m_) pos -= m_;
  }
  return best;
}

uint32_t CountingBloomFilter::DotProductHash(uint64_t hash, uint32_t theta,
                                             uint32_t stop_at) const {
  uint64_t pos, step;
  Start(hash, &pos, &step);
  uint32_t d = 0;
  for (uint32_t i = 0; i < k_; ++i) {
    if (d >= stop_at) break;
    // Even all remaining probes cannot reach stop_at: the answer to
    // "d >= stop_at" is already no.
    if (stop_at != UINT32_MAX && d + (k_ - i) < stop_at) break;
    if (Load(pos) > theta) ++d;
    pos += step;
    if (pos >= m_) pos -= m_;
  }
  return d;
}

void CountingBloomFilter::Prefetch(uint64_t hash) const {
  uint64_t pos, step;
  Start(hash, &pos, &step);
  const uint32_t n = std::min<uint32_t>(k_, 8);
  for (uint32_t i = 0; i < n; ++i) {
    __builtin_prefetch(&words_[WordOf(pos)]);
    pos += step;
    if (pos >= m_) pos -= m_;
  }
}

void CountingBloomFilter::ContainsHashBatch(const uint64_t* hashes, size_t n,
                                            bool* out) const {
  constexpr size_t kBlock = 32;
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t end = std::min(n, base + kBlock);
    for (size_t i = base; i < end; ++i) Prefetch(hashes[i]);
    for (size_t i = base; i < end; ++i) out[i] = ContainsHash(hashes[i]);
  }
}

void CountingBloomFilter::Positions(uint64_t hash, uint64_t* out) const {
  uint64_t pos, step;
  Start(hash, &pos, &step);
  for (uint32_t i = 0; i < k_; ++i) {
    out[i] = pos;
    pos += step;
    if (pos >= m_) pos -= m_;
  }
}

uint32_t CountingBloomFilter::CounterAt(uint64_t pos) const {
  return pos < m_ ? Load(pos) : 0;
}

void CountingBloomFilter::Clear() {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  for (uint64_t i = 0; i < num_words_; ++i) {
    __atomic_store_n(&words_[i], uint64_t{0}, __ATOMIC_RELEASE);
  }
  items_.store(0, std::memory_order_relaxed);
  saturations_.store(0, std::memory_order_relaxed);
  sticky_erases_.store(0, std::memory_order_relaxed);
}

CountingBloomStats CountingBloomFilter::Stats() const {
  CountingBloomStats st;
  st.num_counters = m_;
  st.num_probes = k_;
  st.counter_bits = w_;
  st.bytes = bytes();
  st.items = items_.load(std::memory_order_relaxed);
  st.saturations = saturations_.load(std::memory_order_relaxed);
  st.sticky_erases = sticky_erases_.load(std::memory_order_relaxed);
  for (uint64_t wi = 0; wi < num_words_; ++wi) {
    const uint64_t word = __atomic_load_n(&words_[wi], __ATOMIC_RELAXED);
    if (word == 0) continue;
    const uint64_t first = wi * per_word_;
    const uint64_t n = std::min<uint64_t>(per_word_, m_ - first);
    for (uint64_t s = 0; s < n; ++s) {
      const uint32_t c = static_cast<uint32_t>(word >> (s * w_)) & max_;
      if (c != 0) ++st.nonzero_counters;
      if (c == max_) ++st.saturated_counters;
      st.max_counter_value = std::max(st.max_counter_value, c);
    }
  }
  const double m = static_cast<double>(m_);
  st.fill = static_cast<double>(st.nonzero_counters) / m;
  if (st.items == 0) {
    st.predicted_fpr = 0;
  } else if (k_ == m_) {
    st.predicted_fpr = 1;
  } else {
    const double p0 =
        std::exp(static_cast<double>(st.items) * std::log1p(-static_cast<double>(k_) / m));
    st.predicted_fpr = std::pow(1.0 - p0, k_);
  }
  st.fill_fpr = std::pow(st.fill, k_);
  return st;
}

void CountingBloomFilter::Serialize(std::string* out) const {
  const size_t start = out->size();
  out->reserve(start + kHeaderSize + 8 * num_words_ + kTrailerSize);
  internal::PutFixed32(out, kMagic);
  internal::PutFixed8(out, kVersion);
  internal::PutFixed8(out, static_cast<uint8_t>(w_));
  internal::PutFixed16(out, 0);
  internal::PutFixed32(out, k_);
  internal::PutFixed64(out, m_);
  internal::PutFixed64(out, options_.seed);
  internal::PutFixed64(out, items_.load(std::memory_order_relaxed));
  internal::PutFixed64(out, saturations_.load(std::memory_order_relaxed));
  internal::PutFixed64(out, sticky_erases_.load(std::memory_order_relaxed));
  internal::PutFixed64(out, num_words_);
  for (uint64_t i = 0; i < num_words_; ++i) {
    internal::PutFixed64(out, __atomic_load_n(&words_[i], __ATOMIC_RELAXED));
  }
  internal::PutFixed64(out, internal::HashKey(out->data() + start, out->size() - start, 0));
}

Status CountingBloomFilter::Deserialize(std::string_view data, std::unique_ptr<CountingBloomFilter>* out,
                            const DeserializeOptions& options) {
  const bool thread_safe = options.thread_safe;
  if (out == nullptr) return Status::InvalidArgument("out must not be null");
  internal::Decoder dec(data.data(), data.size());
  uint32_t magic = 0, k = 0;
  uint8_t version = 0, w = 0;
  uint16_t reserved = 0;
  uint64_t m = 0, seed = 0, items = 0, sats = 0, sticky = 0, num_words = 0;
  if (!dec.Get32(&magic) || !dec.Get8(&version) || !dec.Get8(&w) || !dec.Get16(&reserved) ||
      !dec.Get32(&k) || !dec.Get64(&m) || !dec.Get64(&seed) || !dec.Get64(&items) ||
      !dec.Get64(&sats) || !dec.Get64(&sticky) || !dec.Get64(&num_words)) {
    return Status::Corruption("counting Bloom filter: truncated header");
  }
  if (magic != kMagic) return Status::Corruption("counting Bloom filter: bad magic");
  if (version != kVersion) {
    return Status::Corruption("counting Bloom filter: unsupported version " +
                              std::to_string(version));
  }
  if (reserved != 0) return Status::Corruption("counting Bloom filter: nonzero reserved field");
  CountingBloomOptions opt;
  opt.counter_bits = w;
  opt.num_probes = k;
  opt.num_counters = m;
  opt.seed = seed;
  opt.thread_safe = thread_safe;
  opt.max_bytes = ~uint64_t{0};  // bounded below by the input size instead
  Status s = opt.Validate();
  if (!s.ok()) return Status::Corruption("counting Bloom filter: " + s.ToString());
  std::unique_ptr<CountingBloomFilter> f(new CountingBloomFilter(opt));
  if (num_words != f->num_words_) {
    return Status::Corruption("counting Bloom filter: word count does not match m and w");
  }
  if (dec.remaining() / 8 < num_words ||
      dec.remaining() - 8 * num_words != kTrailerSize) {
    return Status::Corruption("counting Bloom filter: payload size does not match header");
  }
  const uint64_t expected =
      internal::HashKey(data.data(), data.size() - kTrailerSize, 0);
  if (internal::DecodeFixed64(data.data() + data.size() - kTrailerSize) != expected) {
    return Status::Corruption("counting Bloom filter: checksum mismatch");
  }
  if (!f->Allocate()) return Status::MemoryLimit("cannot allocate counter array");
  const uint32_t used_bits = f->per_word_ * f->w_;
  const uint64_t full_mask = used_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << used_bits) - 1;
  for (uint64_t i = 0; i < num_words; ++i) {
    uint64_t word = 0;
    dec.Get64(&word);
    uint64_t valid = full_mask;
    if (i + 1 == num_words) {
      const uint64_t in_last = m - i * f->per_word_;
      const uint32_t bits = static_cast<uint32_t>(in_last) * f->w_;
      valid = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    }
    if ((word & ~valid) != 0) {
      return Status::Corruption("counting Bloom filter: nonzero padding bits in word " +
                                std::to_string(i));
    }
    f->words_[i] = word;
  }
  f->items_.store(items, std::memory_order_relaxed);
  f->saturations_.store(sats, std::memory_order_relaxed);
  f->sticky_erases_.store(sticky, std::memory_order_relaxed);
  *out = std::move(f);
  return Status::OK();
}

}  // namespace dlcbf
