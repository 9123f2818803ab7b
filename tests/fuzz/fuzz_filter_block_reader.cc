// Fuzz target 1: SST filter-block reader.
//
// Arbitrary bytes become the contents of a filter block handed to
// DLeftFilterPolicy::GetFilterBitsReader (exactly what RocksDB does with a
// block read from an SST), and keys are probed, single and batched
// (MultiGet's path). Any crash, out-of-bounds access (ASan) or UB (UBSan)
// fails. The block is tried twice: as given, and with its trailing checksum
// fixed (see fuzz_util.h), so corrupt-but-checksummed headers and payloads
// reach the parser's semantic checks and the readers' probe code.
// Invariants checked on top of "no crash":
//   - single and batched MayMatch agree;
//   - a block the builder produced for keys K answers "may match" for every
//     key of K (the input's tail chooses K; see BuildAndProbe).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "filter_policy/rocksdb/abi/filter_abi.h"
#include "dlcbf/rocksdb/filter_policy.h"
#include "fuzz_util.h"
#include "rocksdb/table.h"

namespace {

using dlcbf::fuzz::Fail;

const rocksdb::FilterPolicy& Policy() {
  static std::shared_ptr<const rocksdb::FilterPolicy> p = dlcbf::NewDLeftFilterPolicy(10.0);
  return *p;
}

void Probe(rocksdb::FilterBitsReader* reader, const uint8_t* data, size_t size) {
  std::vector<std::string> keys;
  keys.emplace_back("");
  for (size_t i = 0; i < size && keys.size() < 40; i += 7) {
    keys.emplace_back(reinterpret_cast<const char*>(data + i), std::min<size_t>(size - i, 1 + i % 13));
  }
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::Slice*> ptrs;
  for (auto& s : slices) ptrs.push_back(&s);
  std::unique_ptr<bool[]> batched(new bool[keys.size()]);
  reader->MayMatch(static_cast<int>(ptrs.size()), ptrs.data(), batched.get());
  for (size_t i = 0; i < slices.size(); ++i) {
    if (reader->MayMatch(slices[i]) != batched[i]) Fail("single and batched MayMatch disagree");
  }
}

void ReadBlock(const std::string& block, const uint8_t* data, size_t size) {
  std::unique_ptr<rocksdb::FilterBitsReader> reader(
      Policy().GetFilterBitsReader(rocksdb::Slice(block)));
  if (!reader) Fail("GetFilterBitsReader returned null");
  Probe(reader.get(), data, size);
}

// Builds a real block from keys taken from the input and checks that every
// key is found (no false negative), also after a round trip through the
// reader of a copy of the block.
void BuildAndProbe(const uint8_t* data, size_t size) {
  rocksdb::BlockBasedTableOptions topts;
  topts.detect_filter_construct_corruption = true;  // exercise MaybePostVerify
  rocksdb::FilterBuildingContext ctx(topts);
  std::unique_ptr<rocksdb::FilterBitsBuilder> builder(Policy().GetBuilderWithContext(ctx));
  std::vector<std::string> keys;
  for (size_t i = 0; i + 1 < size && keys.size() < 200; i += 2) {
    keys.emplace_back(reinterpret_cast<const char*>(data + i), std::min<size_t>(size - i, 1 + data[i] % 3));
  }
  for (const auto& k : keys) builder->AddKey(k);
  std::unique_ptr<const char[]> buf;
  rocksdb::Slice block = builder->Finish(&buf);
  if (!builder->MaybePostVerify(block).ok()) Fail("MaybePostVerify failed");
  std::unique_ptr<rocksdb::FilterBitsReader> reader(Policy().GetFilterBitsReader(block));
  for (const auto& k : keys) {
    if (!reader->MayMatch(k)) Fail("false negative for a key the builder added");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string raw(reinterpret_cast<const char*>(data), size);
  ReadBlock(raw, data, size);
  ReadBlock(dlcbf::fuzz::WithValidChecksum(data, size), data, size);
  if (size > 0 && data[0] == 'K') BuildAndProbe(data + 1, size - 1);
  return 0;
}
