// peer_bench: our dlCBFs beside the filters users would pick instead, in ONE
// process, interleaved, median of 3 rounds.
//
// Filters (each "configuration" prints one line per key count):
//   dlcbf-paper      DLeftCountingBloomFilter, paper geometry d4 L8 r14 c2
//                    at load 0.75 (the general class, unchanged)
//   fast-d2/d4@load  FastDLeftFilter (cache-line-local kernel), D = 2 or 4
//   dense-r8/r16     DenseDLeftFilter (variable-occupancy buckets), remainder
//                    class 8 or 16 bits, d = 2, at its MaxLoad
//   rocksdb-bloom:x  RocksDB FastLocalBloom, x bits/key   } through the same
//   rocksdb-ribbon:x RocksDB Ribbon, x bits/key            } adapter as
//                                                          } sst_filter_bench
//   cuckoo-12        efficient/cuckoofilter, 12-bit tags, its own sizing
//                    (only with -DDLCBF_CUCKOO_DIR=<checkout>)
//   vqf-8            splatlab/vqf, 8-bit tags (only with -DDLCBF_VQF_DIR=...)
//
// Keys are distinct uniform random 64-bit values. The dlCBFs and the VQF
// take the key as its hash (no hashing cost); the cuckoo filter applies its
// own multiply-shift hash; RocksDB's filters get the 8 key bytes as a Slice
// and hash them with XXH3 (their only interface). Per configuration and
// round: build a fresh filter by inserting all n keys (insert ns/op; for
// Bloom/Ribbon: AddKey + Finish per key), query present keys (hit), absent
// keys one at a time (miss) and in batches of 32 (batched-miss; "-" where
// the filter has no batch call), then erase every key (delete; "-" for
// static filters). Rounds run every configuration in turn; each figure is
// the median over the rounds. FPR is measured on the absent keys.
//
// One output line per configuration:
//   PEER n=<keys> name=<config> bits/key=<> fpr=<measured %> pred=<ours %>
//     insert=<ns> hit=<ns> miss=<ns> delete=<ns> batch_miss=<ns> lines/neg=<>
//     lines/hit=<>
// lines/neg, lines/hit: cache lines a query of an absent / a present key
// reads up to its first match (the fast and dense kernels: measured per
// query with LinesForHash; the general dlCBF: d for a negative, by
// construction). A dense kernel's lines/hit - 1 is the share of hits its
// first block cannot answer, where the probe waits for the second line
// and its branch on the first block's answer is a coin flip.
//
// Usage: peer_bench [--n=100000,10000000] [--rounds=3] [--queries=2000000]
//                   [--only=dense,cuckoo,vqf]  (configurations whose names
//                                               start with one of these)
//                   [--plot_dir=DIR]  (writes DIR/peer_bench.dat and .gp;
//                                      runs gnuplot when installed)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tools/bench/bench_banner.h"
#include "tools/bench/builtin_filter_adapter.h"
#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/version.h"

#ifdef DLCBF_HAVE_CUCKOO
#include "cuckoofilter.h"
#endif
#ifdef DLCBF_HAVE_VQF
#include "vqf_filter.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;
volatile uint64_t g_sink = 0;

double NsPerOp(Clock::time_point a, Clock::time_point b, size_t n) {
  return std::chrono::duration<double, std::nano>(b - a).count() / static_cast<double>(n ? n : 1);
}

