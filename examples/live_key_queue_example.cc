// live_key_queue_example: a queue on LiveKeyDB whose consumer Seeks to the
// head without stepping over what it consumed.
//
// A producer appends 50,000 messages under keys "queue/" + a big-endian
// counter; a consumer reads and deletes from the head. A plain RocksDB
// Seek to the head then steps over one tombstone per consumed message
// until a compaction drops them (facebook/rocksdb#5265). LiveKeyDB with
// live_range_lengths counts the live keys per run of 65,536 and of 256
// counters and moves the Seek past the runs with none. The program checks
// that the consumer finds the right head, and that its Seek stepped over
// at most one run's tombstones (RocksDB's perf context), where the base
// DB's own iterator steps over all of them.
//
//   live_key_queue_example [db_dir]
//
// db_dir must not exist (default: a new directory under the system's
// temporary directory); it is removed at the end. Exits 1 on any result
// other than the expected one.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "dlcbf/rocksdb/live_key_db.h"
#include "rocksdb/db.h"
#include "rocksdb/iterator.h"
#include "rocksdb/options.h"
#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"

namespace {

int failures = 0;

void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "FAILED: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}
void Expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "UNEXPECTED: %s\n", what);
    ++failures;
  }
}

// "queue/" + 8-byte big-endian counter: 14 bytes, key order = counter order.
std::string MessageKey(uint64_t i) {
  std::string k = "queue/";
  for (int b = 7; b >= 0; --b) k.push_back(static_cast<char>((i >> (8 * b)) & 0xff));
  return k;
}

// The consumer's Seek to the head: the first key, and the tombstones the
// Seek stepped over.
std::string Head(rocksdb::DB* db, uint64_t* tombstones) {
  rocksdb::get_perf_context()->Reset();
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  it->Seek("queue/");
  *tombstones = rocksdb::get_perf_context()->internal_delete_skipped_count;
  Check(it->status(), "iterator");
  return it->Valid() ? it->key().ToString() : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1]
               : (std::filesystem::temp_directory_path() /
                  ("live_key_queue_example." + std::to_string(::getpid())))
                     .string();
  constexpr uint64_t kMessages = 50000, kConsumed = 49000;
  // [readme-snippet:livekey_queue]
  rocksdb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;  // a new DB
  dlcbf::LiveKeyIndexOptions index_options;
  index_options.expected_keys = 1'000'000;
  index_options.live_range_lengths = {12, 13};  // 14-byte keys: runs of 65,536 and 256 counters

  dlcbf::LiveKeyDB* db = nullptr;
  Check(dlcbf::LiveKeyDB::Open(options, index_options, path, &db), "Open");
  for (uint64_t i = 0; i < kMessages; ++i) Check(db->Put(rocksdb::WriteOptions(), MessageKey(i), "m"), "Put");
  for (uint64_t i = 0; i < kConsumed; ++i) Check(db->Delete(rocksdb::WriteOptions(), MessageKey(i)), "Delete");
  db->WaitForDeferredChecks(10000);  // (deletes leave the counts within milliseconds; the checks below count exactly)

  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  it->Seek("queue/");  // moved past the consumed runs: the head at once
  // [/readme-snippet]
  Expect(it->Valid() && it->key().ToString() == MessageKey(kConsumed), "the head is the first unconsumed message");
  it.reset();

  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  uint64_t ours = 0, theirs = 0;
  Expect(Head(db, &ours) == MessageKey(kConsumed), "LiveKeyDB's Seek finds the head");
  Expect(Head(db->GetBaseDB(), &theirs) == MessageKey(kConsumed), "the base DB's Seek finds the head");
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  const dlcbf::LiveKeyStats stats = db->GetLiveKeyStats();
  std::printf("head Seek: LiveKeyDB stepped over %" PRIu64 " tombstones, the base DB's iterator %" PRIu64
              "; Seeks moved past consumed runs: %" PRIu64 "\n",
              ours, theirs, stats.moved_seeks);
  Expect(ours < 256, "LiveKeyDB's Seek steps over at most one run's tombstones");
  Expect(theirs >= kConsumed, "the base DB's Seek steps over every consumed message");
  Expect(stats.moved_seeks >= 2, "both LiveKeyDB Seeks were moved");

  Check(db->Close(), "Close");
  delete db;
  std::filesystem::remove_all(path);
  if (failures > 0) return 1;
  std::printf("live_key_queue_example: OK\n");
  return 0;
}
