// Core filter benchmark (Google Benchmark). Not a test: timing lives here.
//
// Each benchmark reports ns/op (Google Benchmark's "Time" column) and the
// counters bits_per_key, fpr (measured), fpr_pred (the structure's model)
// and fpr_opt (2^-bits_per_key, the information-theoretic optimum at that
// space). Sizes:
//   in_cache   ~1 MiB filter (fits in L2/L3)
//   out_cache  256 MiB filter (every probe misses the caches)
// BM_PointerChase measures one dependent random DRAM access over 256 MiB in
// the same run: the yardstick for "single Contains within 1.5x of one DRAM
// access" and "batched Contains at <= 0.5x of single".
//
// Filters (the /filter argument): 0 dlcbf (paper §5.1 cells, load 0.75),
// 1 dlcbf95 (same cells, load 0.95 via breadth-first relocation), 2 cbf
// (4-bit counting Bloom filter sized for dlcbf's FPR: the paper's §4-5
// baseline), 3 abf (the same CBF read through AutoTune(1.0): lossless),
// 4 elastic (ElasticFilter before migration), 5 elastic_migrated (after
// migration, at 2x its sizing). Before the benchmarks an EQUALFPR table
// gives bits/key at equal FPR, dlCBF vs CBF (paper ratio >= 2.5).
//
// Run: build/bench/filter_bench [--benchmark_filter=...]
//      DLCBF_BENCH_BIG_MIB=64 shrinks the out-of-cache size for quick runs.
#include <benchmark/benchmark.h>

#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dlcbf/core/autoscaling_bloom_filter.h"
#include "dlcbf/core/counting_bloom_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/elastic_filter.h"
#include "dlcbf/internal/hash.h"

#include <sys/mman.h>

namespace {

using dlcbf::DLeftCountingBloomFilter;
using dlcbf::DLeftOptions;
using dlcbf::OpResult;

uint64_t BigBytes() {
  const char* e = std::getenv("DLCBF_BENCH_BIG_MIB");
  uint64_t mib = e ? std::strtoull(e, nullptr, 10) : 256;
  return (mib ? mib : 256) << 20;
}

// Key i as an 8-byte little-endian string; absent keys use i >= n.
struct KeyBuf {
  char b[8];
  std::string_view Make(uint64_t i) {
    for (int j = 0; j < 8; ++j) b[j] = static_cast<char>(i >> (8 * j));
    return std::string_view(b, 8);
  }
};

struct Fast {  // xorshift64*: cheap random indices inside timed loops
  uint64_t s;
  uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
};

// One interface over every filter type, so each benchmark body is shared.
struct AnyFilter {
  virtual ~AnyFilter() = default;
  virtual bool Contains(const std::string_view& k) const = 0;
  virtual void ContainsBatch(const std::string_view* k, size_t n, bool* out) const = 0;
  virtual OpResult Insert(const std::string_view& k) = 0;
  virtual OpResult Erase(const std::string_view& k) = 0;
  virtual uint64_t Bytes() const = 0;
  virtual double Predicted() const = 0;
};

template <class F>
struct Wrap : AnyFilter {
  std::unique_ptr<F> f;
  std::function<double(const F&)> pred;
  std::function<uint64_t(const F&)> bytes;
  bool Contains(const std::string_view& k) const override { return f->Contains(k); }
  void ContainsBatch(const std::string_view* k, size_t n, bool* out) const override {
    f->ContainsBatch(k, n, out);
  }
  OpResult Insert(const std::string_view& k) override { return f->Insert(k); }
  OpResult Erase(const std::string_view& k) override { return f->Erase(k); }
  uint64_t Bytes() const override { return bytes(*f); }
  double Predicted() const override { return pred(*f); }
};

void Die(const dlcbf::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

// The paper's cell format (d = 4, L = 8, r = 14, c = 2) with B chosen for
// `bytes`.
DLeftOptions PaperCells(uint64_t bytes) {
  DLeftOptions o;
  o.buckets_per_subtable = std::max<uint64_t>(1, bytes * 8 / (4 * 8 * (14 + 2)));
  return o;
}

// A 4-bit CBF with the optimal integer k for `counters_per_key`.
dlcbf::CountingBloomOptions CbfFor(uint64_t n, double counters_per_key) {
  dlcbf::CountingBloomOptions o;
  o.num_counters = static_cast<uint64_t>(std::ceil(counters_per_key * static_cast<double>(n)));
  o.num_probes = std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(counters_per_key * std::log(2.0))));
  o.counter_bits = 4;
  return o;
}
double CbfPredicted(double counters_per_key) {
  double k = std::max(1.0, std::round(counters_per_key * std::log(2.0)));
  return std::pow(1.0 - std::exp(-k / counters_per_key), k);
}
// Smallest counters/key (0.05 steps) whose predicted FPR is <= target.
double CbfCountersFor(double target) {
  double c = 1.0;
  while (CbfPredicted(c) > target && c < 200) c += 0.05;
  return c;
}