// One filter under test. Each method runs a whole timed loop, so the loop
// is compiled per filter (no virtual call per operation).
class Peer {
 public:
  virtual ~Peer() = default;
  virtual std::string Name() const = 0;
  // Creates an empty filter sized for n keys, then inserts them; returns the
  // insert time in ns/op, or a negative value if an insert failed.
  virtual double Insert(const uint64_t* keys, size_t n) = 0;
  // Positives among keys[0..n) and the ns/op.
  virtual double Query(const uint64_t* keys, size_t n, uint64_t* positives) = 0;
  // Batched queries in groups of 32; negative if unsupported.
  virtual double QueryBatch(const uint64_t*, size_t, uint64_t*) { return -1; }
  // Erases keys[0..n); negative if unsupported (or an erase failed).
  virtual double Erase(const uint64_t*, size_t) { return -1; }
  virtual size_t Bytes() const = 0;
  virtual double PredictedFpr() const { return -1; }
  // Mean cache lines a query of keys[0..n) reads (present: they were
  // inserted); negative if not known.
  virtual double Lines(const uint64_t*, size_t, bool /*present*/) const { return -1; }
};

// ---- ours ----------------------------------------------------------------------
// The dlCBF kernels share one API shape, so one adapter times them all:
// Make() creates the filter for n keys; the loops are compiled per kernel.
template <class Filter>
class KernelPeer : public Peer {
 public:
  double Insert(const uint64_t* k, size_t n) override {
    f_.reset();
    if (!Make(n)) return -1;
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      if (f_->InsertHash(k[i]) != dlcbf::OpResult::kOk) return -1;
    }
    return NsPerOp(t0, Clock::now(), n);
  }
  double Query(const uint64_t* k, size_t n, uint64_t* pos) override {
    uint64_t p = 0;
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) p += f_->ContainsHash(k[i]);
    auto t1 = Clock::now();
    *pos = p;
    return NsPerOp(t0, t1, n);
  }
  double QueryBatch(const uint64_t* k, size_t n, uint64_t* pos) override {
    bool out[32];
    uint64_t p = 0;
    auto t0 = Clock::now();
    for (size_t b = 0; b + 32 <= n; b += 32) {
      f_->ContainsHashBatch(k + b, 32, out);
      for (bool x : out) p += x;
    }
    auto t1 = Clock::now();
    *pos = p;
    return NsPerOp(t0, t1, n / 32 * 32);
  }
  double Erase(const uint64_t* k, size_t n) override {
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      if (f_->EraseHash(k[i]) != dlcbf::OpResult::kOk) return -1;
    }
    return NsPerOp(t0, Clock::now(), n);
  }
  size_t Bytes() const override { return f_->bytes(); }
  double PredictedFpr() const override { return f_->PredictedFpr(); }

 protected:
  // Creates f_ sized for n keys; false on error.
  virtual bool Make(size_t n) = 0;
  std::unique_ptr<Filter> f_;
};

class OldDLeft : public KernelPeer<dlcbf::DLeftCountingBloomFilter> {
 public:
  std::string Name() const override { return "dlcbf-paper(d4L8r14c2@.75)"; }
  double Lines(const uint64_t*, size_t, bool present) const override {
    return present ? -1.0 : static_cast<double>(f_->options().subtables);
  }

 private:
  bool Make(size_t n) override {
    dlcbf::DLeftOptions o;
    return dlcbf::DLeftOptions::ForLoad(n, 0.75, &o).ok() && dlcbf::DLeftCountingBloomFilter::Create(o, &f_).ok();
  }
};

// Lines a query reads, measured per query (LinesForHash).
template <class Filter>
double MeasuredLines(const Filter& f, const uint64_t* k, size_t n) {
  uint64_t lines = 0;
  for (size_t i = 0; i < n; ++i) lines += f.LinesForHash(k[i]);
  return static_cast<double>(lines) / static_cast<double>(n);
}

class Fast : public KernelPeer<dlcbf::FastDLeftFilter> {
 public:
  Fast(uint32_t d, double load) : d_(d), load_(load) {}
  std::string Name() const override {
    char b[64];
    std::snprintf(b, sizeof(b), "fast-d%u@%.2f", d_, load_);
    return b;
  }
  double Lines(const uint64_t* k, size_t n, bool) const override { return MeasuredLines(*f_, k, n); }

