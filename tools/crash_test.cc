// crash_test: SIGKILL crash-recovery test through the dlcbf filters.
//
// The parent runs --cycles kill/reopen cycles. In each cycle it starts a
// child (this binary, --role=child) that opens the DB with the dlcbf:10
// SST filter policy and the dlcbf_index memtable rep, WAL on, and writes,
// deletes and merges continuously (single ops and atomic WriteBatches;
// every --sync_every-th write with WriteOptions::sync). The parent SIGKILLs
// the child at a random moment (--min_kill_ms .. --max_kill_ms after the
// start, so some kills land inside DB::Open's recovery too), reopens the
// DB itself and checks every key of the key space with Get and with
// batched MultiGet (which uses the filters' batched MayMatch):
//   - every acknowledged write is visible with exactly its value
//     (Put value, Merge result, or NotFound after a Delete);
//   - the one write in flight at the kill (intent logged, no ack) is
//     either wholly applied or not at all (a WriteBatch is atomic);
//   - keys never written are NotFound.
// The parent's model then adopts the observed outcome of the in-flight
// write and the next cycle continues on the same DB.
//
// Side log (one file per cycle): the child appends, with one write(2) per
// line on an O_APPEND descriptor,
//     I <op> <kind>:<key>[:<value>] ...   intent, BEFORE the DB write
//     A <op>                               ack, AFTER DB::Write returned OK
// A line written by write(2) is in the kernel's page cache once the call
// returns, so it survives SIGKILL of the process (like RocksDB's WAL, which
// is flushed to the OS before Write returns). For sync writes the ack is
// written after the synced Write returns, and the log is fdatasync'ed.
// A torn last line (impossible with one write(2) per line, checked anyway)
// is ignored.
//
// Exit status 0 iff there were zero mismatches and at least one
// acknowledged write. Summary line:
//   crash_test: cycles=N acked_ops=X inflight_applied=A inflight_lost=L mismatches=0 ...
//
//   build/tools/crash_test --cycles=60          (tools/run.sh crash)
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/filter_policy.h"
#include "dlcbf/rocksdb/registration.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/options.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/utilities/object_registry.h"
#include "rocksdb/write_batch.h"
#include "tests/rocksdb_test_util.h"

DEFINE_string(role, "parent", "parent (runs the cycles) or child (the writer)");
DEFINE_string(db, "", "DB directory (default: $TEST_TMPDIR or /tmp, /dlcbf_crash_test_<pid>)");
DEFINE_string(log, "", "child: side log file");
DEFINE_int32(cycles, 20, "kill/reopen cycles");
DEFINE_int32(min_kill_ms, 80, "earliest kill after the child starts (ms)");
DEFINE_int32(max_kill_ms, 900, "latest kill after the child starts (ms)");
DEFINE_int32(keys, 4000, "key space");
DEFINE_int32(value_size, 48, "bytes of padding in Put values");
DEFINE_int32(sync_every, 8, "every n-th write uses WriteOptions::sync (0 = never)");
DEFINE_int32(batch_every, 5, "every n-th write is a WriteBatch of 2..8 ops (0 = never)");
DEFINE_string(filter_policy, "dlcbf:10", "SST filter policy id");
DEFINE_string(memtable, "dlcbf_index:20000", "memtable rep id (empty = RocksDB's default skiplist)");
DEFINE_uint64(seed, 0, "random seed (0 = from the clock; printed)");
DEFINE_uint64(child_seed, 1, "child: random seed");
DEFINE_int32(cycle, 0, "child: cycle number (for unique values)");
DEFINE_bool(keep_db, false, "keep the DB directory at the end");
DEFINE_bool(verbose, false, "print one line per cycle");
DEFINE_bool(negative_control, false,
            "self-check of the checker: the child writes with the WAL disabled, so acknowledged "
            "writes ARE lost at the kill and the run must report mismatches");

namespace {


std::string KeyOf(uint32_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "k%07u", i);
  return buf;
}

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "crash_test: FATAL: %s\n", msg.c_str());
  std::exit(2);
}

