// live_key_seek_bench: Seeks into regions of deleted keys, LiveKeyDB
// against a plain RocksDB DB, in one process (issue #56's benchmarks).
//
// A Seek into a run of tombstones steps over each of them until a
// compaction drops them (facebook/rocksdb#10300: 100,000 keys under one
// prefix, all deleted, Seek(prefix) from 20 us to 13 ms; #5265: queue
// consumers). Scenarios, each built in both DBs with the same writes
// (automatic compactions off, so the tombstones stay, as in those reports)
// and timed in interleaved rounds, medians of --repeats:
//   prefix_dead  --prefix_keys keys under one 8-byte prefix (a fixed-prefix
//                extractor), all deleted; Seek(prefix) with
//                prefix_same_as_start, --seeks times. Goal >= 1000x.
//   queue_<p>    --queue_keys keys appended in order, deleted from the
//                head; after p = 50, 90 and 99 % are consumed, the consumer
//                Seeks to the head (an iterator bounded below by the
//                queue's prefix) and reads the first live key. Goal
//                >= 20x at 99 %.
//   scan         no deletes (--scan_repeats rounds): Seek to a random key and --scan_next Nexts
//                within its prefix (YCSB-E-like; prefix_same_as_start, so
//                LiveKeyDB's iterator wraps RocksDB's). Goal: cost <= 1.05x.
//   writes       --write_keys new keys Put (WAL on), in rounds interleaved
//                between the DBs: LiveKeyDB with the counts against
//                LiveKeyDB without them (config nocounts). Goal: cost
//                <= 1.10x. The counts' memory per sized key is printed.
// One line per scenario and DB:
//   live_key_seek_bench config=<plain|livekey|nocounts> workload=<w> ops=<n> us_per_op=<med> (<min>-<max>) deletes_skipped_per_op=<n>
// (deletes_skipped_per_op: RocksDB's perf context
// internal_delete_skipped_count, the tombstones a Seek stepped over), then
// the goal lines. Every Seek's answer is compared with the plain DB's (a
// difference is a wrong answer: exit 1).
//
// LiveKeyDB (config livekey) runs with live_prefix_counts and
// live_range_lengths {14, 15} (LiveKeyIndexOptions): a Seek into a prefix
// with no live key is answered from the counts; the queue consumer's Seek,
// into a prefix that still holds live keys, is moved past the regions of
// 65,536 and 256 consumed counters and steps over at most one region's
// tombstones. Config nocounts is LiveKeyDB without either (the write
// cost's baseline); it gets every write too, and its answers are compared
// as well.
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

#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/live_key_db.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/iterator.h"
#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table.h"
#include "tools/bench/bench_banner.h"
#include "tools/bench/deep_lsm.h"

DEFINE_string(db_dir, "/tmp/live_key_seek_bench", "parent directory of the benchmark DBs (wiped)");
DEFINE_uint64(prefix_keys, 100000, "keys under the dead prefix (prefix_dead)");
DEFINE_uint64(queue_keys, 1000000, "keys appended to the queue (queue_*)");
DEFINE_uint64(scan_keys, 200000, "keys of the scan workload");
DEFINE_uint64(seeks, 200, "Seeks per workload, DB and repetition (prefix_dead; scan: x100)");
DEFINE_uint64(queue_seeks, 5, "Seeks per queue_* workload, DB and repetition (each steps over up to a million tombstones in a plain DB)");
DEFINE_uint64(write_keys, 300000, "keys Put by the writes workload, per DB (split over --repeats rounds)");
DEFINE_uint32(scan_next, 10, "Nexts after each Seek of the scan workload");
DEFINE_uint32(repeats, 3, "repetitions (interleaved between the DBs); medians reported");
DEFINE_uint32(scan_repeats, 9, "repetitions of the scan workload (its ratio is near 1: more rounds for a stable median)");
DEFINE_uint32(value_size, 100, "value bytes");
DEFINE_uint64(seed, 5, "random seed");

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr const char* kTool = "live_key_seek_bench";

void Check(const rocksdb::Status& s, const char* what) { dlcbf::bench::CheckOk(s, kTool, what); }

