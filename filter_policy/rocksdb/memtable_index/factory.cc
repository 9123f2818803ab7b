// The dlcbf_index MemTableRepFactory: wraps a base factory, creates indexed
// reps, aggregates their statistics, and registers "dlcbf_index" with
// RocksDB's ObjectLibrary.
#include "dlcbf/rocksdb/memtable_index.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>

#include "filter_policy/rocksdb/common/option_string.h"
#include "filter_policy/rocksdb/memtable_index/memtable_index_internal.h"
#include "rocksdb/convenience.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/utilities/object_registry.h"

namespace dlcbf {

using namespace memtable_index;  // NOLINT
using option_string::Canonical;

namespace {

// ---------------------------------------------------------------------------
// The factory
// ---------------------------------------------------------------------------
bool IsIdentityHandleFactory(const MemTableRepFactory& f) {
  // These reps return the entry buffer itself as the KeyHandle (7.8.3:
  // SkipListRep::Allocate, and the default MemTableRep::Allocate used by
  // VectorRep and HashSkipListRep).
  return f.IsInstanceOf(rocksdb::SkipListFactory::kClassName()) ||
         f.IsInstanceOf(rocksdb::VectorRepFactory::kClassName()) ||
         f.IsInstanceOf("HashSkipListRepFactory");
}

class DLeftIndexedMemTableRepFactory final : public MemTableRepFactory {
 public:
  DLeftIndexedMemTableRepFactory(std::shared_ptr<MemTableRepFactory> base, bool base_is_default,
                                 const MemTableIndexOptions& options)
      : base_(std::move(base)),
        base_is_default_(base_is_default),
        identity_handles_(IsIdentityHandleFactory(*base_)),
        options_(options),
        state_(std::make_shared<FactoryState>()) {
    options_.abf_growth = Canonical(options_.abf_growth);
    options_.max_write_buffer_fraction = Canonical(options_.max_write_buffer_fraction);
  }

  static const char* kClassName() { return kMemTableIndexClassName; }
  const char* Name() const override { return kClassName(); }
  const char* NickName() const override { return kMemTableIndexId; }
  std::string GetId() const override {
    return MemTableIndexId(options_, base_is_default_ ? std::string() : base_->GetId());
  }

  using MemTableRepFactory::CreateMemTableRep;
  MemTableRep* CreateMemTableRep(const MemTableRep::KeyComparator& key_cmp, Allocator* allocator,
                                 const SliceTransform* transform, Logger* logger) override {
    return CreateMemTableRep(key_cmp, allocator, transform, logger, 0);
  }
  MemTableRep* CreateMemTableRep(const MemTableRep::KeyComparator& key_cmp, Allocator* allocator,
                                 const SliceTransform* transform, Logger* logger,
                                 uint32_t column_family_id) override {
    MemTableRep* base_rep =
        base_->CreateMemTableRep(key_cmp, allocator, transform, logger, column_family_id);
    if (base_rep == nullptr) return nullptr;
    return NewIndexedRep(std::unique_ptr<MemTableRep>(base_rep), identity_handles_, key_cmp,
                         allocator, transform, logger, column_family_id, options_, state_);
  }

  bool IsInsertConcurrentlySupported() const override {
    return base_->IsInsertConcurrentlySupported();
  }
  bool CanHandleDuplicatedKey() const override { return base_->CanHandleDuplicatedKey(); }

  void GetStats(MemTableIndexFactoryStats* out) const {
    MemTableIndexFactoryStats r;
    std::lock_guard<std::mutex> lock(state_->mu);
    r.reps_created = state_->created;
    r.reps_live = state_->live.size();
    r.reps_bypassed = state_->bypassed;
    r.total = state_->folded;
    r.total.active = false;
    for (IndexedRep* rep : state_->live) {
      MemTableIndexStats s = RepStats(rep);
      AddCounters(&r.total, s);
      r.total.index_bytes += s.index_bytes;
      r.total.retained_bytes += s.retained_bytes;
      r.live.push_back(std::move(s));
    }
    *out = std::move(r);
  }

