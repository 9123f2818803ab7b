// options_file_example: the SST filter policy dlcbf:10 and the memtable
// index dlcbf_index, selected by id in a RocksDB OPTIONS file
// (examples/OPTIONS.ini) and loaded with rocksdb::LoadOptionsFromFile.
//
// It loads the file, opens a new DB with it, writes keys, flushes them into
// an SST file, writes more into the memtable, reads present and absent
// keys, and checks that both extensions did their job: every SST file names
// the dlcbf filter, the SST filter answered "no" for absent keys, and the
// memtable index let absent keys skip the memtable search.
//
//   options_file_example <OPTIONS file> [db_dir]
//
// db_dir must not exist (default: a new directory under the system's
// temporary directory); it is removed at the end. Exits 1 on any result
// other than the expected one.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dlcbf/rocksdb/memtable_index.h"
#include "dlcbf/rocksdb/registration.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/utilities/object_registry.h"
#include "rocksdb/utilities/options_util.h"
#include "rocksdb/version.h"

namespace {

int failures = 0;

void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "FAILED: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}
void Expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "UNEXPECTED: %s\n", what.c_str());
    ++failures;
  }
}

rocksdb::Status OpenDB(const rocksdb::Options& options, const std::string& path,
                       std::unique_ptr<rocksdb::DB>* db) {
#if ROCKSDB_MAJOR >= 11
  return rocksdb::DB::Open(options, path, db);
#else
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  db->reset(raw);
  return s;
#endif
}

std::string Key(const char* prefix, int i) { return prefix + std::to_string(100000 + i); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: options_file_example <OPTIONS file> [db_dir]\n");
    return 2;
  }
  const std::string options_file = argv[1];
  const std::string path =
      argc > 2 ? argv[2]
               : (std::filesystem::temp_directory_path() /
                  ("options_file_example-" + std::to_string(getpid())))
                     .string();

  // [readme-snippet:options-load]
  // A program linked with the static library registers the ids once; one
  // that preloads libdlcbf_plugin.so has them already.
  dlcbf::RegisterAll(*rocksdb::ObjectLibrary::Default());
  rocksdb::ConfigOptions config;
  config.ignore_unknown_options = false;
  config.ignore_unsupported_options = false;  // an unknown memtable id is an error
  rocksdb::DBOptions db_options;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  Check(rocksdb::LoadOptionsFromFile(config, options_file, &db_options, &families),
        "LoadOptionsFromFile");
  rocksdb::Options options(db_options, families[0].options);
  // [/readme-snippet]

  // What the file selected. RocksDB (7.8.3 measured) loads an unregistered
  // filter_policy id as no filter, without an error: check the policy.
  const auto* table = options.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  Expect(table != nullptr && table->filter_policy != nullptr &&
             std::string(table->filter_policy->Name()) == "dlcbf",
         "the OPTIONS file selected the dlcbf filter policy");
  Expect(options.memtable_factory != nullptr &&
             std::string(options.memtable_factory->Name()) == dlcbf::kMemTableIndexClassName,
         "the OPTIONS file selected the dlcbf_index memtable");
  std::printf("filter_policy=%s memtable_factory=%s\n",
              table && table->filter_policy ? table->filter_policy->GetId().c_str() : "(none)",
              options.memtable_factory ? options.memtable_factory->GetId().c_str() : "(none)");

  options.error_if_exists = true;  // a new DB
  options.statistics = rocksdb::CreateDBStatistics();
  std::unique_ptr<rocksdb::DB> db;
  Check(OpenDB(options, path, &db), "Open");

  // 10,000 keys flushed into an SST file, 1,000 more left in the memtable.
  const int kFlushed = 10000, kInMemtable = 1000, kAbsent = 10000;
  for (int i = 0; i < kFlushed; ++i) Check(db->Put(rocksdb::WriteOptions(), Key("sst", i), "v"), "Put");
  Check(db->Flush(rocksdb::FlushOptions()), "Flush");
  for (int i = 0; i < kInMemtable; ++i) Check(db->Put(rocksdb::WriteOptions(), Key("mem", i), "v"), "Put");

  std::string value;
  int found = 0, absent_found = 0;
  for (int i = 0; i < kFlushed; ++i) found += db->Get(rocksdb::ReadOptions(), Key("sst", i), &value).ok();
  for (int i = 0; i < kInMemtable; ++i) found += db->Get(rocksdb::ReadOptions(), Key("mem", i), &value).ok();
  for (int i = 0; i < kAbsent; ++i) {
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), Key("none", i), &value);
    Expect(s.ok() || s.IsNotFound(), "Get of an absent key: OK or NotFound");
    absent_found += s.ok();
  }
  Expect(found == kFlushed + kInMemtable, "every written key found (" + std::to_string(found) + ")");
  Expect(absent_found == 0, "no absent key found (" + std::to_string(absent_found) + ")");

  // The SST files name the filter; the filter answered "no" for absent keys.
  rocksdb::TablePropertiesCollection tables;
  Check(db->GetPropertiesOfAllTables(&tables), "GetPropertiesOfAllTables");
  Expect(!tables.empty(), "at least one SST file");
  for (const auto& t : tables) {
    Expect(t.second->filter_policy_name == "dlcbf",
           t.first + " names filter policy '" + t.second->filter_policy_name + "'");
  }
  const uint64_t useful = options.statistics->getTickerCount(rocksdb::BLOOM_FILTER_USEFUL);
  std::printf("SST files: %zu; SST filter said no to %llu of %d absent keys\n", tables.size(),
              static_cast<unsigned long long>(useful), kAbsent);
  Expect(useful > kAbsent * 9 / 10, "the SST filter answered no for most absent keys");

  // The memtable index: absent keys skipped the memtable search.
  dlcbf::MemTableIndexFactoryStats mt;
  Check(dlcbf::GetMemTableIndexStats(options.memtable_factory.get(), &mt), "GetMemTableIndexStats");
  std::printf("memtable index: %llu Gets, %llu skipped the memtable search, %llu false positives\n",
              static_cast<unsigned long long>(mt.total.gets),
              static_cast<unsigned long long>(mt.total.skipped_searches),
              static_cast<unsigned long long>(mt.total.false_positives));
  for (const dlcbf::MemTableIndexStats& m : mt.live) std::printf("  memtable: %s\n", m.ToString().c_str());
  Expect(mt.total.skipped_searches > 0, "the memtable index skipped searches for absent keys");

  Check(db->Close(), "Close");
  db.reset();
  Check(rocksdb::DestroyDB(path, options), "DestroyDB");
  std::filesystem::remove_all(path);
  if (failures != 0) {
    std::fprintf(stderr, "options_file_example: %d unexpected result(s)\n", failures);
    return 1;
  }
  std::printf("options_file_example: every result as expected\n");
  return 0;
}
