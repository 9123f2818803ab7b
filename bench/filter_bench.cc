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
// Run: build/bench/filter_bench [--benchmark_filter=...]
//      DLCBF_BENCH_BIG_MIB=64 shrinks the out-of-cache size for quick runs.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dlcbf/dleft_counting_bloom_filter.h"
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
  rocksdb::Slice Make(uint64_t i) {
    for (int j = 0; j < 8; ++j) b[j] = static_cast<char>(i >> (8 * j));
    return rocksdb::Slice(b, 8);
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

// The paper's cell format (r = 14, c = 2, d = 4, L = 8, load 0.75) scaled to
// `bytes`.
struct Loaded {
  std::unique_ptr<DLeftCountingBloomFilter> f;
  uint64_t n = 0;
  double fpr = 0, fpr_pred = 0, bits_per_key = 0;
};

Loaded* GetFilter(uint64_t bytes) {
  static std::unique_ptr<Loaded> small, big;
  std::unique_ptr<Loaded>& slot = bytes <= (8u << 20) ? small : big;
  if (slot) return slot.get();
  slot.reset(new Loaded);
  DLeftOptions o;
  const uint64_t bucket_bits = 8 * (14 + 2);
  o.buckets_per_subtable = bytes * 8 / (4 * bucket_bits);
  auto s = DLeftCountingBloomFilter::Create(o, &slot->f);
  if (!s.ok()) {
    std::fprintf(stderr, "create failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  slot->n = slot->f->capacity_cells() * 3 / 4;
  std::fprintf(stderr, "[setup] filling %.1f MiB dlCBF with %llu keys...\n",
               static_cast<double>(slot->f->bytes()) / (1 << 20),
               static_cast<unsigned long long>(slot->n));
  KeyBuf kb;
  for (uint64_t i = 0; i < slot->n; ++i) {
    if (slot->f->Insert(kb.Make(i)) != OpResult::kOk) {
      std::fprintf(stderr, "unexpected overflow at %llu\n", static_cast<unsigned long long>(i));
      std::exit(1);
    }
  }
  uint64_t fp = 0;
  const uint64_t probes = 1000000;
  for (uint64_t i = 0; i < probes; ++i) fp += slot->f->Contains(kb.Make(slot->n + 1 + i));
  slot->fpr = static_cast<double>(fp) / probes;
  slot->fpr_pred = slot->f->PredictedFpr();
  slot->bits_per_key = 8.0 * static_cast<double>(slot->f->bytes()) / static_cast<double>(slot->n);
  return slot.get();
}

void Report(benchmark::State& st, const Loaded& l) {
  st.counters["bits_per_key"] = l.bits_per_key;
  st.counters["fpr"] = l.fpr;
  st.counters["fpr_pred"] = l.fpr_pred;
  st.counters["fpr_opt"] = std::exp2(-l.bits_per_key);
}

uint64_t SizeArg(const benchmark::State& st) { return st.range(0) ? BigBytes() : (1u << 20); }

void BM_ContainsPositive(benchmark::State& st) {
  Loaded* l = GetFilter(SizeArg(st));
  KeyBuf kb;
  Fast r{88172645463325252ULL};
  uint64_t hits = 0;
  for (auto _ : st) hits += l->f->Contains(kb.Make(r.Next() % l->n));
  if (hits != static_cast<uint64_t>(st.iterations())) st.SkipWithError("false negative!");
  Report(st, *l);
}

void BM_ContainsNegative(benchmark::State& st) {
  Loaded* l = GetFilter(SizeArg(st));
  KeyBuf kb;
  Fast r{88172645463325252ULL};
  uint64_t hits = 0;
  for (auto _ : st) hits += l->f->Contains(kb.Make(l->n + 1 + r.Next() % (uint64_t{1} << 40)));
  benchmark::DoNotOptimize(hits);
  Report(st, *l);
}

// Batched lookups, 64 keys per call (half present, half absent); time per key.
void BM_ContainsBatch(benchmark::State& st) {
  Loaded* l = GetFilter(SizeArg(st));
  constexpr size_t kBatch = 64;
  std::vector<std::string> store(kBatch, std::string(8, '\0'));
  rocksdb::Slice keys[kBatch];
  bool out[kBatch];
  Fast r{88172645463325252ULL};
  KeyBuf kb;
  for (auto _ : st) {
    for (size_t i = 0; i < kBatch; ++i) {
      uint64_t k = (i & 1) ? l->n + 1 + r.Next() % (uint64_t{1} << 40) : r.Next() % l->n;
      rocksdb::Slice s = kb.Make(k);
      store[i].assign(s.data(), s.size());
      keys[i] = rocksdb::Slice(store[i]);
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
  Loaded* l = GetFilter(SizeArg(st));
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
  Loaded* l = GetFilter(SizeArg(st));
  KeyBuf kb;
  uint64_t base = uint64_t{1} << 50;
  for (auto _ : st) {
    for (uint64_t i = 0; i < kBlock; ++i) benchmark::DoNotOptimize(l->f->Insert(kb.Make(base + i)));
    st.PauseTiming();
    for (uint64_t i = 0; i < kBlock; ++i) l->f->Erase(kb.Make(base + i));
    base += kBlock;
    st.ResumeTiming();
  }
  st.counters["ns_per_key"] = benchmark::Counter(
      static_cast<double>(st.iterations() * kBlock), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  Report(st, *l);
}

void BM_Erase(benchmark::State& st) {
  Loaded* l = GetFilter(SizeArg(st));
  KeyBuf kb;
  uint64_t base = uint64_t{1} << 51;
  for (auto _ : st) {
    st.PauseTiming();
    for (uint64_t i = 0; i < kBlock; ++i) l->f->Insert(kb.Make(base + i));
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
#define SIZES ->ArgName("out_cache")->Arg(0)->Arg(1)
BENCHMARK(BM_ContainsPositive) SIZES;
BENCHMARK(BM_ContainsNegative) SIZES;
BENCHMARK(BM_ContainsSingleLoop) SIZES;
BENCHMARK(BM_ContainsBatch) SIZES;
BENCHMARK(BM_Insert) SIZES;
BENCHMARK(BM_Erase) SIZES;

}  // namespace

int main(int argc, char** argv) {
#ifndef NDEBUG
  std::fprintf(stderr, "WARNING: assertions are enabled (no NDEBUG): timings are not representative\n");
#endif
#if !defined(__OPTIMIZE__)
  std::fprintf(stderr, "WARNING: built without optimization: timings are not representative\n");
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