rocksdb::Status MakeOptions(rocksdb::Options* o, std::shared_ptr<rocksdb::Statistics>* stats) {
  dlcbf::RegisterAll(*rocksdb::ObjectLibrary::Default());
  rocksdb::ConfigOptions cfg;
  rocksdb::BlockBasedTableOptions t;
  rocksdb::Status s = rocksdb::FilterPolicy::CreateFromString(cfg, FLAGS_filter_policy, &t.filter_policy);
  if (!s.ok()) return s;
  if (!dlcbf::IsDLeftFilterPolicy(t.filter_policy.get())) {
    return rocksdb::Status::InvalidArgument("--filter_policy is not a dlcbf policy");
  }
  o->table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  if (!FLAGS_memtable.empty()) {
    s = rocksdb::MemTableRepFactory::CreateFromString(cfg, FLAGS_memtable, &o->memtable_factory);
    if (s.IsNotSupported() || s.IsNotFound()) {
      // Not registered in this build (the dlcbf_index rep is newer than the
      // filter policy): say so once and test the filter policy alone.
      static bool warned = false;
      if (!warned) {
        std::fprintf(stderr, "crash_test: WARNING: memtable rep \"%s\" unavailable (%s); using the skiplist\n",
                     FLAGS_memtable.c_str(), s.ToString().c_str());
        warned = true;
      }
      o->memtable_factory.reset(new rocksdb::SkipListFactory);
    } else if (!s.ok()) {
      return s;
    }
  }
  o->create_if_missing = true;
  o->merge_operator = std::make_shared<dlcbf::testing_util::AppendOperator>();
  // Small buffers and files: flushes, L0 compactions and several SSTs (so
  // several filter blocks) within a few hundred milliseconds of writing.
  o->write_buffer_size = 64 << 10;
  o->max_write_buffer_number = 3;
  o->target_file_size_base = 128 << 10;
  o->max_bytes_for_level_base = 512 << 10;
  o->level0_file_num_compaction_trigger = 3;
  o->max_background_jobs = 2;
  o->stats_dump_period_sec = 0;
  if (stats) {
    *stats = rocksdb::CreateDBStatistics();
    o->statistics = *stats;
  }
  return rocksdb::Status::OK();
}

// ---- child ------------------------------------------------------------------

struct SubOp {
  char kind;  // 'P' put, 'D' delete, 'M' merge
  uint32_t key;
  std::string value;  // put value or merge operand
};

