// live_key_txn_bench: LiveKeyDB's transaction routes against RocksDB's own
// TransactionDB and OptimisticTransactionDB on the deep LSM of
// live_key_bench (tools/bench/deep_lsm.h: 1M keys over L0-L4, every key
// overlapping every level, bloomfilter:10 SST filters in all four DBs).
//
// Pairs (each DB its own directory, all four open at once, same keys):
//   TransactionDB            plain TransactionDB::Open vs LiveKeyDB::OpenTransactionDB
//   OptimisticTransactionDB  plain OptimisticTransactionDB::Open vs
//                            LiveKeyDB::OpenOptimisticTransactionDB
// Workloads, per pair, --repeats times; within a repetition the two DBs
// take turns every --chunk transactions (rotating who goes first), and the
// median repetition is reported with the fastest and slowest:
//   unique_insert  GetForUpdate of a new key (NotFound), Put, Commit
//   rmw            GetForUpdate of a live key, Put of a new value, Commit
//   absent_get     Transaction::Get of a key never written (NotFound);
//                  one read-only transaction per --gets_per_txn Gets,
//                  reused (old_txn), rolled back
// Output: one fixed-format line per pair x workload x DB
//   live_key_txn_bench kind=<k> workload=<w> db=<plain|livekey> ops=<n> kops_per_sec=<x> us_per_op=<median> us_min=<a> us_max=<b> p50_us=.. p99_us=.. p999_us=.. reps=<r>
// (an op is a transaction, or one Get for absent_get; percentiles over all
// repetitions), then per pair and workload the ratio paired by repetition:
//   live_key_txn_bench goal kind=<k> workload=<w> livekey/plain throughput per repetition: median <x>x (min, max) goal <rule> PASS|FAIL
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlcbf/rocksdb/live_key_db.h"
#include "tests/rocksdb_test_util.h"  // (Diag: a LiveKeyStats diagnostic by name)
#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/transaction_db.h"
#include "tools/bench/bench_banner.h"
#include "tools/bench/deep_lsm.h"

DEFINE_string(db_dir, "/tmp/live_key_txn_bench", "parent directory of the benchmark DBs (wiped)");
DEFINE_uint64(num_keys, 1000000, "keys in the deep LSM");
DEFINE_uint32(value_size, 100, "value bytes");
DEFINE_uint32(l0_files, 12, "L0 files holding the newest 10 % of the keys");
DEFINE_uint64(deleted_keys, 100000, "keys deleted after the load (tombstones in L0)");
DEFINE_uint64(txns, 50000, "transactions per write workload and repetition");
DEFINE_uint64(gets, 200000, "Gets per absent_get repetition");
DEFINE_uint32(gets_per_txn, 16, "absent_get: Gets per read-only transaction");
DEFINE_uint32(repeats, 3, "repetitions per workload; the median is reported");
DEFINE_uint64(chunk, 1000, "ops per turn: the two DBs of a pair alternate every this many ops");
DEFINE_uint64(cache_mb, 32, "block cache per DB (MiB)");
DEFINE_uint64(seed, 8, "random seed");
DEFINE_string(kinds, "TransactionDB,OptimisticTransactionDB", "pairs to run");