 private:
  bool Make(size_t n) override {
    dlcbf::FastDLeftOptions o;
    o.subtables = d_;
    return dlcbf::FastDLeftOptions::ForLoad(n, load_, &o).ok() && dlcbf::FastDLeftFilter::Create(o, &f_).ok();
  }
  uint32_t d_;
  double load_;
};

// The dense kernel: remainder class r (8 or 16), d = 2, at `load`; `path`
// caps its kernel instances (DLCBF_DENSE_SIMD while it is created; "" =
// the CPU's widest). The name carries the path it runs. ContainsHash (hit,
// miss) is the inline probe, compiled into this benchmark, on every path;
// insert, delete and batch_miss run the chosen instances. With `ts` the
// filter is thread-safe (name suffix "/ts"): the lock-free readers of the
// memtable index and LiveKeyDB, out of line, and the writers' lock.
class Dense : public KernelPeer<dlcbf::DenseDLeftFilter> {
 public:
  Dense(uint32_t r, double load, std::string path = "", bool ts = false)
      : r_(r), load_(load), path_(std::move(path)), ts_(ts) {}
  std::string Name() const override {
    char b[96];
    std::snprintf(b, sizeof(b), "dense-r%u-d2@%.2f/%s%s", r_, load_, path_.empty() ? "auto" : path_.c_str(),
                  ts_ ? "/ts" : "");
    return b;
  }
  double Lines(const uint64_t* k, size_t n, bool) const override { return MeasuredLines(*f_, k, n); }

 private:
  bool Make(size_t n) override {
    dlcbf::DenseDLeftOptions o;
    o.thread_safe = ts_;
    if (!path_.empty()) setenv("DLCBF_DENSE_SIMD", path_.c_str(), 1);
    const bool ok = dlcbf::DenseDLeftOptions::ForLoad(n, load_, r_, &o).ok() && dlcbf::DenseDLeftFilter::Create(o, &f_).ok();
    if (!path_.empty()) unsetenv("DLCBF_DENSE_SIMD");
    if (ok && !path_.empty() && path_ != dlcbf::DenseSimdPathName(f_->simd_path())) {
      std::fprintf(stderr, "%s: this CPU does not run the %s instances\n", Name().c_str(), path_.c_str());
      return false;
    }
    return ok;
  }
  uint32_t r_;
  double load_;
  std::string path_;
  bool ts_;
};

// ---- RocksDB built-in filters (bench/builtin_filter_adapter.h) -------------
class Builtin : public Peer {
 public:
  Builtin(std::string name, std::shared_ptr<const rocksdb::FilterPolicy> p)
      : name_(std::move(name)), policy_(std::move(p)) {}
  std::string Name() const override { return name_; }
  double Insert(const uint64_t* k, size_t n) override {
    reader_.reset();
    auto t0 = Clock::now();
    filter_ = dlcbf::bench::BuildBuiltinFilter(*policy_, n, [&](size_t i) { return Key(k + i); });
    auto t1 = Clock::now();
    reader_ = dlcbf::bench::BuiltinFilterReader(*policy_, filter_.data);
    return NsPerOp(t0, t1, n);
  }
  double Query(const uint64_t* k, size_t n, uint64_t* pos) override {
    uint64_t p = 0;
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) p += reader_->MayMatch(Key(k + i));
    auto t1 = Clock::now();
    *pos = p;
    return NsPerOp(t0, t1, n);
  }
  double QueryBatch(const uint64_t* k, size_t n, uint64_t* pos) override {
    rocksdb::Slice s[32];
    rocksdb::Slice* ptrs[32];
    bool out[32];
    uint64_t p = 0;
    auto t0 = Clock::now();
    for (size_t b = 0; b + 32 <= n; b += 32) {
      for (int j = 0; j < 32; ++j) {
        s[j] = Key(k + b + j);
        ptrs[j] = &s[j];
      }
      reader_->MayMatch(32, ptrs, out);
      for (bool x : out) p += x;
    }
    auto t1 = Clock::now();
    *pos = p;
    return NsPerOp(t0, t1, n / 32 * 32);
  }
  size_t Bytes() const override { return filter_.data.size(); }

 private:
  static rocksdb::Slice Key(const uint64_t* k) {
    return rocksdb::Slice(reinterpret_cast<const char*>(k), sizeof(uint64_t));
  }
  std::string name_;
  std::shared_ptr<const rocksdb::FilterPolicy> policy_;
  dlcbf::bench::BuiltFilter filter_;
  std::unique_ptr<rocksdb::FilterBitsReader> reader_;
};