 private:
  const std::shared_ptr<MemTableRepFactory> base_;
  const bool base_is_default_;
  const bool identity_handles_;
  MemTableIndexOptions options_;
  const std::shared_ptr<FactoryState> state_;
};

}  // namespace


rocksdb::Status NewDLeftIndexedMemTableRepFactory(std::shared_ptr<MemTableRepFactory> base,
                                         const MemTableIndexOptions& options,
                                         std::shared_ptr<MemTableRepFactory>* out) {
  if (out == nullptr) return rocksdb::Status::InvalidArgument("dlcbf_index", "out is null");
  rocksdb::Status s = options.Validate();
  if (!s.ok()) return s;
  const bool base_is_default = base == nullptr;
  if (base_is_default) base = std::make_shared<rocksdb::SkipListFactory>();
  if (base->IsInstanceOf(kMemTableIndexClassName)) {
    return Invalid("base", "must not be another dlcbf_index factory");
  }
  out->reset(new DLeftIndexedMemTableRepFactory(std::move(base), base_is_default, options));
  return rocksdb::Status::OK();
}

MemTableRepFactory* NewDLeftIndexedMemTableRepFactory(std::shared_ptr<MemTableRepFactory> base,
                                                      const MemTableIndexOptions& options) {
  if (!options.Validate().ok()) return nullptr;
  const bool base_is_default = base == nullptr;
  if (base_is_default) base = std::make_shared<rocksdb::SkipListFactory>();
  if (base->IsInstanceOf(kMemTableIndexClassName)) return nullptr;
  return new DLeftIndexedMemTableRepFactory(std::move(base), base_is_default, options);
}

rocksdb::Status GetMemTableIndexStats(const MemTableRepFactory* factory, MemTableIndexFactoryStats* out) {
  if (factory == nullptr || out == nullptr) {
    return rocksdb::Status::InvalidArgument("dlcbf_index", "null factory or output");
  }
  if (std::strcmp(factory->Name(), kMemTableIndexClassName) != 0) {
    return rocksdb::Status::InvalidArgument("dlcbf_index",
                                   std::string("not a dlcbf_index factory: ") + factory->Name());
  }
  static_cast<const DLeftIndexedMemTableRepFactory*>(factory)->GetStats(out);
  return rocksdb::Status::OK();
}

// ---------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------
int RegisterDLeftIndexedMemTableRepFactory(rocksdb::ObjectLibrary& library) {
  static std::mutex mu;  // check-then-add atomic among our callers
  std::lock_guard<std::mutex> lock(mu);
  if (library.FindFactory<MemTableRepFactory>(kMemTableIndexId) != nullptr) return 0;
  // "dlcbf_index", "dlcbf_index:<anything>" (parsed by ParseMemTableIndexId
  // for precise errors) and the same with the class name.
  library.AddFactory<MemTableRepFactory>(
      rocksdb::ObjectLibrary::PatternEntry(kMemTableIndexId, /*optional=*/true)
          .AnotherName(kMemTableIndexClassName)
          .AddSeparator(":", /*at_least_one=*/false),
      [](const std::string& uri, std::unique_ptr<MemTableRepFactory>* guard,
         std::string* errmsg) -> MemTableRepFactory* {
        MemTableIndexOptions options;
        std::string base_id;
        rocksdb::Status s = ParseMemTableIndexId(uri, &options, &base_id);
        std::shared_ptr<MemTableRepFactory> base;
        if (s.ok() && !base_id.empty()) {
          rocksdb::ConfigOptions cfg;
          cfg.ignore_unsupported_options = false;
          // RocksDB 7.8.3's own factories may throw while parsing (e.g.
          // "skip_list:<huge>" -> std::out_of_range from ParseUint64; found
          // by fuzz_option_strings). No exception may leave our factory.
          try {
            s = MemTableRepFactory::CreateFromString(cfg, base_id, &base);
          } catch (const std::exception& e) {
            base.reset();
            s = rocksdb::Status::InvalidArgument(std::string("RocksDB threw while parsing it: ") + e.what());
          } catch (...) {
            base.reset();
            s = rocksdb::Status::InvalidArgument("RocksDB threw while parsing it");
          }
          if (s.ok() && base == nullptr) s = Invalid("base", "empty base id");
          if (!s.ok()) {
            s = Invalid("base", "\"" + base_id + "\": " + s.ToString());
          }
        }
        if (s.ok()) {
          guard->reset(NewDLeftIndexedMemTableRepFactory(base, options));
          if (*guard == nullptr) s = Invalid("base", "must not be another dlcbf_index factory");
        }
        if (!s.ok()) {
          *errmsg = s.getState() != nullptr ? s.getState() : s.ToString();
          guard->reset();
          return nullptr;
        }
        return guard->get();
      });
  return 1;
}

}  // namespace dlcbf