namespace {

using dlcbf::testing_util::Diag;

using Clock = std::chrono::steady_clock;
constexpr const char* kTool = "live_key_txn_bench";

void Check(const rocksdb::Status& s, const char* what) { dlcbf::bench::CheckOk(s, kTool, what); }

struct Db {
  std::string name;  // plain | livekey
  rocksdb::DB* db = nullptr;
  rocksdb::TransactionDB* pess = nullptr;
  rocksdb::OptimisticTransactionDB* occ = nullptr;
  rocksdb::Transaction* Begin(rocksdb::Transaction* old = nullptr) {
    if (pess != nullptr) return pess->BeginTransaction(rocksdb::WriteOptions(), rocksdb::TransactionOptions(), old);
    return occ->BeginTransaction(rocksdb::WriteOptions(), rocksdb::OptimisticTransactionOptions(), old);
  }
};

Db OpenDb(const std::string& kind, bool live, const std::string& dir) {
  Db d;
  d.name = live ? "livekey" : "plain";
  rocksdb::Options o = dlcbf::bench::DeepLsmOptions(
      std::shared_ptr<const rocksdb::FilterPolicy>(rocksdb::NewBloomFilterPolicy(10)), FLAGS_cache_mb);
  dlcbf::LiveKeyIndexOptions io;
  io.expected_keys = FLAGS_num_keys + FLAGS_txns * FLAGS_repeats + 1000;
  if (kind == "TransactionDB") {
    if (live) {
      Check(dlcbf::LiveKeyDB::OpenTransactionDB(o, rocksdb::TransactionDBOptions(), io, dir, &d.pess), "open");
    } else {
      Check(rocksdb::TransactionDB::Open(o, rocksdb::TransactionDBOptions(), dir, &d.pess), "open");
    }
    d.db = d.pess;
  } else {
    if (live) {
      Check(dlcbf::LiveKeyDB::OpenOptimisticTransactionDB(o, io, dir, &d.occ), "open");
    } else {
      Check(rocksdb::OptimisticTransactionDB::Open(o, dir, &d.occ), "open");
    }
    d.db = d.occ;
  }
  return d;
}

struct Series {
  std::vector<double> secs;  // per repetition
  std::vector<uint64_t> ns;  // per op, all repetitions
  uint64_t ops = 0;
  double Median() const {
    std::vector<double> v = secs;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  double Pct(double p) {
    std::sort(ns.begin(), ns.end());
    return ns.empty() ? 0 : ns[std::min(ns.size() - 1, static_cast<size_t>(p * ns.size()))] / 1000.0;
  }
};

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("LiveKeyDB's transaction routes vs RocksDB's TransactionDB / OptimisticTransactionDB");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  dlcbf::bench::PrintBuildBanner();
  if (FLAGS_num_keys < 10000 || FLAGS_deleted_keys >= FLAGS_num_keys / 2 || FLAGS_txns == 0 || FLAGS_gets == 0 ||
      FLAGS_repeats == 0 || FLAGS_chunk == 0 || FLAGS_gets_per_txn == 0 ||
      FLAGS_deleted_keys + FLAGS_txns * FLAGS_repeats > FLAGS_num_keys) {
    std::fprintf(stderr, "%s: bad flags (num_keys >= 10000, deleted_keys < num_keys / 2, positive counts, "
                         "deleted_keys + txns x repeats <= num_keys)\n", kTool);
    return 2;
  }
  std::printf("%s num_keys=%" PRIu64 " txns=%" PRIu64 " gets=%" PRIu64 " gets_per_txn=%u repeats=%u chunk=%" PRIu64
              "\n", kTool, FLAGS_num_keys, FLAGS_txns, FLAGS_gets, FLAGS_gets_per_txn, FLAGS_repeats, FLAGS_chunk);
  std::mt19937_64 rng(FLAGS_seed);
  std::vector<uint64_t> ids(FLAGS_num_keys);
  for (uint64_t i = 0; i < FLAGS_num_keys; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  // Live keys for rmw: not among the deleted ones (stride positions).
  std::vector<uint64_t> live_ids;
  const uint64_t stride = FLAGS_num_keys / FLAGS_deleted_keys;
  for (uint64_t i = 0; i < FLAGS_num_keys; ++i) {
    if (i % stride == 0 && i / stride < FLAGS_deleted_keys) continue;
    live_ids.push_back(ids[i]);
  }
  std::shuffle(live_ids.begin(), live_ids.end(), rng);
  const std::string value(FLAGS_value_size, 'v'), value2(FLAGS_value_size, 'w');

  std::string list = FLAGS_kinds + ",";
  for (size_t p = 0, q; (q = list.find(',', p)) != std::string::npos; p = q + 1) {
    const std::string kind = list.substr(p, q - p);
    if (kind.empty()) continue;
    if (kind != "TransactionDB" && kind != "OptimisticTransactionDB") {
      std::fprintf(stderr, "%s: unknown kind %s\n", kTool, kind.c_str());
      return 2;
    }
    std::vector<Db> dbs;
    for (bool live : {false, true}) {
      const std::string dir = FLAGS_db_dir + "/" + kind + (live ? "_livekey" : "_plain");
      std::filesystem::remove_all(dir);
      std::filesystem::create_directories(FLAGS_db_dir);
      dbs.push_back(OpenDb(kind, live, dir));
      const auto t0 = Clock::now();
      dlcbf::bench::LoadDeepLsm(dbs.back().db, ids, FLAGS_l0_files, FLAGS_deleted_keys, FLAGS_value_size, kTool,
                                [&](int level, uint64_t n) {
                                  std::fprintf(stderr, "[setup %s %s] level %d: %" PRIu64 " keys (%.1f s)\n",
                                               kind.c_str(), dbs.back().name.c_str(), level, n,
                                               std::chrono::duration<double>(Clock::now() - t0).count());
                                });
      std::printf("%s kind=%s db=%s lsm:%s\n", kTool, kind.c_str(), dbs.back().name.c_str(),
                  dlcbf::bench::Shape(dbs.back().db).c_str());
    }
    dlcbf::LiveKeyDB* live = dlcbf::LiveKeyDB::FromTransactionDB(dbs[1].db);
    if (live == nullptr || !live->WaitForDeferredChecks(600000)) {
      std::fprintf(stderr, "%s: LiveKeyDB not ready\n", kTool);
      return 1;
    }
    for (const std::string w : {"unique_insert", "rmw", "absent_get"}) {
      Series series[2];
      const bool reads = w == "absent_get";
      const uint64_t ops = reads ? FLAGS_gets : FLAGS_txns;
      for (uint32_t rep = 0; rep < FLAGS_repeats; ++rep) {
        // The keys of this repetition, the same for both DBs.
        std::vector<std::string> keys(ops);
        for (uint64_t i = 0; i < ops; ++i) {
          if (w == "unique_insert") keys[i] = dlcbf::bench::Loaded(FLAGS_num_keys + rep * ops + i);
          if (w == "rmw") keys[i] = dlcbf::bench::Loaded(live_ids[(rep * ops + i) % live_ids.size()]);
          if (w == "absent_get") keys[i] = dlcbf::bench::Missing(rng() % FLAGS_num_keys);
        }
        double secs[2] = {0, 0};
        for (uint64_t begin = 0, turn = 0; begin < ops; begin += FLAGS_chunk, ++turn) {
          const uint64_t end = std::min(ops, begin + FLAGS_chunk);
          for (int k = 0; k < 2; ++k) {
            const int d = static_cast<int>((turn + rep + k) % 2);
            Db& db = dbs[d];
            std::string v;
            rocksdb::Transaction* txn = nullptr;
            const auto t0 = Clock::now();
            auto last = t0;
            for (uint64_t i = begin; i < end; ++i) {
              if (reads) {
                if ((i - begin) % FLAGS_gets_per_txn == 0) {
                  if (txn != nullptr) txn->Rollback().PermitUncheckedError();
                  txn = db.Begin(txn);
                }
                if (!txn->Get(rocksdb::ReadOptions(), keys[i], &v).IsNotFound()) Check(rocksdb::Status::Corruption("absent key found"), "absent_get");
              } else {
                txn = db.Begin(txn);
                rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), keys[i], &v);
                if (w == "unique_insert" && !s.IsNotFound()) Check(rocksdb::Status::Corruption("new key found"), "unique_insert");
                if (w == "rmw" && !s.ok()) Check(s, "rmw GetForUpdate");
                Check(txn->Put(keys[i], w == "rmw" ? value2 : value), "txn Put");
                Check(txn->Commit(), "Commit");
              }
              const auto now = Clock::now();
              series[d].ns.push_back(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count()));
              last = now;
            }
            if (txn != nullptr) {
              if (reads) txn->Rollback().PermitUncheckedError();
              delete txn;
            }
            secs[d] += std::chrono::duration<double>(Clock::now() - t0).count();
          }
        }
        for (int d = 0; d < 2; ++d) {
          series[d].secs.push_back(secs[d]);
          series[d].ops = ops;
        }
      }
      for (int d = 0; d < 2; ++d) {
        Series& s = series[d];
        const double med = s.Median();
        std::printf("%s kind=%s workload=%s db=%s ops=%" PRIu64 " kops_per_sec=%.1f us_per_op=%.3f us_min=%.3f "
                    "us_max=%.3f p50_us=%.2f p99_us=%.2f p999_us=%.2f reps=%u\n",
                    kTool, kind.c_str(), w.c_str(), dbs[d].name.c_str(), s.ops, s.ops / med / 1000.0,
                    med * 1e6 / s.ops, *std::min_element(s.secs.begin(), s.secs.end()) * 1e6 / s.ops,
                    *std::max_element(s.secs.begin(), s.secs.end()) * 1e6 / s.ops, s.Pct(0.50), s.Pct(0.99),
                    s.Pct(0.999), FLAGS_repeats);
      }
      std::vector<double> ratio;  // livekey throughput / plain throughput, per repetition
      for (uint32_t r = 0; r < FLAGS_repeats; ++r) ratio.push_back(series[0].secs[r] / series[1].secs[r]);
      double goal = 0;
      std::string rule;
      if (w == "unique_insert") {
        goal = kind == "TransactionDB" ? 1.5 : 1.3;
        rule = ">= " + std::to_string(goal).substr(0, 3) + "x";
      } else if (w == "rmw") {
        goal = 1.0 / 1.15;
        rule = "cost <= 1.15x";
      } else {
        goal = 8.0;
        rule = ">= 8x";
      }
      const double m = MedianOf(ratio);
      std::printf("%s goal kind=%s workload=%s livekey/plain throughput per repetition: median %.3fx (min %.3fx, "
                  "max %.3fx) goal %s %s\n",
                  kTool, kind.c_str(), w.c_str(), m, *std::min_element(ratio.begin(), ratio.end()),
                  *std::max_element(ratio.begin(), ratio.end()), rule.c_str(), m >= goal ? "PASS" : "FAIL");
      std::fflush(stdout);
    }
    const dlcbf::LiveKeyStats st = live->GetLiveKeyStats();
    std::printf("%s kind=%s livekey stats: lookups=%" PRIu64 " short_circuited=%" PRIu64 " unverified_reads=%" PRIu64
                " unseen_write_detections=%" PRIu64 " index_inserts=%" PRIu64 "\n",
                kTool, kind.c_str(), st.lookups, st.short_circuited, st.unverified_reads, st.unseen_write_detections,
                Diag(st, "index_inserts"));
    for (Db& d : dbs) delete d.db;
  }
  return 0;
}
