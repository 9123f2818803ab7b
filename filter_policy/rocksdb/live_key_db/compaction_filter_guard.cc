// LiveKeyDB's compaction-filter guard. The design note is in
// compaction_filter_guard.h.
#include "filter_policy/rocksdb/live_key_db/compaction_filter_guard.h"

#include <string>
#include <utility>
#include <vector>

#include "dlcbf/rocksdb/live_key_db.h"  // (DLCBF_ROCKSDB_AT_LEAST)
#include "filter_policy/rocksdb/live_key_db/world_watch.h"
#include "rocksdb/compaction_filter.h"

#ifdef DLCBF_TESTING
#include "filter_policy/testing/live_key_db_testing.h"
#endif

namespace dlcbf {
namespace live_key {

namespace {

using Decision = rocksdb::CompactionFilter::Decision;

class GuardedFilter : public rocksdb::CompactionFilter {
 public:
  GuardedFilter(const rocksdb::CompactionFilter* inner, std::unique_ptr<rocksdb::CompactionFilter> owned,
                std::shared_ptr<WorldWatch> watch)
      : inner_(inner), owned_(std::move(owned)), watch_(std::move(watch)) {}

  bool Filter(int level, const rocksdb::Slice& key, const rocksdb::Slice& existing_value, std::string* new_value,
              bool* value_changed) const override {
    return inner_->Filter(level, key, existing_value, new_value, value_changed);
  }
  bool FilterMergeOperand(int level, const rocksdb::Slice& key, const rocksdb::Slice& operand) const override {
    return inner_->FilterMergeOperand(level, key, operand);
  }
  Decision FilterV2(int level, const rocksdb::Slice& key, ValueType value_type, const rocksdb::Slice& existing_value,
                    std::string* new_value, std::string* skip_until) const override {
    return Note(inner_->FilterV2(level, key, value_type, existing_value, new_value, skip_until));
  }
#if ROCKSDB_MAJOR >= 8
  Decision FilterV3(int level, const rocksdb::Slice& key, ValueType value_type, const rocksdb::Slice* existing_value,
                    const rocksdb::WideColumns* existing_columns, std::string* new_value,
                    std::vector<std::pair<std::string, std::string>>* new_columns,
                    std::string* skip_until) const override {
    return Note(inner_->FilterV3(level, key, value_type, existing_value, existing_columns, new_value, new_columns,
                                 skip_until));
  }
#endif
#if DLCBF_ROCKSDB_AT_LEAST(11, 8)
  Decision FilterV4(int level, const rocksdb::Slice& key, ValueType value_type, const rocksdb::Slice* existing_value,
                    const rocksdb::WideColumns* existing_columns, std::string* new_value,
                    std::vector<std::pair<std::string, std::string>>* new_columns, std::string* skip_until,
                    rocksdb::WideColumnBlobResolver* blob_resolver) const override {
    return Note(inner_->FilterV4(level, key, value_type, existing_value, existing_columns, new_value, new_columns,
                                 skip_until, blob_resolver));
  }
  bool SupportsFilterV4() const override { return inner_->SupportsFilterV4(); }
#endif
  BlobDecision PrepareBlobOutput(const rocksdb::Slice& key, const rocksdb::Slice& existing_value,
                                 std::string* new_value) const override {
    return inner_->PrepareBlobOutput(key, existing_value, new_value);
  }
  bool IgnoreSnapshots() const override { return inner_->IgnoreSnapshots(); }
  const char* Name() const override { return inner_->Name(); }
  bool IsStackedBlobDbInternalCompactionFilter() const override {
    return inner_->IsStackedBlobDbInternalCompactionFilter();
  }
  Decision FilterBlobByKey(int level, const rocksdb::Slice& key, std::string* new_value,
                           std::string* skip_until) const override {
    return Note(inner_->FilterBlobByKey(level, key, new_value, skip_until));
  }

 private:
  Decision Note(Decision d) const {
    if (d == Decision::kRemoveAndSkipUntil || d == Decision::kPurge) {
#ifdef DLCBF_TESTING
      if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kIgnoreTableFileChanges) return d;
#endif
      watch_->ReportFilterChange(std::string("compaction filter '") + inner_->Name() + "' answered " +
                           (d == Decision::kPurge ? "kPurge" : "kRemoveAndSkipUntil") +
                           ": older versions of the keys it removed or skipped may be visible again");
    }
    return d;
  }
  const rocksdb::CompactionFilter* inner_;
  std::unique_ptr<rocksdb::CompactionFilter> owned_;  // (a factory's filter; null for the caller's shared one)
  std::shared_ptr<WorldWatch> watch_;
};

class GuardedFactory : public rocksdb::CompactionFilterFactory {
 public:
  GuardedFactory(const rocksdb::CompactionFilter* filter, std::shared_ptr<rocksdb::CompactionFilterFactory> factory,
                 std::shared_ptr<WorldWatch> watch)
      : filter_(filter), factory_(std::move(factory)), watch_(std::move(watch)) {}

  bool ShouldFilterTableFileCreation(rocksdb::TableFileCreationReason reason) const override {
    // (A caller's compaction_filter runs in compactions only.)
    return filter_ != nullptr ? reason == rocksdb::TableFileCreationReason::kCompaction
                              : factory_->ShouldFilterTableFileCreation(reason);
  }
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) override {
    if (filter_ != nullptr) return std::unique_ptr<rocksdb::CompactionFilter>(new GuardedFilter(filter_, nullptr, watch_));
    std::unique_ptr<rocksdb::CompactionFilter> f = factory_->CreateCompactionFilter(context);
    if (f == nullptr) return nullptr;
    const rocksdb::CompactionFilter* raw = f.get();
    return std::unique_ptr<rocksdb::CompactionFilter>(new GuardedFilter(raw, std::move(f), watch_));
  }
  const char* Name() const override { return filter_ != nullptr ? filter_->Name() : factory_->Name(); }

 private:
  const rocksdb::CompactionFilter* filter_;  // the caller's, shared (or null)
  std::shared_ptr<rocksdb::CompactionFilterFactory> factory_;
  std::shared_ptr<WorldWatch> watch_;
};

}  // namespace

void GuardCompactionFilters(rocksdb::ColumnFamilyOptions* options, const std::shared_ptr<WorldWatch>& watch) {
  if (options->compaction_filter == nullptr && options->compaction_filter_factory == nullptr) return;
  options->compaction_filter_factory =
      std::make_shared<GuardedFactory>(options->compaction_filter, options->compaction_filter_factory, watch);
  options->compaction_filter = nullptr;
}

}  // namespace live_key
}  // namespace dlcbf