// ---- peers built from their public sources (never vendored) ---------------
#ifdef DLCBF_HAVE_CUCKOO
class Cuckoo : public Peer {
  using Filter = cuckoofilter::CuckooFilter<uint64_t, 12>;

 public:
  std::string Name() const override { return "cuckoo-12"; }
  double Insert(const uint64_t* k, size_t n) override {
    f_.reset();
    f_.reset(new Filter(n));
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      if (f_->Add(k[i]) != cuckoofilter::Ok) return -1;
    }
    return NsPerOp(t0, Clock::now(), n);
  }
  double Query(const uint64_t* k, size_t n, uint64_t* pos) override {
    uint64_t p = 0;
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) p += f_->Contain(k[i]) == cuckoofilter::Ok;
    auto t1 = Clock::now();
    *pos = p;
    return NsPerOp(t0, t1, n);
  }
  double Erase(const uint64_t* k, size_t n) override {
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      if (f_->Delete(k[i]) != cuckoofilter::Ok) return -1;
    }
    return NsPerOp(t0, Clock::now(), n);
  }
  size_t Bytes() const override { return f_->SizeInBytes(); }

 private:
  std::unique_ptr<Filter> f_;
};
#endif

#ifdef DLCBF_HAVE_VQF
// The 16-bit build (tools/bench/CMakeLists.txt: same source, TAG_BITS 16,
// symbols renamed, remove bug fixed). Its vqf_filter has the same metadata
// header; only the pointer and the metadata are used here.
extern "C" {
vqf_filter* vqf16_init(uint64_t nslots);
bool vqf16_insert(vqf_filter* filter, uint64_t hash);
bool vqf16_remove(vqf_filter* filter, uint64_t hash);
bool vqf16_is_present(vqf_filter* filter, uint64_t hash);
}
class Vqf : public Peer {
 public:
  explicit Vqf(int tag_bits) : bits_(tag_bits) {
    if (bits_ == 16) {
      init_ = vqf16_init;
      insert_ = vqf16_insert;
      remove_ = vqf16_remove;
      present_ = vqf16_is_present;
    }
  }
  std::string Name() const override { return "vqf-" + std::to_string(bits_); }
  double Insert(const uint64_t* k, size_t n) override {
    Free();
    // Its own sizing rule (examples in its repository): slots = n / 0.9
    // (n / 0.85 for 16-bit tags, whose blocks hold 28 instead of 48).
    const double load = bits_ == 16 ? 0.85 : 0.90;
    f_ = init_(static_cast<uint64_t>(static_cast<double>(n) / load) + 64);
    if (f_ == nullptr) return -1;
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      if (!insert_(f_, k[i])) return -1;
    }
    return NsPerOp(t0, Clock::now(), n);
  }
  double Query(const uint64_t* k, size_t n, uint64_t* pos) override {
    uint64_t p = 0;
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) p += present_(f_, k[i]);
    auto t1 = Clock::now();
    *pos = p;
    return NsPerOp(t0, t1, n);
  }
  double Erase(const uint64_t* k, size_t n) override {
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      if (!remove_(f_, k[i])) return -1;
    }
    return NsPerOp(t0, Clock::now(), n);
  }
  size_t Bytes() const override { return f_->metadata.total_size_in_bytes; }
  ~Vqf() override { Free(); }

 private:
  void Free() {
    std::free(f_);
    f_ = nullptr;
  }
  int bits_;
  vqf_filter* (*init_)(uint64_t) = vqf_init;
  bool (*insert_)(vqf_filter*, uint64_t) = vqf_insert;
  bool (*remove_)(vqf_filter*, uint64_t) = vqf_remove;
  bool (*present_)(vqf_filter*, uint64_t) = vqf_is_present;
  vqf_filter* f_ = nullptr;
};
#endif