void WriteLine(int fd, const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Die(std::string("write to side log: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
}

int RunChild() {
  if (FLAGS_log.empty()) Die("--log is required for --role=child");
  int fd = ::open(FLAGS_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) Die("open side log: " + std::string(std::strerror(errno)));
  rocksdb::Options o;
  rocksdb::Status s = MakeOptions(&o, nullptr);
  if (!s.ok()) Die("options: " + s.ToString());
  rocksdb::DB* raw = nullptr;
  s = dlcbf::compat::OpenDB(o, FLAGS_db, &raw);
  if (!s.ok()) Die("child open: " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::mt19937_64 rng(FLAGS_child_seed);
  const std::string pad(static_cast<size_t>(std::max(0, FLAGS_value_size)), 'x');
  for (uint64_t op = 1;; ++op) {
    std::vector<SubOp> ops;
    const bool batch = FLAGS_batch_every > 0 && op % static_cast<uint64_t>(FLAGS_batch_every) == 0;
    const int n = batch ? 2 + static_cast<int>(rng() % 7) : 1;
    for (int j = 0; j < n; ++j) {
      SubOp so;
      const uint32_t r = static_cast<uint32_t>(rng() % 100);
      so.kind = r < 55 ? 'P' : r < 75 ? 'D' : 'M';
      so.key = static_cast<uint32_t>(rng() % static_cast<uint64_t>(FLAGS_keys));
      char tag[64];
      std::snprintf(tag, sizeof(tag), "%c%d.%" PRIu64 ".%d", so.kind == 'P' ? 'v' : 'm', FLAGS_cycle, op, j);
      if (so.kind == 'P') so.value = std::string(tag) + pad;
      if (so.kind == 'M') so.value = tag;
      ops.push_back(std::move(so));
    }
    const bool sync = FLAGS_sync_every > 0 && op % static_cast<uint64_t>(FLAGS_sync_every) == 0;
    std::string line = "I " + std::to_string(op);
    rocksdb::WriteBatch wb;
    for (const SubOp& so : ops) {
      const std::string k = KeyOf(so.key);
      line += ' ';
      line += so.kind;
      line += ':' + std::to_string(so.key);
      if (so.kind != 'D') line += ':' + so.value;
      if (so.kind == 'P') wb.Put(k, so.value);
      if (so.kind == 'D') wb.Delete(k);
      if (so.kind == 'M') wb.Merge(k, so.value);
    }
    line += '\n';
    WriteLine(fd, line);  // intent
    rocksdb::WriteOptions wo;
    wo.sync = sync && !FLAGS_negative_control;
    wo.disableWAL = FLAGS_negative_control;
    if (batch) {
      s = db->Write(wo, &wb);
    } else if (ops[0].kind == 'P') {
      s = db->Put(wo, KeyOf(ops[0].key), ops[0].value);
    } else if (ops[0].kind == 'D') {
      s = db->Delete(wo, KeyOf(ops[0].key));
    } else {
      s = db->Merge(wo, KeyOf(ops[0].key), ops[0].value);
    }
    if (!s.ok()) Die("child write: " + s.ToString());
    WriteLine(fd, "A " + std::to_string(op) + "\n");  // ack, after Write returned
    if (sync && ::fdatasync(fd) != 0) Die("fdatasync side log");
  }
}

// ---- parent -----------------------------------------------------------------

using Model = std::vector<std::optional<std::string>>;

void Apply(const SubOp& so, Model* m) {
  auto& v = (*m)[so.key];
  if (so.kind == 'P') v = so.value;
  if (so.kind == 'D') v.reset();
  if (so.kind == 'M') v = v ? *v + "," + so.value : so.value;
}

struct LogOp {
  uint64_t id = 0;
  std::vector<SubOp> ops;
  bool acked = false;
};

// Parses one cycle's side log. Fails (returns false) on a malformed log:
// intents must be numbered 1, 2, ... and at most the last may lack an ack.
bool ParseLog(const std::string& path, std::vector<LogOp>* out, std::string* why) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // torn last line: never acknowledged
    std::istringstream ls(text.substr(pos, nl - pos));
    pos = nl + 1;
    std::string tag;
    uint64_t id = 0;
    ls >> tag >> id;
    if (tag == "I") {
      if (!out->empty() && !out->back().acked) {
        *why = "intent " + std::to_string(id) + " follows an unacknowledged intent";
        return false;
      }
      if (id != out->size() + 1) {
        *why = "intent numbering";
        return false;
      }
      LogOp op;
      op.id = id;
      std::string tok;
      while (ls >> tok) {
        SubOp so;
        so.kind = tok[0];
        size_t c1 = tok.find(':'), c2 = tok.find(':', c1 + 1);
        so.key = static_cast<uint32_t>(std::stoul(tok.substr(c1 + 1, c2 - c1 - 1)));
        if (so.key >= static_cast<uint32_t>(FLAGS_keys)) {
          *why = "key out of range";
          return false;
        }
        if (c2 != std::string::npos) so.value = tok.substr(c2 + 1);
        op.ops.push_back(std::move(so));
      }
      out->push_back(std::move(op));
    } else if (tag == "A") {
      if (out->empty() || out->back().id != id || out->back().acked) {
        *why = "ack " + std::to_string(id) + " without its intent";
        return false;
      }
      out->back().acked = true;
    } else {
      *why = "unknown line";
      return false;
    }
  }
  return true;
}

struct Totals {
  uint64_t acked_ops = 0, inflight_applied = 0, inflight_lost = 0, inflight_same = 0;
  uint64_t mismatches = 0, checked_keys = 0, live_keys = 0, filter_useful = 0, ssts = 0;
  uint64_t cycles_with_writes = 0;
};

std::string Show(const std::optional<std::string>& v) {
  if (!v) return "<NotFound>";
  return v->size() > 60 ? "\"" + v->substr(0, 60) + "...\"" : "\"" + *v + "\"";
}

// Reads the DB's view of every key (Get and batched MultiGet; they must
// agree). Keys absent from the DB are nullopt.
bool ReadAll(rocksdb::DB* db, Model* got, Totals* t) {
  const int n = FLAGS_keys;
  got->assign(static_cast<size_t>(n), std::nullopt);
  rocksdb::ReadOptions ro;
  for (int i = 0; i < n; ++i) {
    std::string v;
    rocksdb::Status s = db->Get(ro, KeyOf(static_cast<uint32_t>(i)), &v);
    if (s.ok()) {
      (*got)[static_cast<size_t>(i)] = v;
    } else if (!s.IsNotFound()) {
      std::fprintf(stderr, "crash_test: Get(%s): %s\n", KeyOf(static_cast<uint32_t>(i)).c_str(), s.ToString().c_str());
      ++t->mismatches;
    }
  }
  constexpr int kBatch = 32;  // MultiGet's batch size
  for (int base = 0; base < n; base += kBatch) {
    const int m = std::min(kBatch, n - base);
    std::vector<std::string> ks;
    for (int i = 0; i < m; ++i) ks.push_back(KeyOf(static_cast<uint32_t>(base + i)));
    std::vector<rocksdb::Slice> keys(ks.begin(), ks.end());
    std::vector<rocksdb::PinnableSlice> vals(static_cast<size_t>(m));
    std::vector<rocksdb::Status> sts(static_cast<size_t>(m));
    db->MultiGet(ro, db->DefaultColumnFamily(), static_cast<size_t>(m), keys.data(), vals.data(), sts.data(),
                 /*sorted_input=*/true);
    for (int i = 0; i < m; ++i) {
      const auto& want = (*got)[static_cast<size_t>(base + i)];
      std::optional<std::string> mg;
      if (sts[static_cast<size_t>(i)].ok()) {
        mg = vals[static_cast<size_t>(i)].ToString();
      } else if (!sts[static_cast<size_t>(i)].IsNotFound()) {
        std::fprintf(stderr, "crash_test: MultiGet(%s): %s\n", ks[static_cast<size_t>(i)].c_str(),
                     sts[static_cast<size_t>(i)].ToString().c_str());
        ++t->mismatches;
        continue;
      }
      if (mg != want) {
        std::fprintf(stderr, "crash_test: MISMATCH Get and MultiGet disagree on %s: %s vs %s\n",
                     ks[static_cast<size_t>(i)].c_str(), Show(want).c_str(), Show(mg).c_str());
        ++t->mismatches;
      }
    }
  }
  // Keys never written must be absent (the filters answer "no" for most).
  for (int i = 0; i < 256; ++i) {
    std::string v;
    rocksdb::Status s = db->Get(ro, "absent" + std::to_string(i), &v);
    if (!s.IsNotFound()) {
      std::fprintf(stderr, "crash_test: MISMATCH never-written key absent%d: %s\n", i, s.ToString().c_str());
      ++t->mismatches;
    }
  }
  return true;
}

int Verify(int cycle, const std::vector<LogOp>& log, Model* model, Totals* t) {
  Model before = *model;
  const LogOp* pending = nullptr;
  for (const LogOp& op : log) {
    if (op.acked) {
      for (const SubOp& so : op.ops) Apply(so, model);
      ++t->acked_ops;
    } else {
      pending = &op;
    }
  }
  if (!log.empty()) ++t->cycles_with_writes;
  Model with = *model;
  if (pending) {
    for (const SubOp& so : pending->ops) Apply(so, &with);
  }
  rocksdb::Options o;
  std::shared_ptr<rocksdb::Statistics> stats;
  rocksdb::Status s = MakeOptions(&o, &stats);
  if (!s.ok()) Die(s.ToString());
  rocksdb::DB* raw = nullptr;
  s = dlcbf::compat::OpenDB(o, FLAGS_db, &raw);
  if (!s.ok()) Die("cycle " + std::to_string(cycle) + ": reopen failed: " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  Model got;
  const uint64_t before_mm = t->mismatches;
  ReadAll(db.get(), &got, t);
  // The in-flight write: wholly applied or wholly lost.
  bool is_without = true, is_with = true;
  for (size_t k = 0; k < got.size(); ++k) {
    is_without &= got[k] == (*model)[k];
    is_with &= got[k] == with[k];
  }
  if (is_with && is_without) {
    if (pending) ++t->inflight_same;
  } else if (is_with) {
    ++t->inflight_applied;
    *model = with;
  } else if (is_without) {
    if (pending) ++t->inflight_lost;
  } else {
    // Report every key that matches neither outcome.
    for (size_t k = 0; k < got.size(); ++k) {
      if (got[k] != (*model)[k] && got[k] != with[k]) {
        std::fprintf(stderr, "crash_test: MISMATCH cycle %d key %s: db %s, acknowledged %s%s%s\n", cycle,
                     KeyOf(static_cast<uint32_t>(k)).c_str(), Show(got[k]).c_str(), Show((*model)[k]).c_str(),
                     pending ? ", with the in-flight write " : "", pending ? Show(with[k]).c_str() : "");
        ++t->mismatches;
      } else if (pending && got[k] != (*model)[k]) {
        std::fprintf(stderr, "crash_test: MISMATCH cycle %d key %s: in-flight batch %" PRIu64
                             " applied only in part\n",
                     cycle, KeyOf(static_cast<uint32_t>(k)).c_str(), pending->id);
        ++t->mismatches;
      }
    }
    if (t->mismatches == before_mm) ++t->mismatches;
    *model = got;  // continue from what is there, so later cycles stay meaningful
  }
  t->checked_keys += got.size();
  uint64_t live = 0;
  for (const auto& v : got) live += v.has_value();
  t->live_keys = live;
  t->filter_useful += stats->getTickerCount(rocksdb::BLOOM_FILTER_USEFUL);
  // Every SST must carry our filter.
  rocksdb::TablePropertiesCollection props;
  s = db->GetPropertiesOfAllTables(&props);
  if (!s.ok()) Die("GetPropertiesOfAllTables: " + s.ToString());
  for (const auto& p : props) {
    if (p.second->filter_policy_name != dlcbf::DLeftFilterPolicyName()) {
      std::fprintf(stderr, "crash_test: SST %s has filter policy \"%s\", not dlcbf\n", p.first.c_str(),
                   p.second->filter_policy_name.c_str());
      ++t->mismatches;
    }
  }
  t->ssts = props.size();
  if (FLAGS_verbose) {
    std::printf("cycle %3d: %zu ops logged (%s in flight), %" PRIu64 " live keys, %zu SSTs, filter useful %" PRIu64
                ", mismatches so far %" PRIu64 "\n",
                cycle, log.size(), pending ? "1" : "0", live, props.size(),
                stats->getTickerCount(rocksdb::BLOOM_FILTER_USEFUL), t->mismatches);
  }
  s = db->Close();
  if (!s.ok()) Die("close: " + s.ToString());
  (void)before;
  return 0;
}

int RunParent(const char* self) {
  if (FLAGS_keys < 1 || FLAGS_cycles < 1 || FLAGS_min_kill_ms < 0 || FLAGS_max_kill_ms < FLAGS_min_kill_ms) {
    Die("bad flags: need --keys >= 1, --cycles >= 1, 0 <= --min_kill_ms <= --max_kill_ms");
  }
  uint64_t seed = FLAGS_seed ? FLAGS_seed
                             : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937_64 rng(seed);
  bool temp_db = false;
  if (FLAGS_db.empty()) {
    const char* base = std::getenv("TEST_TMPDIR");
    FLAGS_db = std::string(base && *base ? base : "/tmp") + "/dlcbf_crash_test_" + std::to_string(::getpid());
    temp_db = true;
  }
  if (std::system(("rm -rf '" + FLAGS_db + "'").c_str()) != 0) Die("cannot clear " + FLAGS_db);
  if (::mkdir(FLAGS_db.c_str(), 0755) != 0) Die("mkdir " + FLAGS_db);
  const std::string log_dir = FLAGS_db + ".log";
  if (std::system(("rm -rf '" + log_dir + "'").c_str()) != 0 || ::mkdir(log_dir.c_str(), 0755) != 0) {
    Die("cannot create " + log_dir);
  }
  std::printf("crash_test: seed=%" PRIu64 " cycles=%d keys=%d db=%s filter=%s memtable=%s\n", seed, FLAGS_cycles,
              FLAGS_keys, FLAGS_db.c_str(), FLAGS_filter_policy.c_str(),
              FLAGS_memtable.empty() ? "skiplist" : FLAGS_memtable.c_str());
  std::fflush(stdout);
  Model model(static_cast<size_t>(FLAGS_keys));
  Totals t;
  const auto start = std::chrono::steady_clock::now();
  for (int cycle = 1; cycle <= FLAGS_cycles; ++cycle) {
    const std::string log = log_dir + "/cycle" + std::to_string(cycle);
    std::vector<std::string> args = {self,
                                     "--role=child",
                                     "--db=" + FLAGS_db,
                                     "--log=" + log,
                                     "--keys=" + std::to_string(FLAGS_keys),
                                     "--value_size=" + std::to_string(FLAGS_value_size),
                                     "--sync_every=" + std::to_string(FLAGS_sync_every),
                                     "--batch_every=" + std::to_string(FLAGS_batch_every),
                                     "--filter_policy=" + FLAGS_filter_policy,
                                     "--memtable=" + FLAGS_memtable,
                                     "--cycle=" + std::to_string(cycle),
                                     std::string("--negative_control=") + (FLAGS_negative_control ? "true" : "false"),
                                     "--child_seed=" + std::to_string(rng())};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) Die("fork");
    if (pid == 0) {
      ::execv(self, argv.data());
      std::_Exit(127);
    }
    const int delay = FLAGS_min_kill_ms + static_cast<int>(rng() % static_cast<uint64_t>(FLAGS_max_kill_ms - FLAGS_min_kill_ms + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
      Die("cycle " + std::to_string(cycle) + ": the child exited by itself (status " + std::to_string(status) +
          "); see its message above");
    }
    std::vector<LogOp> ops;
    std::string why;
    if (!ParseLog(log, &ops, &why)) Die("cycle " + std::to_string(cycle) + ": malformed side log: " + why);
    Verify(cycle, ops, &model, &t);
    if (t.mismatches > 0 && !FLAGS_verbose) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("crash_test: cycles=%d acked_ops=%" PRIu64 " inflight_applied=%" PRIu64 " inflight_lost=%" PRIu64
              " inflight_indistinguishable=%" PRIu64 " mismatches=%" PRIu64 " live_keys=%" PRIu64 " ssts=%" PRIu64
              " filter_useful=%" PRIu64 " cycles_with_writes=%" PRIu64 " seconds=%.1f\n",
              FLAGS_cycles, t.acked_ops, t.inflight_applied, t.inflight_lost, t.inflight_same, t.mismatches,
              t.live_keys, t.ssts, t.filter_useful, t.cycles_with_writes, secs);
  if (!FLAGS_keep_db && temp_db) {
    if (std::system(("rm -rf '" + FLAGS_db + "' '" + log_dir + "'").c_str()) != 0) {
      std::fprintf(stderr, "crash_test: could not remove %s\n", FLAGS_db.c_str());
    }
  }
  if (t.mismatches != 0) {
    std::printf("crash_test: FAILED (%" PRIu64 " mismatches; seed %" PRIu64 ")\n", t.mismatches, seed);
    return 1;
  }
  if (t.acked_ops == 0) {
    std::printf("crash_test: FAILED (no write was ever acknowledged; kill window too short?)\n");
    return 1;
  }
  std::printf("crash_test: PASSED\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("SIGKILL crash-recovery test of RocksDB with the dlcbf filters");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_role == "child") return RunChild();
  if (FLAGS_role != "parent") Die("--role must be parent or child");
  // Re-exec this very binary for the child (not fork alone: RocksDB's
  // threads do not survive fork).
  static char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) Die("readlink /proc/self/exe");
  self[n] = '\0';
  return RunParent(self);
}