// Keys: an 8-byte prefix, then an 8-byte big-endian counter (key order =
// counter order).
std::string Key(const char prefix[9], uint64_t i) {
  std::string k(prefix, 8);
  for (int b = 7; b >= 0; --b) k.push_back(static_cast<char>((i >> (8 * b)) & 0xff));
  return k;
}

rocksdb::Options MakeOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.disable_auto_compactions = true;  // the tombstones stay, as in the reports
  o.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(8));
  o.write_buffer_size = 64 << 20;
  rocksdb::BlockBasedTableOptions t;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

struct Db {
  std::string name;
  rocksdb::DB* db = nullptr;            // what the workload uses
  dlcbf::LiveKeyDB* live = nullptr;     // owns db when set
  std::unique_ptr<rocksdb::DB> plain;   // owns db otherwise
};

struct Answer {
  bool valid = false;
  std::string key;
};

// One Seek as the scenario makes it; returns what it found.
Answer SeekOnce(rocksdb::DB* db, const rocksdb::ReadOptions& ro, const std::string& target, uint32_t nexts) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  it->Seek(target);
  Answer a;
  for (uint32_t i = 0; i < nexts && it->Valid(); ++i) it->Next();
  if (it->Valid()) {
    a.valid = true;
    a.key = it->key().ToString();
  }
  Check(it->status(), "iterator");
  return a;
}

struct Timing {
  std::vector<double> us;  // per op, one per repetition
  double skipped = 0;      // tombstones stepped over per op (last repetition)
};