// ---- driver -------------------------------------------------------------------
struct Figures {
  std::vector<double> insert, hit, miss, batch, erase;
  double bpk = 0, fpr = 0, pred = -1, lines = -1, lines_hit = -1;
  bool failed = false;
};

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Fmt(double v, const char* fmt) {
  if (v < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof(b), fmt, v);
  return b;
}

std::vector<size_t> ParseSizes(const std::string& s) {
  std::vector<size_t> v;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) v.push_back(static_cast<size_t>(std::strtoull(tok.c_str(), nullptr, 10)));
  return v;
}

// Is a configuration named `name` selected by --only (a comma-separated
// list of name prefixes; empty = all)?
bool Selected(const std::string& name, const std::string& only) {
  if (only.empty()) return true;
  std::stringstream ss(only);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (!tok.empty() && name.rfind(tok, 0) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "100000,10000000", plot_dir, only;
  int rounds = 3;
  size_t max_queries = 2000000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--n=", 0) == 0) {
      sizes = a.substr(4);
    } else if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::atoi(a.c_str() + 9));
    } else if (a.rfind("--queries=", 0) == 0) {
      max_queries = std::strtoull(a.c_str() + 10, nullptr, 10);
    } else if (a.rfind("--plot_dir=", 0) == 0) {
      plot_dir = a.substr(11);
    } else if (a.rfind("--only=", 0) == 0) {
      only = a.substr(7);
    } else {
      std::fprintf(stderr, "usage: peer_bench [--n=N1,N2] [--rounds=R] [--queries=Q] [--plot_dir=DIR] [--only=A,B]\n");
      return 2;
    }
  }

  std::printf("# peer_bench: one process, configurations interleaved, median of %d rounds\n", rounds);
  dlcbf::bench::PrintBuildBanner();
  std::printf("# RocksDB %d.%d.%d (Debian build: portable, no AVX2); keys: uniform 64-bit, see the header\n",
              ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH);
#ifdef DLCBF_HAVE_CUCKOO
  std::printf("# cuckoo: efficient/cuckoofilter from %s (header-only, our compiler flags)\n", DLCBF_CUCKOO_DIR_STR);
#else
  std::printf("# skipped: cuckoo-12 (configure with -DDLCBF_CUCKOO_DIR=<checkout of efficient/cuckoofilter>)\n");
#endif
#ifdef DLCBF_HAVE_VQF
  std::printf("# vqf: splatlab/vqf from %s (8- and 16-bit tags, built with -O3 %s: it needs AVX2/AVX-512;"
              " vqf-16 with its remove index fixed)\n",
              DLCBF_VQF_DIR_STR, DLCBF_VQF_FLAGS_STR);
#else
  std::printf("# skipped: vqf-8 (configure with -DDLCBF_VQF_DIR=<checkout of splatlab/vqf>)\n");
