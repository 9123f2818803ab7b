// core_filter_example: the standalone d-left counting Bloom filter
// (Bonomi et al., ESA 2006), without RocksDB: link dlcbf::core only.
//
// It sizes a filter for 100,000 keys at a 0.1 % false-positive rate,
// inserts, queries, counts and erases keys, measures the false-positive
// rate on keys never inserted, and round-trips the filter through its
// serialized form. FastDLeftFilter and DenseDLeftFilter (the faster and the
// smaller kernel, docs/KERNELS.md) answer the same calls.
//
//   core_filter_example
//
// Exits 1 on any result other than the expected one.
#include <cstdio>
#include <memory>
#include <string>

#include "dlcbf/core/dleft_counting_bloom_filter.h"

namespace {

int failures = 0;

void Expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "UNEXPECTED: %s\n", what.c_str());
    ++failures;
  }
}

std::string Key(const char* prefix, int i) { return prefix + std::to_string(i); }

}  // namespace

int main() {
  // [readme-snippet:core]
  dlcbf::DLeftOptions options;  // the paper's d = 4 subtables of 8-cell buckets
  dlcbf::Status s = dlcbf::DLeftOptions::ForFpr(/*expected_items=*/100000, /*fpr=*/0.001, &options);
  std::unique_ptr<dlcbf::DLeftCountingBloomFilter> filter;
  if (s.ok()) s = dlcbf::DLeftCountingBloomFilter::Create(options, &filter);
  if (!s.ok()) { std::fprintf(stderr, "%s\n", s.ToString().c_str()); return 1; }

  if (filter->Insert("apple") != dlcbf::OpResult::kOk) return 1;  // kOverflow: full, unchanged
  bool present = filter->Contains("apple");     // true: never a false negative
  uint32_t copies = filter->Count("apple");     // 1
  dlcbf::OpResult erased = filter->Erase("apple");  // kOk: erase is exact

  std::string bytes;
  filter->Serialize(&bytes);                    // versioned, checksummed
  std::unique_ptr<dlcbf::DLeftCountingBloomFilter> copy;
  s = dlcbf::DLeftCountingBloomFilter::Deserialize(bytes, &copy);
  // [/readme-snippet]
  Expect(present, "apple present after Insert");
  Expect(copies == 1, "Count(apple) == 1");
  Expect(erased == dlcbf::OpResult::kOk, "Erase(apple) == kOk");
  Expect(s.ok(), "Deserialize: " + s.ToString());
  if (!s.ok()) return 1;

  // 100,000 keys: none may be missed.
  const int kKeys = 100000, kProbes = 200000;
  for (int i = 0; i < kKeys; ++i) {
    if (filter->Insert(Key("key", i)) != dlcbf::OpResult::kOk) {
      Expect(false, "Insert of key " + std::to_string(i) + " overflowed");
      break;
    }
  }
  int missed = 0;
  for (int i = 0; i < kKeys; ++i) missed += !filter->Contains(Key("key", i));
  Expect(missed == 0, "no inserted key missed (" + std::to_string(missed) + " missed)");

  // False positives on keys never inserted: about the 0.1 % asked for.
  int false_positives = 0;
  for (int i = 0; i < kProbes; ++i) false_positives += filter->Contains(Key("absent", i));
  const double fpr = static_cast<double>(false_positives) / kProbes;
  std::printf("%d keys, %.2f bits per key, measured FPR %.4f %% (asked for <= 0.1 %%)\n", kKeys,
              8.0 * static_cast<double>(filter->bytes()) / kKeys, 100 * fpr);
  Expect(fpr < 0.002, "measured FPR below 0.2 %");

  // Erase the even keys: the odd ones stay, the even ones are gone except
  // for the few that collide with a stored fingerprint (false positives).
  for (int i = 0; i < kKeys; i += 2) {
    if (filter->Erase(Key("key", i)) != dlcbf::OpResult::kOk) {
      Expect(false, "Erase of key " + std::to_string(i) + " did not find it");
      break;
    }
  }
  int odd_missed = 0, even_left = 0;
  for (int i = 0; i < kKeys; ++i) {
    const bool in = filter->Contains(Key("key", i));
    if (i % 2 == 1) odd_missed += !in; else even_left += in;
  }
  Expect(odd_missed == 0, "no remaining key missed after the erases");
  Expect(even_left < kKeys / 2 / 200, "erased keys gone but for false positives (" +
                                          std::to_string(even_left) + " left)");

  // The serialized form answers exactly as the filter it came from.
  bytes.clear();
  filter->Serialize(&bytes);
  Expect(dlcbf::DLeftCountingBloomFilter::Deserialize(bytes, &copy).ok(), "Deserialize");
  int differ = 0;
  for (int i = 0; i < kKeys; ++i) differ += copy->Contains(Key("key", i)) != filter->Contains(Key("key", i));
  for (int i = 0; i < kProbes; ++i) {
    differ += copy->Contains(Key("absent", i)) != filter->Contains(Key("absent", i));
  }
  Expect(differ == 0, "the deserialized copy answers as the original");
  std::printf("serialized: %zu bytes; %d odd keys present, %d erased keys still answer yes\n",
              bytes.size(), kKeys / 2 - odd_missed, even_left);

  if (failures != 0) {
    std::fprintf(stderr, "core_filter_example: %d unexpected result(s)\n", failures);
    return 1;
  }
  std::printf("core_filter_example: every result as expected\n");
  return 0;
}