double Med(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int wrong = 0;

// Runs `seeks` Seeks per DB per repetition, interleaved; compares answers.
void Time(std::vector<Db>& dbs, std::vector<Timing>* t, const rocksdb::ReadOptions& ro,
          const std::vector<std::string>& targets, uint32_t nexts, uint32_t repeats = FLAGS_repeats) {
  t->assign(dbs.size(), Timing());
  for (uint32_t r = 0; r < repeats; ++r) {
    std::vector<std::vector<Answer>> answers(dbs.size());
    for (size_t k = 0; k < dbs.size(); ++k) {
      const size_t d = (k + r) % dbs.size();
      rocksdb::get_perf_context()->Reset();
      const auto t0 = Clock::now();
      for (const std::string& target : targets) answers[d].push_back(SeekOnce(dbs[d].db, ro, target, nexts));
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      (*t)[d].us.push_back(us / static_cast<double>(targets.size()));
      (*t)[d].skipped = static_cast<double>(rocksdb::get_perf_context()->internal_delete_skipped_count) /
                        static_cast<double>(targets.size());
    }
    for (size_t d = 1; d < dbs.size(); ++d) {
      for (size_t i = 0; i < targets.size(); ++i) {
        if (answers[d][i].valid != answers[0][i].valid || answers[d][i].key != answers[0][i].key) {
          if (wrong++ < 5) {
            std::fprintf(stderr, "%s: WRONG ANSWER: %s's Seek %zu differs from %s's\n", kTool, dbs[d].name.c_str(), i,
                         dbs[0].name.c_str());
          }
        }
      }
    }
  }
}

void Line(const std::vector<Db>& dbs, const std::vector<Timing>& t, const char* workload, uint64_t ops) {
  for (size_t d = 0; d < dbs.size(); ++d) {
    std::printf("%s config=%-8s workload=%-11s ops=%-6" PRIu64 " us_per_op=%10.3f (%.3f-%.3f) deletes_skipped_per_op=%.0f\n",
                kTool, dbs[d].name.c_str(), workload, ops, Med(t[d].us),
                *std::min_element(t[d].us.begin(), t[d].us.end()), *std::max_element(t[d].us.begin(), t[d].us.end()),
                t[d].skipped);
  }
  std::fflush(stdout);
}

// livekey's throughput over plain's (plain's time over livekey's).
double Speedup(const std::vector<Timing>& t) { return Med(t[0].us) / Med(t[1].us); }

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("Seeks into deleted regions: LiveKeyDB against a plain DB (see the file's comment)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_repeats < 1 || FLAGS_seeks < 1 || FLAGS_queue_seeks < 1) {
    std::fprintf(stderr, "%s: --repeats, --seeks and --queue_seeks must be >= 1\n", kTool);
    return 2;
  }
  dlcbf::bench::PrintBuildBanner();
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  fs::remove_all(FLAGS_db_dir);
  fs::create_directories(FLAGS_db_dir);

  std::vector<Db> dbs(3);
  dbs[0].name = "plain";
  Check(dlcbf::compat::OpenDB(MakeOptions(), FLAGS_db_dir + "/plain", &dbs[0].db), "plain Open");
  dbs[0].plain.reset(dbs[0].db);
  dlcbf::LiveKeyIndexOptions io;
  io.expected_keys = FLAGS_prefix_keys + FLAGS_queue_keys + FLAGS_scan_keys + FLAGS_write_keys;
  for (size_t d = 1; d < 3; ++d) {
    dbs[d].name = d == 1 ? "livekey" : "nocounts";
    io.live_prefix_counts = d == 1;
    io.live_range_lengths = d == 1 ? std::vector<uint32_t>{14, 15} : std::vector<uint32_t>{};
    Check(dlcbf::LiveKeyDB::Open(MakeOptions(), io, FLAGS_db_dir + "/" + dbs[d].name, &dbs[d].live),
          "LiveKeyDB Open");
    dbs[d].db = dbs[d].live;
  }

  const std::string value(FLAGS_value_size, 'v');
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // (the load; both DBs alike)
  auto each = [&](auto&& fn) {
    for (Db& d : dbs) fn(d.db);
  };
  auto flush = [&] { each([](rocksdb::DB* db) { Check(db->Flush(rocksdb::FlushOptions()), "Flush"); }); };

  // ---- prefix_dead: #10300's scenario --------------------------------------
  const char kDead[9] = "/prefix/";
  each([&](rocksdb::DB* db) {
    for (uint64_t i = 0; i < FLAGS_prefix_keys; ++i) Check(db->Put(wo, Key(kDead, i), value), "Put");
  });
  flush();
  each([&](rocksdb::DB* db) {
    for (uint64_t i = 0; i < FLAGS_prefix_keys; ++i) Check(db->Delete(wo, Key(kDead, i)), "Delete");
  });
  flush();
  // ---- scan: live keys under other prefixes --------------------------------
  const char kScan[9] = "/scan/00";
  each([&](rocksdb::DB* db) {
    for (uint64_t i = 0; i < FLAGS_scan_keys; ++i) Check(db->Put(wo, Key(kScan, i), value), "Put");
  });
  flush();

  // The scan keys compacted alike in every DB: LiveKeyDB's background
  // checkpoints flush its memtable at other points (disableWAL writes), and
  // one more L0 file costs a Seek more than the iterator does. (The other
  // workloads' tombstones stay: their files do not overlap the scan keys.)
  {
    const std::string b(kScan, 8), e = std::string(kScan, 8) + "\xff";
    const rocksdb::Slice bs(b), es(e);
    each([&](rocksdb::DB* db) { Check(db->CompactRange(rocksdb::CompactRangeOptions(), &bs, &es), "CompactRange"); });
  }
  std::printf("%s files:", kTool);
  for (const Db& d : dbs) {
    std::string files;
    d.db->GetProperty("rocksdb.num-files-at-level0", &files);
    std::string l1;
    d.db->GetProperty("rocksdb.num-files-at-level1", &l1);
    std::printf(" %s=%s+%s", d.name.c_str(), files.c_str(), l1.c_str());
  }
  std::printf(" (L0+L1)\n");
  std::vector<Timing> t;
  {
    rocksdb::ReadOptions ro;
    ro.prefix_same_as_start = true;
    const std::vector<std::string> targets(FLAGS_seeks, std::string(kDead, 8));
    Time(dbs, &t, ro, targets, 0);
    Line(dbs, t, "prefix_dead", FLAGS_seeks);
  }
  const double dead = Speedup(t);
  {
    std::mt19937_64 rng(FLAGS_seed);
    std::vector<std::string> targets;
    for (uint64_t i = 0; i < FLAGS_seeks * 100; ++i) targets.push_back(Key(kScan, rng() % FLAGS_scan_keys));
    rocksdb::ReadOptions ro;
    ro.prefix_same_as_start = true;  // (the scan keys share one prefix: LiveKeyDB's iterator wraps RocksDB's)
    Time(dbs, &t, ro, targets, FLAGS_scan_next, std::max<uint32_t>(1, FLAGS_scan_repeats));
    Line(dbs, t, "scan", targets.size());
  }
  const double scan_cost = 1.0 / Speedup(t);

  // ---- queue: appended in order, consumed from the head --------------------
  const char kQueue[9] = "/queue//";
  each([&](rocksdb::DB* db) {
    for (uint64_t i = 0; i < FLAGS_queue_keys; ++i) Check(db->Put(wo, Key(kQueue, i), value), "Put");
  });
  flush();
  uint64_t consumed = 0;
  double queue99 = 0;
  for (int pct : {50, 90, 99}) {
    const uint64_t upto = FLAGS_queue_keys * static_cast<uint64_t>(pct) / 100;
    each([&](rocksdb::DB* db) {
      for (uint64_t i = consumed; i < upto; ++i) Check(db->Delete(wo, Key(kQueue, i)), "Delete");
    });
    consumed = upto;
    flush();
    rocksdb::ReadOptions ro;
    ro.prefix_same_as_start = true;  // the consumer reads its own queue
    const std::vector<std::string> targets(FLAGS_queue_seeks, std::string(kQueue, 8));
    Time(dbs, &t, ro, targets, 0);
    const std::string name = "queue_" + std::to_string(pct);
    Line(dbs, t, name.c_str(), FLAGS_queue_seeks);
    if (pct == 99) queue99 = Speedup(t);
  }

  // ---- writes: the counts' cost on Put ---------------------------------------
  double write_cost = 0;
  {
    std::vector<Timing> wt(dbs.size());
    const uint64_t per_round = std::max<uint64_t>(1, FLAGS_write_keys / FLAGS_repeats);
    const char kWrite[9] = "/write//";
    std::mt19937_64 rng(FLAGS_seed + 1);
    for (uint32_t r = 0; r < FLAGS_repeats; ++r) {
      std::vector<std::string> keys;
      for (uint64_t i = 0; i < per_round; ++i) keys.push_back(Key(kWrite, rng()));
      for (size_t k = 0; k < dbs.size(); ++k) {
        const size_t d = (k + r) % dbs.size();
        const auto t0 = Clock::now();
        for (const std::string& key : keys) Check(dbs[d].db->Put(rocksdb::WriteOptions(), key, value), "Put");
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        wt[d].us.push_back(us / static_cast<double>(per_round));
      }
    }
    Line(dbs, wt, "writes", per_round);
    write_cost = Med(wt[1].us) / Med(wt[2].us);
  }
  const dlcbf::LiveKeyStats st = dbs[1].live->GetLiveKeyStats();
  uint64_t region_bytes = 0;
  for (const dlcbf::LiveKeyCfStats& c : st.column_families) region_bytes += c.region_count_bytes;
  std::printf("%s counts: %" PRIu64 " bytes for %" PRIu64 " sized keys (%.2f bytes per key); dead_prefix_seeks=%" PRIu64
              " moved_seeks=%" PRIu64 "\n",
              kTool, region_bytes, io.expected_keys, static_cast<double>(region_bytes) / static_cast<double>(io.expected_keys),
              st.dead_prefix_seeks, st.moved_seeks);

  std::printf("%s goal prefix_dead livekey %.3fx plain (throughput, goal >= 1000x) %s\n", kTool, dead,
              dead >= 1000 ? "PASS" : "FAIL");
  std::printf("%s goal queue_99    livekey %.3fx plain (throughput, goal >= 20x) %s\n", kTool, queue99,
              queue99 >= 20 ? "PASS" : "FAIL");
  std::printf("%s goal scan        livekey %.3fx plain (cost, goal <= 1.05x) %s\n", kTool, scan_cost,
              scan_cost <= 1.05 ? "PASS" : "FAIL");
  std::printf("%s goal writes      livekey %.3fx nocounts (cost, goal <= 1.10x) %s\n", kTool, write_cost,
              write_cost <= 1.10 ? "PASS" : "FAIL");

  dbs[0].plain.reset();
  for (size_t d = 1; d < 3; ++d) {
    Check(dbs[d].live->Close(), "Close");
    delete dbs[d].live;
  }
  fs::remove_all(FLAGS_db_dir);
  if (wrong > 0) {
    std::fprintf(stderr, "%s: %d wrong answers\n", kTool, wrong);
    return 1;
  }
  return 0;
}
