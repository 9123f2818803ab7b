// Fuzz target 3: operation sequences against a std::multiset oracle.
//
// The input's first bytes choose a (deliberately small) geometry, so
// overflow, relocation, counter saturation, fingerprint collisions and the
// elastic filter's dlCBF -> ABF migration all happen within a few hundred
// operations; the rest decodes into insert / erase / contains / count
// operations over a small key space (so keys repeat). After every
// operation the oracle's keys are checked:
//   - Contains(x) must be true for every key the oracle holds (no false
//     negative, ever; ContainsBatch too);
//   - Count(x) >= min(multiplicity, max_counter) on the dlCBF;
//   - Erase of a live key must return kOk;
//   - an Insert that returns kOverflow (dlCBF only) must leave the filter
//     unchanged: the key is then not added to the oracle.
// Erase is only applied to keys the oracle holds (erasing a never-inserted
// key that collides with a stored fingerprint legitimately removes that
// fingerprint's evidence in any counting filter).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/elastic_filter.h"
#include "fuzz_util.h"

namespace {

using dlcbf::OpResult;
using dlcbf::fuzz::Fail;
using dlcbf::fuzz::Input;

std::string KeyOf(uint32_t id) { return "k" + std::to_string(id); }

template <class Filter>
void CheckAll(const Filter& f, const std::multiset<std::string>& oracle, const char* what) {
  std::vector<std::string_view> keys;
  for (auto it = oracle.begin(); it != oracle.end(); it = oracle.upper_bound(*it)) {
    if (!f.Contains(*it)) Fail(what, "false negative (Contains) for " + *it);
    keys.emplace_back(*it);
  }
  if (keys.empty()) return;
  std::unique_ptr<bool[]> out(new bool[keys.size()]);
  f.ContainsBatch(keys.data(), keys.size(), out.get());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!out[i]) Fail(what, "false negative (ContainsBatch) for " + std::string(keys[i]));
  }
}

void RunDLeft(Input* in) {
  dlcbf::DLeftOptions o;
  o.subtables = in->Range(2, 4);
  o.buckets_per_subtable = in->Range(1, 16);
  o.cells_per_bucket = in->Range(1, 4);
  o.remainder_bits = in->Range(2, 10);
  o.counter_bits = in->Range(0, 3);
  o.relocation = static_cast<dlcbf::Relocation>(in->Range(0, 2));
  o.max_relocation_nodes = in->Range(0, 64);
  o.thread_safe = in->Byte() & 1;
  o.seed = in->Byte();
  std::unique_ptr<dlcbf::DLeftCountingBloomFilter> f;
  if (!dlcbf::DLeftCountingBloomFilter::Create(o, &f).ok()) Fail("valid dlCBF options rejected");
  const uint32_t key_space = in->Range(1, 64);
  std::multiset<std::string> oracle;
  while (!in->empty()) {
    const uint8_t op = in->Byte();
    const std::string k = KeyOf(in->Range(0, key_space - 1));
    switch (op % 4) {
      case 0:
      case 1: {
        std::string before;
        if (op & 0x80) f->Serialize(&before);
        OpResult r = f->Insert(k);
        if (r == OpResult::kOk) {
          oracle.insert(k);
        } else if (r == OpResult::kOverflow) {
          if (op & 0x80) {
            std::string after;
            f->Serialize(&after);
            // The stats (overflows) differ; the table and header must not.
            if (after.size() != before.size()) Fail("dlCBF", "overflowed insert changed the size");
          }
        } else {
          Fail("dlCBF", std::string("unexpected Insert result ") + dlcbf::ToString(r));
        }
        break;
      }
      case 2: {
        if (o.counter_bits == 0) {
          if (f->Erase(k) != OpResult::kNotSupported) Fail("dlCBF", "erase with c = 0 must be kNotSupported");
          break;
        }
        auto it = oracle.find(k);
        if (it == oracle.end()) break;
        if (f->Erase(k) != OpResult::kOk) Fail("dlCBF", "erase of a live key failed: " + k);
        oracle.erase(it);
        break;
      }
      default: {
        const uint32_t want = static_cast<uint32_t>(
            std::min<size_t>(oracle.count(k), f->max_counter()));
        const uint32_t c = f->Count(k);
        if (c < want) Fail("dlCBF", "Count below the true multiplicity for " + k);
        break;
      }
    }
    CheckAll(*f, oracle, "dlCBF");
  }
  // The serialized form reloads and still holds every key.
  std::string s;
  f->Serialize(&s);
  std::unique_ptr<dlcbf::DLeftCountingBloomFilter> g;
  if (!dlcbf::DLeftCountingBloomFilter::Deserialize(s, &g).ok()) Fail("dlCBF", "re-load failed");
  CheckAll(*g, oracle, "dlCBF (reloaded)");
}

void RunElastic(Input* in) {
  dlcbf::ElasticOptions o;
  o.kernel = dlcbf::ElasticKernel::kGeneral;
  o.dleft.subtables = in->Range(2, 4);
  o.dleft.buckets_per_subtable = in->Range(1, 8);
  o.dleft.cells_per_bucket = in->Range(1, 4);
  o.dleft.remainder_bits = in->Range(2, 10);
  o.dleft.counter_bits = in->Range(1, 3);
  o.dleft.max_relocation_nodes = in->Range(0, 32);
  o.migrate_at_load = (in->Byte() & 1) ? 0.0 : 0.5;
  o.abf_counter_bits = in->Range(1, 8);
  o.abf_probes = in->Range(0, 8);
  o.thread_safe = in->Byte() & 1;
  if (in->Byte() & 1) {  // the fast kernel (the default) instead: a few blocks
    o.kernel = dlcbf::ElasticKernel::kFast;
    o.dleft = dlcbf::DLeftOptions();
    o.fast.subtables = (in->Byte() & 1) ? 4 : 2;
    o.fast.blocks = in->Range(1, 4);
  }
  std::unique_ptr<dlcbf::ElasticFilter> f;
  if (!dlcbf::ElasticFilter::Create(o, &f).ok()) Fail("valid ElasticOptions rejected");
  const uint32_t key_space = in->Range(1, 128);
  std::multiset<std::string> oracle;
  while (!in->empty()) {
    const uint8_t op = in->Byte();
    const std::string k = KeyOf(in->Range(0, key_space - 1));
    if (op % 3 != 2) {
      OpResult r = f->Insert(k);
      if (r != OpResult::kOk) Fail("elastic", std::string("Insert returned ") + dlcbf::ToString(r));
      oracle.insert(k);
    } else {
      auto it = oracle.find(k);
      if (it != oracle.end()) {
        if (f->Erase(k) != OpResult::kOk) Fail("elastic", "erase of a live key failed: " + k);
        oracle.erase(it);
      }
    }
    CheckAll(*f, oracle, dlcbf::ToString(f->mode()));
    if (op == 0xFF) (void)f->Stats();
  }
  f->ReleaseRetired();  // single-threaded: no reader is in flight
  CheckAll(*f, oracle, "elastic (after ReleaseRetired)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1024) return 0;  // long sequences add nothing but time
  Input in(data, size);
  if (in.Byte() & 1) {
    RunElastic(&in);
  } else {
    RunDLeft(&in);
  }
  return 0;
}
