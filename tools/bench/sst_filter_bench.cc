// SST filter benchmark: the dlcbf FilterPolicy against RocksDB's own
// NewBloomFilterPolicy (FastLocalBloom) and NewRibbonFilterPolicy, all
// driven through the same FilterBitsBuilder/FilterBitsReader interface in
// one process, exactly as the block-based table builder and reader use them.
//
// For each configuration it prints ONE line:
//   SSTFILTER policy=<id> mode=<in-cache|out-of-cache> n=<keys/filter>
//     filters=<count> MiB=<total> bits/key=<stored> build_ns/key=<>
//     query_ns=<single MayMatch> batch_ns=<MayMatch(32 keys)/key>
//     fpr=<measured %> pred=<predicted %> log2(1/fpr)=<bits> over_lb=<%>
//     lines/query=<64-byte blocks a negative query reads>
// where over_lb = bits/key / log2(1/fpr) - 1 is the space above the
// information-theoretic minimum for the measured FP rate, and lines/query
// is counted (dlcbf versions 2 and 3: blocks probed; Bloom: 1, its one
// cache-local line; version 1: d; Ribbon: n/a).
//
//   in-cache:     one filter of ~1 MiB, queried with absent keys.
//   out-of-cache: 64 copies of a ~4 MiB filter in distinct memory
//                 (>= 256 MiB in total); every query picks a random copy.
//   out-of-cache+THP (with --thp): the same with transparent huge pages
//                 requested (madvise), to separate DRAM latency from TLB
//                 misses.
//
// Timings are the median over rounds in which every configuration runs once,
// round-robin (other processes share the machine): 7 query rounds and 3
// build rounds (--quick: 3 and 3). The GOAL lines are ratios of those
// medians, measured side by side in this process. Both sides' build flags are printed; the Debian librocksdb is a
// portable build (no AVX2), so build this project WITHOUT -march=native for
// a like-for-like comparison.
//
// Usage: sst_filter_bench [--quick] [--thp]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "tools/bench/bench_banner.h"
#include "builtin_filter_adapter.h"
#include "dlcbf/internal/hash.h"
#include "filter_policy/rocksdb/abi/filter_abi.h"
#include "filter_policy/rocksdb/sst_filter/block_format.h"
#include "filter_policy/rocksdb/sst_filter/packed_table.h"
#include "dlcbf/rocksdb/filter_policy.h"
#include "rocksdb/table.h"
#include "rocksdb/version.h"

