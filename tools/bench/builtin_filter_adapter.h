// Builds and reads RocksDB's own filters (FastLocalBloom, Ribbon) exactly as
// the block-based table does: FilterPolicy -> FilterBitsBuilder (AddKey,
// Finish) -> FilterBitsReader (MayMatch). Shared by bench/sst_filter_bench
// and tools/bench/peer_bench so both call the built-in filters the same way.
//
// The builder/reader classes come from dlcbf/internal/rocksdb_filter_abi.h
// (RocksDB 7.x installs no header for them; see that file).
#pragma once

#include <cstddef>
#include <memory>

#include "filter_policy/rocksdb/abi/filter_abi.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/slice.h"
#include "rocksdb/table.h"

namespace dlcbf {
namespace bench {

// One finished filter: the bytes (owned by buf) and a view of them.
struct BuiltFilter {
  std::unique_ptr<const char[]> buf;
  rocksdb::Slice data;
};

// Adds key_at(0) .. key_at(n-1) (each a rocksdb::Slice) to a builder of
// `policy`, with default table options, and finishes the filter.
template <class KeyAt>
BuiltFilter BuildBuiltinFilter(const rocksdb::FilterPolicy& policy, size_t n, KeyAt&& key_at) {
  rocksdb::BlockBasedTableOptions t;
  rocksdb::FilterBuildingContext ctx(t);
  std::unique_ptr<rocksdb::FilterBitsBuilder> b(policy.GetBuilderWithContext(ctx));
  for (size_t i = 0; i < n; ++i) b->AddKey(key_at(i));
  BuiltFilter f;
  f.data = b->Finish(&f.buf);
  return f;
}

// A reader over `data`, which must outlive it.
inline std::unique_ptr<rocksdb::FilterBitsReader> BuiltinFilterReader(
    const rocksdb::FilterPolicy& policy, const rocksdb::Slice& data) {
  return std::unique_ptr<rocksdb::FilterBitsReader>(policy.GetFilterBitsReader(data));
}

}  // namespace bench
}  // namespace dlcbf