struct Loaded {
  std::unique_ptr<AnyFilter> f;
  uint64_t n = 0;
  double fpr = 0, fpr_pred = 0, bits_per_key = 0;
};

const char* const kNames[] = {"dlcbf", "dlcbf95", "cbf", "abf", "elastic", "elastic_migrated"};

double MeasureFpr(const AnyFilter& f, uint64_t n, uint64_t probes = 1000000) {
  KeyBuf kb;
  uint64_t fp = 0;
  for (uint64_t i = 0; i < probes; ++i) fp += f.Contains(kb.Make(n + 1 + i));
  return static_cast<double>(fp) / static_cast<double>(probes);
}

// Builds filter `type` of about `bytes` bytes holding its benchmark load.
std::unique_ptr<Loaded> Build(int type, uint64_t bytes) {
  auto l = std::make_unique<Loaded>();
  auto fill = [&](AnyFilter* f, uint64_t n) {
    KeyBuf kb;
    for (uint64_t i = 0; i < n; ++i) {
      if (f->Insert(kb.Make(i)) != OpResult::kOk) {
        std::fprintf(stderr, "%s: unexpected overflow at %llu\n", kNames[type],
                     static_cast<unsigned long long>(i));
        std::exit(1);
      }
    }
  };
  const double paper_fpr = 24.0 / 16383.0;  // dlcbf at load 0.75
  switch (type) {
    case 0:
    case 1: {
      DLeftOptions o = PaperCells(bytes);
      if (type == 1) o.max_relocation_nodes = 1024;
      auto w = std::make_unique<Wrap<DLeftCountingBloomFilter>>();
      Die(DLeftCountingBloomFilter::Create(o, &w->f), "dlcbf");
      w->pred = [](const DLeftCountingBloomFilter& f) { return f.PredictedFpr(); };
      w->bytes = [](const DLeftCountingBloomFilter& f) { return f.bytes(); };
      l->n = w->f->capacity_cells() * (type == 1 ? 95 : 75) / 100;
      l->f = std::move(w);
      break;
    }
    case 2:
    case 3: {
      const double cpk = CbfCountersFor(paper_fpr);
      l->n = static_cast<uint64_t>(static_cast<double>(bytes) * 2 / cpk);  // 2 counters per byte
      if (type == 2) {
        auto w = std::make_unique<Wrap<dlcbf::CountingBloomFilter>>();
        Die(dlcbf::CountingBloomFilter::Create(CbfFor(l->n, cpk), &w->f), "cbf");
        w->pred = [cpk](const dlcbf::CountingBloomFilter&) { return CbfPredicted(cpk); };
        w->bytes = [](const dlcbf::CountingBloomFilter& f) { return f.bytes(); };
        l->f = std::move(w);
      } else {
        dlcbf::AutoscalingOptions ao;
        ao.counting = CbfFor(l->n, cpk);
        auto w = std::make_unique<Wrap<dlcbf::AutoscalingBloomFilter>>();
        Die(dlcbf::AutoscalingBloomFilter::Create(ao, &w->f), "abf");
        w->pred = [cpk](const dlcbf::AutoscalingBloomFilter&) { return CbfPredicted(cpk); };
        w->bytes = [](const dlcbf::AutoscalingBloomFilter& f) { return f.counting().bytes(); };
        l->f = std::move(w);
      }
      break;
    }
    default: {  // elastic, before (4) or after (5) migration
      dlcbf::ElasticOptions eo;
      eo.kernel = dlcbf::ElasticKernel::kGeneral;  // the paper's cells, like filter 0
      eo.dleft = PaperCells(bytes);
      auto w = std::make_unique<Wrap<dlcbf::ElasticFilter>>();
      Die(dlcbf::ElasticFilter::Create(eo, &w->f), "elastic");
      w->pred = [](const dlcbf::ElasticFilter& f) { return f.Stats().predicted_fpr; };
      w->bytes = [](const dlcbf::ElasticFilter& f) { return f.Stats().bytes; };
      const uint64_t sized = 4 * eo.dleft.buckets_per_subtable * 8 * 3 / 4;
      l->n = type == 4 ? sized : 2 * sized;
      l->f = std::move(w);
      break;
    }
  }
  std::fprintf(stderr, "[setup] %s: %.1f MiB, %llu keys...\n", kNames[type],
               static_cast<double>(l->f->Bytes()) / (1 << 20), static_cast<unsigned long long>(l->n));
  fill(l->f.get(), l->n);
  l->fpr = MeasureFpr(*l->f, l->n);
  l->fpr_pred = l->f->Predicted();
  l->bits_per_key = 8.0 * static_cast<double>(l->f->Bytes()) / static_cast<double>(l->n);
  return l;
}