namespace {

using rocksdb::FilterBitsBuilder;
using rocksdb::FilterBitsReader;
using rocksdb::FilterPolicy;
using rocksdb::Slice;
using Clock = std::chrono::steady_clock;

constexpr size_t kKeyLen = 20;  // "key" + 16 hex digits + 'p'/'a'

// Keys live in one flat buffer so key access costs the same for everyone.
struct KeySet {
  std::vector<char> bytes;
  size_t n = 0;
  Slice operator[](size_t i) const { return Slice(bytes.data() + i * kKeyLen, kKeyLen); }
};

KeySet MakeKeys(size_t n, uint64_t seed, char tag) {
  KeySet k;
  k.n = n;
  k.bytes.resize(n * kKeyLen);
  uint64_t state = seed;
  for (size_t i = 0; i < n; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "key%016llx%c",
                  static_cast<unsigned long long>(dlcbf::internal::SplitMix64(&state)), tag);
    std::memcpy(k.bytes.data() + i * kKeyLen, buf, kKeyLen);
  }
  return k;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

using Filter = dlcbf::bench::BuiltFilter;

Filter Build(const FilterPolicy& p, const KeySet& keys, size_t n) {
  return dlcbf::bench::BuildBuiltinFilter(p, n, [&](size_t i) { return keys[i]; });
}

volatile uint64_t g_sink = 0;

struct Result {
  double bits_per_key = 0, build_ns = 0, query_ns = 0, batch_ns = 0, fpr = 0, pred = -1;
  double lines = -1;  // 64-byte blocks per negative query; -1 = n/a
  size_t bytes = 0;
  std::vector<double> build_s, query_s, batch_s;  // one sample per round
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Blocks a negative query reads, counted on the built block: the probe
// chain of dlcbf versions 2 and 3, d for version 1, 1 for RocksDB's
// cache-local Bloom; -1 where the count has no meaning (Ribbon).
double LinesPerQuery(const FilterPolicy& p, const Slice& block, const KeySet& absent, size_t q) {
  namespace sf = dlcbf::sst_filter;
  if (std::strcmp(p.Name(), "bloomfilter") == 0) return 1.0;
  if (!dlcbf::IsDLeftFilterPolicy(&p, nullptr)) return -1.0;
  sf::ParsedBlock b;
  std::string why;
  if (!sf::ParseBlock(block, &b, &why)) return -1.0;
  if (b.kind == sf::kKindDLeft) return b.geo.subtables;
  uint64_t lines = 0;
  for (size_t i = 0; i < q; ++i) {
    const uint64_t h = dlcbf::internal::HashKey(absent[i].data(), absent[i].size(), b.hash_seed);
    if (b.kind == sf::kKindPacked) {
      sf::PackedProbe pr;
      sf::PackedLocate(b.packed, h, &pr);
      const char* blk = b.payload + pr.block * sf::kPackedBlockBytes;
      for (;;) {
        ++lines;
        if (sf::PackedProbeBlock<false>(b.packed, blk, pr.b, pr.q) != 2) break;
        blk += sf::kPackedBlockBytes;
      }
    } else if (b.kind == sf::kKindBlocked) {
      sf::BlockedProbe pr;
      sf::BlockedLocate(b.blocked, h, &pr);
      const char* blk = b.payload + pr.block * sf::kBlockBytes;
      for (;;) {
        ++lines;
        if (sf::BlockedProbeBlock<0>(b.blocked, blk, pr) != 2) break;
        blk += sf::kBlockBytes;
      }
    } else {
      return -1.0;
    }
  }
  return static_cast<double>(lines) / static_cast<double>(q);
}

// Measured FPR of one filter over q absent keys.
double MeasureFpr(FilterBitsReader* r, const KeySet& absent, size_t q) {
  uint64_t fp = 0;
  for (size_t i = 0; i < q; ++i) fp += r->MayMatch(absent[i]);
  return static_cast<double>(fp) / static_cast<double>(q);
}

double PredictedFpr(const FilterPolicy& p, size_t n, size_t bytes, double bpk_cfg) {
  dlcbf::DLeftFilterPolicyOptions o;
  if (dlcbf::IsDLeftFilterPolicy(&p, &o)) {
    dlcbf::DLeftFilterPlan plan;
    if (!dlcbf::PlanDLeftFilter(o, &plan).ok()) return -1;
    if (plan.format_version >= 2) return plan.predicted_fpr;  // the planner's model
    const double B = std::ceil(n / (plan.load * plan.subtables * plan.cells_per_bucket));
    const double space = B * (std::ldexp(1.0, static_cast<int>(plan.remainder_bits)) - 1);
    return -std::expm1(static_cast<double>(n) * std::log1p(-1.0 / space));
  }
  if (std::strcmp(p.Name(), "bloomfilter") == 0 && bpk_cfg > 0) {
    // Standard (unblocked) Bloom bound with FastLocalBloom's k; the
    // cache-local layout is somewhat worse than this.
    const double b = 8.0 * static_cast<double>(bytes) / static_cast<double>(n);
    const double k = std::max(1.0, std::round(bpk_cfg * 0.69));
    return std::pow(1 - std::exp(-k / b), k);
  }
  return -1;
}

// One configuration in one mode: its filter copies and readers.
struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

struct Setup {
  const FilterPolicy* policy = nullptr;
  double bpk_cfg = 0;
  std::vector<std::unique_ptr<char[], FreeDeleter>> mem;
  std::vector<std::unique_ptr<FilterBitsReader>> readers;
  Result res;
};

// Builds the filter once per round (min over rounds is the build time),
// then makes `copies` copies in distinct memory and a reader for each.
void Prepare(Setup* s, const KeySet& present, size_t n, const KeySet& absent, size_t q_fpr,
             int copies, bool huge_pages) {
  Filter f = Build(*s->policy, present, n);
  s->res.bytes = f.data.size();
  s->res.bits_per_key = 8.0 * f.data.size() / n;
  for (int c = 0; c < copies; ++c) {
    // 2 MiB-aligned; with huge_pages, transparent huge pages are requested
    // (madvise), which removes most TLB misses of random probes.
    const size_t kHuge = size_t{2} << 20;
    const size_t alloc = (f.data.size() + kHuge - 1) / kHuge * kHuge;
    char* m = static_cast<char*>(std::aligned_alloc(kHuge, alloc));
    if (m == nullptr) {
      std::fprintf(stderr, "out of memory\n");
      std::exit(1);
    }
    if (huge_pages) madvise(m, alloc, MADV_HUGEPAGE);
    s->mem.emplace_back(m);
    std::memcpy(s->mem.back().get(), f.data.data(), f.data.size());
    s->readers.emplace_back(s->policy->GetFilterBitsReader(Slice(s->mem.back().get(), f.data.size())));
  }
  for (size_t i = 0; i < n; i += 97) {
    if (!s->readers[0]->MayMatch(present[i])) {
      std::fprintf(stderr, "FALSE NEGATIVE in %s\n", s->policy->Name());
      std::exit(1);
    }
  }
  s->res.fpr = MeasureFpr(s->readers[0].get(), absent, q_fpr);
  s->res.pred = PredictedFpr(*s->policy, n, f.data.size(), s->bpk_cfg);
  s->res.lines = LinesPerQuery(*s->policy, f.data, absent, std::min<size_t>(q_fpr, 200000));
}

void Summarize(Result* r) {
  r->build_ns = Median(r->build_s);
  r->query_ns = Median(r->query_s);
  r->batch_ns = Median(r->batch_s);
}

void TimeBuild(Setup* s, const KeySet& present, size_t n) {
  auto t0 = Clock::now();
  Filter f = Build(*s->policy, present, n);
  s->res.build_s.push_back(Seconds(t0, Clock::now()) * 1e9 / n);
  g_sink += f.data.size();
}

// Single and batched queries of absent keys; each query (or batch of 32)
// goes to the copy pick[i].
void TimeQueries(Setup* s, const KeySet& absent, size_t q, const std::vector<uint32_t>& pick) {
  std::vector<Slice> slices(32);
  std::vector<Slice*> ptrs(32);
  bool out[32];
  uint64_t hits = 0;
  auto t0 = Clock::now();
  for (size_t i = 0; i < q; ++i) hits += s->readers[pick[i]]->MayMatch(absent[i]);
  auto t1 = Clock::now();
  for (size_t base = 0; base + 32 <= q; base += 32) {
    for (int j = 0; j < 32; ++j) {
      slices[j] = absent[base + j];
      ptrs[j] = &slices[j];
    }
    s->readers[pick[base]]->MayMatch(32, ptrs.data(), out);
    for (int j = 0; j < 32; ++j) hits += out[j];
  }
  auto t2 = Clock::now();
  g_sink += hits;
  s->res.query_s.push_back(Seconds(t0, t1) * 1e9 / q);
  s->res.batch_s.push_back(Seconds(t1, t2) * 1e9 / (q / 32 * 32));
}

void Print(const std::string& id, const char* mode, size_t n, int filters, const Result& r) {
  const double lb = r.fpr > 0 ? std::log2(1.0 / r.fpr) : 0;
  char pred[32], lines[32];
  if (r.lines >= 0) {
    std::snprintf(lines, sizeof(lines), "%.3f", r.lines);
  } else {
    std::snprintf(lines, sizeof(lines), "n/a");
  }
  if (r.pred >= 0) {
    std::snprintf(pred, sizeof(pred), "%.4f%%", 100 * r.pred);
  } else {
    std::snprintf(pred, sizeof(pred), "n/a");
  }
  std::printf(
      "SSTFILTER policy=%-26s mode=%-16s n=%-8zu filters=%-3d MiB=%-7.1f bits/key=%-6.3f "
      "build_ns/key=%-7.1f query_ns=%-6.1f batch_ns=%-6.1f fpr=%.4f%% pred=%s "
      "log2(1/fpr)=%.2f over_lb=%.1f%% lines/query=%s\n",
      id.c_str(), mode, n, filters, filters * r.bytes / 1048576.0, r.bits_per_key, r.build_ns,
      r.query_ns, r.batch_ns, 100 * r.fpr, pred, lb, lb > 0 ? 100 * (r.bits_per_key / lb - 1) : 0,
      lines);
  std::fflush(stdout);
}

struct Config {
  std::string id;
  std::shared_ptr<const FilterPolicy> policy;
  double bpk_cfg;  // configured bits/key for Bloom's k (0 if n/a)
};

std::shared_ptr<const FilterPolicy> Make(const std::string& kind, double x) {
  if (kind == "bloom") return std::shared_ptr<const FilterPolicy>(rocksdb::NewBloomFilterPolicy(x));
  if (kind == "ribbon") return std::shared_ptr<const FilterPolicy>(rocksdb::NewRibbonFilterPolicy(x));
  dlcbf::DLeftFilterPolicyOptions o;
  if (kind == "dlcbf-fpr") {
    o.fp_rate = x;
  } else {
    o.bits_per_key = x;
  }
  std::shared_ptr<const FilterPolicy> p;
  if (!dlcbf::NewDLeftFilterPolicy(o, &p).ok()) return nullptr;
  return p;
}

std::shared_ptr<const FilterPolicy> MakeDLeft(const std::string& id) {
  dlcbf::DLeftFilterPolicyOptions o;
  std::shared_ptr<const FilterPolicy> p;
  if (!dlcbf::ParseDLeftFilterPolicyId(id, &o).ok() || !dlcbf::NewDLeftFilterPolicy(o, &p).ok()) {
    std::fprintf(stderr, "bad id %s\n", id.c_str());
    std::exit(2);
  }
  return p;
}

// The configuration parameter of `kind` whose measured FPR is closest to
// `target` (bisection; FPR falls as the parameter grows).
double Calibrate(const std::string& kind, double target, const KeySet& present, const KeySet& absent) {
  const size_t n = std::min<size_t>(200000, present.n), q = absent.n;
  double lo = 5, hi = 20;
  for (int it = 0; it < 12; ++it) {
    const double mid = 0.5 * (lo + hi);
    auto p = Make(kind, mid);
    Filter f = Build(*p, present, n);
    std::unique_ptr<FilterBitsReader> r(p->GetFilterBitsReader(f.data));
    const double fpr = MeasureFpr(r.get(), absent, q);
    (fpr > target ? lo : hi) = mid;
  }
  return std::round(hi * 100) / 100;
}


}  // namespace

int main(int argc, char** argv) {
  bool quick = false, thp = false;
  for (int i = 1; i < argc; ++i) {
    quick |= std::strcmp(argv[i], "--quick") == 0;
    thp |= std::strcmp(argv[i], "--thp") == 0;
  }
  std::printf("# sst_filter_bench: dlcbf vs RocksDB %d.%d.%d built-in filters, same adapter, same process\n",
              ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH);
  dlcbf::bench::PrintBuildBanner();  // this project is built without -march here, like Debian's RocksDB
  std::printf("# RocksDB side: Debian librocksdb 7.8.3 (portable build, no AVX2: FastLocalBloom/Ribbon scalar paths)\n");
  std::printf("# dlcbf v3 probe instance: %s (chosen by a start-up measurement of PDEP against the portable select)\n",
              dlcbf::sst_filter::PackedCpuIsFast() ? "popcnt+bmi2" : "portable");

  const size_t n_in = quick ? 200000 : 838861;          // ~1 MiB at 10 bits/key
  const size_t n_out = quick ? 800000 : 3355443;        // ~4 MiB at 10 bits/key
  const int copies = quick ? 8 : 64;                    // >= 256 MiB in total
  const size_t q = quick ? 500000 : 2000000;
  const int reps = quick ? 3 : 7;
  const int build_reps = quick ? 1 : 3;
  const KeySet present = MakeKeys(n_out, 1, 'p');
  const KeySet absent = MakeKeys(q, 2, 'a');

  // Equal-FPR partners.
  const double bloom10_fpr = [&] {
    auto p = Make("bloom", 10);
    Filter f = Build(*p, present, n_in);
    std::unique_ptr<FilterBitsReader> r(p->GetFilterBitsReader(f.data));
    return MeasureFpr(r.get(), absent, q);
  }();
  dlcbf::DLeftFilterPlan plan10;
  dlcbf::PlanDLeftFilter(dlcbf::DLeftFilterPolicyOptions(), &plan10);
  std::printf("# dlcbf:10 plan: version %u r=%u C=%u B=%u d=%u L=%u load=%.3f -> predicted FPR %.4f%%; "
              "bloom:10 measured %.4f%%\n",
              plan10.format_version, plan10.remainder_bits, plan10.slots_per_block,
              plan10.buckets_per_block, plan10.subtables, plan10.cells_per_bucket, plan10.load,
              100 * plan10.predicted_fpr, 100 * bloom10_fpr);
  const double bloom_eq = Calibrate("bloom", plan10.predicted_fpr, present, absent);
  const double ribbon_eq = Calibrate("ribbon", plan10.predicted_fpr, present, absent);
  char fpr_id[64];
  std::snprintf(fpr_id, sizeof(fpr_id), "%.4g", bloom10_fpr);
  std::printf("# equal FPR: bloom:%.2f and ribbon:%.2f match dlcbf:10's predicted %.4f%%; "
              "dlcbf:fpr%s matches bloom:10's measured FPR\n",
              bloom_eq, ribbon_eq, 100 * plan10.predicted_fpr, fpr_id);

  std::vector<Config> configs = {
      {"bloom:10", Make("bloom", 10), 10},
      {"ribbon:10", Make("ribbon", 10), 0},
      {"dlcbf:10", Make("dlcbf", 10), 0},
      {"dlcbf:10:v2", MakeDLeft("dlcbf:10:v2"), 0},
      {"dlcbf:12", MakeDLeft("dlcbf:12"), 0},
      {"bloom:" + std::to_string(bloom_eq).substr(0, 5) + "(=dl10)", Make("bloom", bloom_eq), bloom_eq},
      {"ribbon:" + std::to_string(ribbon_eq).substr(0, 5) + "(=dl10)", Make("ribbon", ribbon_eq), 0},
      {std::string("dlcbf:fpr") + fpr_id + "(=bl10)", Make("dlcbf-fpr", std::atof(fpr_id)), 0},
  };
  // Every configuration is measured once per round, round-robin, and the
  // minimum over rounds is kept: the machine is shared, and interleaving
  // keeps slow periods from landing on one configuration only.
  Result bloom_in, dl_in, bloom_out, dl_out;
  struct Mode {
    const char* name;
    size_t n;
    int copies;
    bool huge_pages;
  };
  std::vector<Mode> modes = {{"in-cache", n_in, 1, false}, {"out-of-cache", n_out, copies, false}};
  if (thp) modes.push_back({"out-of-cache+THP", n_out, copies, true});
  for (const Mode& mode : modes) {
    std::vector<uint32_t> pick(q);
    std::mt19937 rng(5);
    for (auto& x : pick) x = mode.copies > 1 ? rng() % mode.copies : 0;
    std::vector<Setup> setups(configs.size());
    for (size_t c = 0; c < configs.size(); ++c) {
      setups[c].policy = configs[c].policy.get();
      setups[c].bpk_cfg = configs[c].bpk_cfg;
      Prepare(&setups[c], present, mode.n, absent, std::min<size_t>(q, 2000000), mode.copies,
              mode.huge_pages);
    }
    for (int rep = 0; rep < reps; ++rep) {
      for (auto& st : setups) {
        if (rep < build_reps) TimeBuild(&st, present, mode.n);
        TimeQueries(&st, absent, q, pick);
      }
    }
    for (size_t c = 0; c < configs.size(); ++c) {
      Summarize(&setups[c].res);
      Print(configs[c].id, mode.name, mode.n, mode.copies, setups[c].res);
      if (mode.huge_pages) continue;
      Result& slot_bloom = mode.copies > 1 ? bloom_out : bloom_in;
      Result& slot_dl = mode.copies > 1 ? dl_out : dl_in;
      if (configs[c].id == "bloom:10") slot_bloom = setups[c].res;
      if (configs[c].id == "dlcbf:10") slot_dl = setups[c].res;
    }
  }
  // Issue #22's goals for dlcbf:10 (format version 3), portable on both
  // sides; ratios of medians measured side by side above.
  auto goal = [](const char* what, double value, double limit) {
    std::printf("# GOAL %-52s %7.3f (limit %.2f) %s\n", what, value, limit,
                value <= limit ? "MET" : "MISSED");
  };
  goal("FPR dlcbf:10, % (in-cache, measured)", 100 * dl_in.fpr, 0.35);
  goal("over_lb dlcbf:10, % (in-cache)",
       100 * (dl_in.bits_per_key / std::log2(1.0 / dl_in.fpr) - 1), 22);
  goal("lines per negative query dlcbf:10", dl_in.lines, 1.2);
  goal("single query dlcbf:10 / bloom:10 (in-cache)", dl_in.query_ns / bloom_in.query_ns, 1.0);
  goal("single query dlcbf:10 / bloom:10 (out-of-cache)", dl_out.query_ns / bloom_out.query_ns, 1.15);
  goal("batched query dlcbf:10 / bloom:10 (in-cache)", dl_in.batch_ns / bloom_in.batch_ns, 1.0);
  goal("batched query dlcbf:10 / bloom:10 (out-of-cache)", dl_out.batch_ns / bloom_out.batch_ns, 1.0);
  goal("build dlcbf:10 / bloom:10 (in-cache)", dl_in.build_ns / bloom_in.build_ns, 2.0);
  goal("build dlcbf:10 / bloom:10 (out-of-cache)", dl_out.build_ns / bloom_out.build_ns, 2.0);
  return g_sink == 42 ? 1 : 0;
}