#endif
  std::fflush(stdout);

  std::vector<std::function<std::unique_ptr<Peer>()>> makers = {
      [] { return std::unique_ptr<Peer>(new OldDLeft); },
      [] { return std::unique_ptr<Peer>(new Fast(2, 0.80)); },
      [] { return std::unique_ptr<Peer>(new Fast(2, 0.70)); },
      [] { return std::unique_ptr<Peer>(new Fast(4, 0.80)); },
      [] { return std::unique_ptr<Peer>(new Dense(8, 0.93)); },
      [] { return std::unique_ptr<Peer>(new Dense(16, 0.92)); },
      [] { return std::unique_ptr<Peer>(new Dense(8, 0.93, "sse2")); },
      [] { return std::unique_ptr<Peer>(new Dense(16, 0.92, "sse2")); },
      [] { return std::unique_ptr<Peer>(new Dense(8, 0.93, "avx2")); },
      [] { return std::unique_ptr<Peer>(new Dense(16, 0.92, "avx2")); },
      [] { return std::unique_ptr<Peer>(new Dense(8, 0.93, "", /*ts=*/true)); },
      [] { return std::unique_ptr<Peer>(new Dense(16, 0.92, "", /*ts=*/true)); },
      [] {
        return std::unique_ptr<Peer>(new Builtin(
            "rocksdb-bloom:10", std::shared_ptr<const rocksdb::FilterPolicy>(rocksdb::NewBloomFilterPolicy(10))));
      },
      [] {
        return std::unique_ptr<Peer>(new Builtin(
            "rocksdb-bloom:15", std::shared_ptr<const rocksdb::FilterPolicy>(rocksdb::NewBloomFilterPolicy(15))));
      },
      [] {
        return std::unique_ptr<Peer>(new Builtin(
            "rocksdb-ribbon:10", std::shared_ptr<const rocksdb::FilterPolicy>(rocksdb::NewRibbonFilterPolicy(10))));
      },
      [] {
        return std::unique_ptr<Peer>(new Builtin(
            "rocksdb-ribbon:14", std::shared_ptr<const rocksdb::FilterPolicy>(rocksdb::NewRibbonFilterPolicy(14))));
      },
#ifdef DLCBF_HAVE_CUCKOO
      [] { return std::unique_ptr<Peer>(new Cuckoo); },
#endif
#ifdef DLCBF_HAVE_VQF
      [] { return std::unique_ptr<Peer>(new Vqf(8)); },
      [] { return std::unique_ptr<Peer>(new Vqf(16)); },
#endif
  };

  std::string dat;
  for (size_t n : ParseSizes(sizes)) {
    // Distinct present keys, absent keys disjoint from them.
    std::mt19937_64 rng(n * 7919 + 1);
    std::vector<uint64_t> present(n);
    for (auto& k : present) k = rng() | 1;  // odd
    const size_t q = std::min(max_queries, std::max<size_t>(n, 100000));
    std::vector<uint64_t> absent(q);
    for (auto& k : absent) k = rng() & ~uint64_t{1};  // even: never present
    std::vector<uint64_t> hits(std::min(n, q));
    for (auto& k : hits) k = present[rng() % n];
    std::vector<std::unique_ptr<Peer>> peers;
    for (auto& m : makers) {
      std::unique_ptr<Peer> p = m();
      if (Selected(p->Name(), only)) peers.push_back(std::move(p));
    }
    std::vector<Figures> fig(peers.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t c = 0; c < peers.size(); ++c) {
        Peer& p = *peers[c];
        Figures& f = fig[c];
        if (f.failed) continue;
        const double ins = p.Insert(present.data(), n);
        if (ins < 0) {
          f.failed = true;
          continue;
        }
        f.insert.push_back(ins);
        uint64_t pos = 0;
        f.hit.push_back(p.Query(hits.data(), hits.size(), &pos));
        if (pos != hits.size()) {
          std::printf("# FALSE NEGATIVE in %s: %llu of %zu present keys found\n", p.Name().c_str(),
                      static_cast<unsigned long long>(pos), hits.size());
        }
        f.miss.push_back(p.Query(absent.data(), q, &pos));
        f.fpr = static_cast<double>(pos) / static_cast<double>(q);
        uint64_t pos_b = 0;
        const double b = p.QueryBatch(absent.data(), q, &pos_b);
        if (b >= 0) f.batch.push_back(b);
        if (r == 0) {
          f.bpk = 8.0 * static_cast<double>(p.Bytes()) / static_cast<double>(n);
          f.pred = p.PredictedFpr();
          f.lines = p.Lines(absent.data(), std::min<size_t>(q, 1000000), false);
          f.lines_hit = p.Lines(hits.data(), std::min<size_t>(hits.size(), 1000000), true);
        }
        const double e = p.Erase(present.data(), n);
        if (e >= 0) f.erase.push_back(e);
        g_sink += pos + pos_b;
      }
    }
    std::printf("# n=%zu done; load average now: %s\n", n, dlcbf::bench::LoadAvg().c_str());
    for (size_t c = 0; c < peers.size(); ++c) {
      const Figures& f = fig[c];
      if (f.failed) {
        std::printf("PEER n=%-9zu name=%-28s FAILED (an insert failed at this size)\n", n, peers[c]->Name().c_str());
        continue;
      }
      const double ins = Median(f.insert), hit = Median(f.hit), miss = Median(f.miss), del = Median(f.erase),
                   bat = Median(f.batch);
      std::printf(
          "PEER n=%-9zu name=%-28s bits/key=%6.2f fpr=%.4f%% pred=%-8s insert=%6.1f hit=%6.1f miss=%6.1f "
          "delete=%-6s batch_miss=%-6s lines/neg=%-5s lines/hit=%s\n",
          n, peers[c]->Name().c_str(), f.bpk, 100 * f.fpr, (f.pred >= 0 ? Fmt(100 * f.pred, "%.4f") + "%" : "-").c_str(),
          ins, hit, miss, Fmt(del, "%.1f").c_str(), Fmt(bat, "%.1f").c_str(), Fmt(f.lines, "%.3f").c_str(), Fmt(f.lines_hit, "%.3f").c_str());
      char row[256];
      std::snprintf(row, sizeof(row), "%zu %s %.4f %.6f %.2f %.2f %.2f %.2f %.2f\n", n, peers[c]->Name().c_str(),
                    f.bpk, f.fpr, ins, hit, miss, del, bat);
      dat += row;
    }
    std::fflush(stdout);
  }

  if (!plot_dir.empty()) {
    const std::string d = plot_dir + "/peer_bench.dat", g = plot_dir + "/peer_bench.gp";
    std::ofstream(d) << "# n name bits/key fpr insert hit miss delete batch_miss (ns/op; -1 = n/a)\n" << dat;
    std::ofstream gp(g);
    gp << "# gnuplot script written by peer_bench: the frontier per key count\n"
          "set terminal pngcairo size 1000,700 noenhanced\n"
          "set datafile commentschars '#'\n"
          "set key outside right\nset grid\n"
          "set xlabel 'bits per key'\n"
          "set output '" << plot_dir << "/fpr_vs_bits.png'\n"
          "set logscale y\nset ylabel 'false-positive rate'\n"
          "plot '" << d << "' using 3:($4>0?$4:1/0):2 with labels point pt 7 offset char 1,0.5 notitle\n"
          "set output '" << plot_dir << "/ns_vs_bits.png'\n"
          "unset logscale y\nset ylabel 'ns per op (miss: filled, hit: open)'\n"
          "plot '" << d << "' using 3:7:2 with labels point pt 7 offset char 1,0.5 title 'miss', "
          "'' using 3:6 with points pt 6 title 'hit'\n";
    gp.close();
    std::printf("# plot data: %s, script: %s\n", d.c_str(), g.c_str());
    if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
      const std::string cmd = "gnuplot '" + g + "'";
      std::printf("# gnuplot: %s\n", std::system(cmd.c_str()) == 0 ? "wrote fpr_vs_bits.png, ns_vs_bits.png" : "FAILED");
    } else {
      std::printf("# gnuplot not installed (apt-get install gnuplot-nox); script left for later\n");
    }
  }
  return g_sink == 42 ? 1 : 0;
}