uint64_t SizeArg(const benchmark::State& st) { return st.range(1) ? BigBytes() : (1u << 20); }

Loaded* GetFilter(const benchmark::State& st) {
  static std::unique_ptr<Loaded> cache[6][2];
  const int type = static_cast<int>(st.range(0));
  const int big = st.range(1) ? 1 : 0;
  auto& slot = cache[type][big];
  if (!slot) {
    for (auto& other : cache) other[big ^ 1].reset();  // keep one large table at a time
    slot = Build(type, SizeArg(st));
  }
  return slot.get();
}

void Report(benchmark::State& st, const Loaded& l) {
  st.SetLabel(kNames[st.range(0)]);
  st.counters["bits_per_key"] = l.bits_per_key;
  st.counters["fpr"] = l.fpr;
  st.counters["fpr_pred"] = l.fpr_pred;
  st.counters["fpr_opt"] = std::exp2(-l.bits_per_key);
}

void BM_ContainsPositive(benchmark::State& st) {
  Loaded* l = GetFilter(st);
  KeyBuf kb;
  Fast r{88172645463325252ULL};
  uint64_t hits = 0;
  for (auto _ : st) hits += l->f->Contains(kb.Make(r.Next() % l->n));
  if (hits != static_cast<uint64_t>(st.iterations())) st.SkipWithError("false negative!");
  Report(st, *l);
}

void BM_ContainsNegative(benchmark::State& st) {
  Loaded* l = GetFilter(st);
  KeyBuf kb;
  Fast r{88172645463325252ULL};
  uint64_t hits = 0;
  for (auto _ : st) hits += l->f->Contains(kb.Make(l->n + 1 + r.Next() % (uint64_t{1} << 40)));
  benchmark::DoNotOptimize(hits);
  Report(st, *l);
}

// Batched lookups, 64 keys per call (half present, half absent); time per key.
void BM_ContainsBatch(benchmark::State& st) {
  Loaded* l = GetFilter(st);
  constexpr size_t kBatch = 64;
  std::vector<std::string> store(kBatch, std::string(8, '\0'));
  std::string_view keys[kBatch];
  bool out[kBatch];
  Fast r{88172645463325252ULL};
  KeyBuf kb;
  for (auto _ : st) {
    for (size_t i = 0; i < kBatch; ++i) {
      uint64_t k = (i & 1) ? l->n + 1 + r.Next() % (uint64_t{1} << 40) : r.Next() % l->n;
      std::string_view s = kb.Make(k);
      store[i].assign(s.data(), s.size());
      keys[i] = std::string_view(store[i]);
    }
    l->f->ContainsBatch(keys, kBatch, out);
    benchmark::DoNotOptimize(out);
  }
  st.SetItemsProcessed(st.iterations() * kBatch);
  st.counters["ns_per_key"] = benchmark::Counter(
      static_cast<double>(st.iterations() * kBatch), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  Report(st, *l);
}

// Same key generation as BM_ContainsBatch but one Contains per key, so the
// two ns_per_key figures compare directly.
void BM_ContainsSingleLoop(benchmark::State& st) {
  Loaded* l = GetFilter(st);
  constexpr size_t kBatch = 64;
  Fast r{88172645463325252ULL};
  KeyBuf kb;
  uint64_t hits = 0;
  for (auto _ : st) {
    for (size_t i = 0; i < kBatch; ++i) {
      uint64_t k = (i & 1) ? l->n + 1 + r.Next() % (uint64_t{1} << 40) : r.Next() % l->n;
      hits += l->f->Contains(kb.Make(k));
    }
  }
  benchmark::DoNotOptimize(hits);
  st.counters["ns_per_key"] = benchmark::Counter(
      static_cast<double>(st.iterations() * kBatch), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  Report(st, *l);
}

// Insert then erase blocks of fresh keys at the benchmark load (0.75), so
// the table stays at its steady state. Timed separately.
constexpr uint64_t kBlock = 4096;
void BM_Insert(benchmark::State& st) {
  Loaded* l = GetFilter(st);
  KeyBuf kb;
  uint64_t base = uint64_t{1} << 50;
  for (auto _ : st) {
    for (uint64_t i = 0; i < kBlock; ++i) benchmark::DoNotOptimize(l->f->Insert(kb.Make(base + i)));
    st.PauseTiming();
    for (uint64_t i = 0; i < kBlock; ++i) (void)l->f->Erase(kb.Make(base + i));  // result not needed here
    base += kBlock;
    st.ResumeTiming();
  }
  st.counters["ns_per_key"] = benchmark::Counter(
      static_cast<double>(st.iterations() * kBlock), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  Report(st, *l);
}

void BM_Erase(benchmark::State& st) {
  Loaded* l = GetFilter(st);
  KeyBuf kb;
  uint64_t base = uint64_t{1} << 51;
  for (auto _ : st) {
    st.PauseTiming();
    for (uint64_t i = 0; i < kBlock; ++i) (void)l->f->Insert(kb.Make(base + i));  // result not needed here
    st.ResumeTiming();
    for (uint64_t i = 0; i < kBlock; ++i) benchmark::DoNotOptimize(l->f->Erase(kb.Make(base + i)));
    base += kBlock;
  }
  st.counters["ns_per_key"] = benchmark::Counter(
      static_cast<double>(st.iterations() * kBlock), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  Report(st, *l);
}

// One dependent random access per step over a BigBytes() array (Sattolo
// cycle): the cost of a DRAM miss (plus TLB miss) on this machine.
void BM_PointerChase(benchmark::State& st) {
  // Same paging as the filter (2 MiB-aligned, transparent huge pages
  // advised), so the baseline is a DRAM access, not a DRAM access plus a
  // page walk the filter does not pay. st.range(0) == 0 uses 4 KiB pages.
  static uint64_t* tables[2] = {nullptr, nullptr};
  const uint64_t n = BigBytes() / sizeof(uint64_t);
  uint64_t*& next = tables[st.range(0)];
  if (!next) {
    void* mem = nullptr;
    if (posix_memalign(&mem, size_t{2} << 20, n * sizeof(uint64_t)) != 0) std::abort();
    if (st.range(0)) madvise(mem, n * sizeof(uint64_t), MADV_HUGEPAGE);
    else madvise(mem, n * sizeof(uint64_t), MADV_NOHUGEPAGE);
    next = static_cast<uint64_t*>(mem);
    std::iota(next, next + n, 0);
    std::mt19937_64 rng(1);
    for (uint64_t i = n - 1; i > 0; --i) std::swap(next[i], next[rng() % i]);
  }
  uint64_t p = 0;
  for (auto _ : st) {
    p = next[p];
    benchmark::DoNotOptimize(p);
  }
}

BENCHMARK(BM_PointerChase)->ArgName("hugepages")->Arg(0)->Arg(1);
// Args: {filter, out_of_cache}. Out of cache: the two dlCBFs and the CBF
// (the baseline at equal FPR); the rest in cache only.
void Configs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"filter", "out_cache"});
  for (int t = 0; t < 6; ++t) b->Args({t, 0});
  for (int t : {0, 1, 2}) b->Args({t, 1});
}
BENCHMARK(BM_ContainsPositive)->Apply(Configs);
BENCHMARK(BM_ContainsNegative)->Apply(Configs);
BENCHMARK(BM_ContainsSingleLoop)->Apply(Configs);
BENCHMARK(BM_ContainsBatch)->Apply(Configs);
BENCHMARK(BM_Insert)->Apply(Configs);
BENCHMARK(BM_Erase)->Apply(Configs);

// Bits per key at equal FPR, dlCBF vs a 4-bit CBF, measured (paper §4-5:
// the dlCBF needs < 1/2.5 of the space; goal >= 3 with relocation).
void PrintEqualFpr() {
  for (int type : {0, 1}) {
    auto d = Build(type, 1u << 20);
    const double cpk = CbfCountersFor(d->fpr);
    auto c = std::make_unique<Wrap<dlcbf::CountingBloomFilter>>();
    Die(dlcbf::CountingBloomFilter::Create(CbfFor(d->n, cpk), &c->f), "cbf");
    KeyBuf kb;
    for (uint64_t i = 0; i < d->n; ++i) (void)c->f->Insert(kb.Make(i));  // result not needed here
    const double cfpr = MeasureFpr(*c, d->n);
    const double cbits = 8.0 * static_cast<double>(c->f->bytes()) / static_cast<double>(d->n);
    std::printf("EQUALFPR %-8s bits/key=%6.2f fpr=%.5f pred=%.5f | cbf k=%u bits/key=%6.2f fpr=%.5f pred=%.5f | cbf/dlcbf space=%.2fx\n",
                kNames[type], d->bits_per_key, d->fpr, d->fpr_pred,
                CbfFor(d->n, cpk).num_probes, cbits, cfpr, CbfPredicted(cpk), cbits / d->bits_per_key);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
#ifndef NDEBUG
  std::fprintf(stderr, "WARNING: assertions are enabled (no NDEBUG): timings are not representative\n");
#endif
#if !defined(__OPTIMIZE__)
  std::fprintf(stderr, "WARNING: built without optimization: timings are not representative\n");
#endif
  benchmark::Initialize(&argc, argv);
  if (std::getenv("DLCBF_BENCH_SKIP_EQUALFPR") == nullptr) PrintEqualFpr();
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
