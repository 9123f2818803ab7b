// Fuzz target 2: deserialization of the dlCBF, the counting Bloom filter,
// the autoscaling Bloom filter, the fast and the dense dlCBF kernels (the
// ElasticFilter has no serialized form).
//
// The first byte picks the structure and the thread-safety mode (0xF0 and
// above: FastDLeftFilter, 0xE0..0xEF: DenseDLeftFilter, also read as a
// sparse image (DenseSparse; bit 1: with changed-block records); bit 0 =
// thread-safe); the rest
// is the serialized bytes, tried as given and with a fixed checksum (see
// fuzz_util.h). Deserialize must return OK or an error and never crash or
// read out of bounds. When it accepts the input, the filter is exercised
// (lookups, inserts, erases, Stats) and must round-trip: Serialize() of the
// freshly loaded filter is byte-identical to the accepted input, and what
// it serializes after mutation loads again. (The ABF canonicalizes min_tpr
// when the reader did not opt into false negatives; see Autoscaling().)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dlcbf/core/autoscaling_bloom_filter.h"
#include "dlcbf/core/counting_bloom_filter.h"
#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"
#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"
#include "fuzz_util.h"

namespace {

using dlcbf::fuzz::Fail;

template <class Filter>
void Exercise(Filter* f, const std::string& accepted, const uint8_t* keys, size_t n) {
  std::string again;
  f->Serialize(&again);
  if (again != accepted) Fail("Serialize(Deserialize(x)) != x");
  for (size_t i = 0; i < n && i < 64; ++i) {
    const std::string_view k(reinterpret_cast<const char*>(keys + i), std::min<size_t>(n - i, 4));
    (void)f->Contains(k);
    if (i % 3 == 0) {
      if (f->Insert(k) == dlcbf::OpResult::kOk && !f->Contains(k)) {
        Fail("inserted key not found after Deserialize");
      }
    } else if (i % 3 == 1) {
      (void)f->Erase(k);
    }
  }
  (void)f->Stats();
}

void DLeft(const std::string& s, bool ts, const uint8_t* d, size_t n) {
  std::unique_ptr<dlcbf::DLeftCountingBloomFilter> f;
  if (!dlcbf::DLeftCountingBloomFilter::Deserialize(s, &f, dlcbf::DeserializeOptions{ts}).ok()) return;
  if (f->bytes() > (size_t{1} << 24)) return;  // keep the fuzzer fast
  Exercise(f.get(), s, d, n);
  (void)f->Count(std::string_view("x"));
  std::string out;
  f->Serialize(&out);
  std::unique_ptr<dlcbf::DLeftCountingBloomFilter> g;
  if (!dlcbf::DLeftCountingBloomFilter::Deserialize(out, &g).ok()) Fail("dlCBF re-load failed");
}

void Counting(const std::string& s, bool ts, const uint8_t* d, size_t n) {
  std::unique_ptr<dlcbf::CountingBloomFilter> f;
  if (!dlcbf::CountingBloomFilter::Deserialize(s, &f, dlcbf::DeserializeOptions{ts}).ok()) return;
  Exercise(f.get(), s, d, n);
  std::string out;
  f->Serialize(&out);
  std::unique_ptr<dlcbf::CountingBloomFilter> g;
  if (!dlcbf::CountingBloomFilter::Deserialize(out, &g).ok()) Fail("CBF re-load failed");
}

void Autoscaling(const std::string& s, bool ts, bool lossy, const uint8_t* d, size_t n) {
  std::unique_ptr<dlcbf::AutoscalingBloomFilter> f;
  dlcbf::DeserializeOptions ro;
  ro.thread_safe = ts;
  ro.allow_false_negatives = lossy;
  dlcbf::Status st = dlcbf::AutoscalingBloomFilter::Deserialize(s, &f, ro);
  if (!st.ok()) return;
  if (!lossy && !f->lossless()) Fail("lossy ABF loaded without allow_false_negatives");
  // Loading canonicalizes one field on purpose (a stored min_tpr < 1 loads
  // as 1.0 unless the reader opted into false negatives), so the ABF must
  // round-trip from its first re-serialization on: idempotence.
  std::string once, twice;
  f->Serialize(&once);
  {
    std::unique_ptr<dlcbf::AutoscalingBloomFilter> g;
    if (!dlcbf::AutoscalingBloomFilter::Deserialize(once, &g, ro).ok()) Fail("ABF re-load failed");
    g->Serialize(&twice);
  }
  if (once != twice) Fail("ABF serialization is not idempotent");
  if (lossy && once != s) Fail("ABF Serialize(Deserialize(x)) != x with allow_false_negatives");
  for (size_t i = 0; i < n && i < 64; ++i) {
    std::string_view k(reinterpret_cast<const char*>(d + i), std::min<size_t>(n - i, 4));
    (void)f->Contains(k);
    if (i % 2 == 0) {
      (void)f->Insert(k);
      if (f->lossless() && !f->Contains(k)) Fail("lossless ABF misses an inserted key");
    }
  }
  (void)f->Stats();
  if (lossy) (void)f->AutoTune(0.9);
  std::string out;
  f->Serialize(&out);
  std::unique_ptr<dlcbf::AutoscalingBloomFilter> g;
  if (!dlcbf::AutoscalingBloomFilter::Deserialize(out, &g, ro).ok()) Fail("ABF re-load failed");
}

void Fast(const std::string& s, bool ts, const uint8_t* d, size_t n) {
  std::unique_ptr<dlcbf::FastDLeftFilter> f;
  if (!dlcbf::FastDLeftFilter::Deserialize(s, &f, dlcbf::DeserializeOptions{ts}).ok()) return;
  if (f->bytes() > (size_t{1} << 24)) return;  // keep the fuzzer fast
  Exercise(f.get(), s, d, n);
  (void)f->Count(std::string_view("x"));
  (void)f->SpillFlaggedFraction();
  f->ForEachFingerprint([](const dlcbf::FastDLeftFilter::TrueFingerprint&, uint32_t) {});
  std::string out;
  f->Serialize(&out);
  std::unique_ptr<dlcbf::FastDLeftFilter> g;
  if (!dlcbf::FastDLeftFilter::Deserialize(out, &g).ok()) Fail("fast dlCBF re-load failed");
}

void Dense(const std::string& s, bool ts, const uint8_t* d, size_t n) {
  std::unique_ptr<dlcbf::DenseDLeftFilter> f;
  if (!dlcbf::DenseDLeftFilter::Deserialize(s, &f, dlcbf::DeserializeOptions{ts}).ok()) return;
  if (f->bytes() > (size_t{1} << 24)) return;  // keep the fuzzer fast
  Exercise(f.get(), s, d, n);
  (void)f->Count("x");
  uint64_t items = 0;
  f->ForEachFingerprint([&items](const dlcbf::DenseDLeftFilter::TrueFingerprint&, uint32_t c) { items += c; });
  if (items != f->Stats().items) Fail("dense dlCBF: ForEachFingerprint disagrees with the item count");
  std::string out;
  f->Serialize(&out);
  std::unique_ptr<dlcbf::DenseDLeftFilter> g;
  if (!dlcbf::DenseDLeftFilter::Deserialize(out, &g).ok()) Fail("dense dlCBF re-load failed");
}

// A sparse image (DenseDLeftFilter::SerializeInChunks, kSparse): the
// in-place load (DeserializeWithRecords, the rest of the input as its
// changed-block records when `records`) and the two-step one
// (ExpandSparseImage, PatchSerializedBlocks, Deserialize) accept the same
// inputs, and what they accept is the same filter, byte for byte. (The
// in-place load also checks records a later one replaces: with records,
// it may refuse what the two-step load accepts, never the reverse.) The
// records part is also read as compact records and must round-trip.
void DenseSparse(const std::string& s, bool ts, bool records) {
  if (s.size() < 72) return;
  const uint64_t nb = dlcbf::internal::DecodeFixed64(s.data() + 16);
  const uint8_t d = static_cast<uint8_t>(s[7]);
  if (nb == 0 || nb > (uint64_t{1} << 16) || d == 0 || d > 4) return;  // keep the fuzzer fast
  // With records: the image ends at the first record boundary past 64
  // bytes + checksum that the input names in its byte 8 (a split point).
  size_t cut = s.size();
  if (records) cut = std::min(s.size(), size_t{72} + 72 * static_cast<size_t>(static_cast<uint8_t>(s[8]) % 8));
  std::string image_bytes = s.substr(0, cut);
  const std::string recs = s.substr(cut);
  // Sealed with its checksum, so both loads look past it.
  dlcbf::internal::EncodeFixed64(&image_bytes[image_bytes.size() - 8],
                                 dlcbf::internal::HashKey(image_bytes.data(), image_bytes.size() - 8,
                                                          dlcbf::DenseDLeftFilter::kImageChecksumSeed));
  std::unique_ptr<dlcbf::DenseDLeftFilter> f, g;
  const bool in_place =
      dlcbf::DenseDLeftFilter::DeserializeWithRecords(image_bytes, dlcbf::DenseDLeftFilter::ImageLayout::kSparse, {recs.substr(0, recs.size() / 144 * 72),
                                                                       recs.substr(recs.size() / 144 * 72)},
                                                      &f, dlcbf::DeserializeOptions{ts})
          .ok();
  std::string image;
  const bool two_step = dlcbf::DenseDLeftFilter::ExpandSparseImage(image_bytes, &image).ok() &&
                        dlcbf::DenseDLeftFilter::PatchSerializedBlocks(&image, recs).ok() &&
                        dlcbf::DenseDLeftFilter::Deserialize(image, &g, dlcbf::DeserializeOptions{ts}).ok();
  if (in_place && !two_step) Fail("sparse image: the in-place load accepted what the two-step one refused");
  if (!records && two_step && !in_place) Fail("sparse image: the in-place load refused a valid image");
  if (in_place) {
    std::string a, b;
    f->Serialize(&a);
    g->Serialize(&b);
    if (a != b) Fail("sparse image: the in-place and two-step loads differ");
  }
  // The same bytes as a compact sparse image (kind 4 of LiveKeyDB's file):
  // an error or a filter that round-trips, never a crash.
  std::unique_ptr<dlcbf::DenseDLeftFilter> c;
  if (dlcbf::DenseDLeftFilter::DeserializeWithRecords(image_bytes, dlcbf::DenseDLeftFilter::ImageLayout::kSparseCompact,
                                                      {}, &c, dlcbf::DeserializeOptions{ts})
          .ok()) {
    std::string a;
    c->Serialize(&a);
    std::unique_ptr<dlcbf::DenseDLeftFilter> again;
    if (!dlcbf::DenseDLeftFilter::Deserialize(a, &again).ok()) Fail("compact sparse image: re-load failed");
  }
  // The rest as compact records (index file version 6): expanded, they
  // compact back to a run that expands to the same records.
  std::string expanded;
  if (dlcbf::DenseDLeftFilter::ExpandCompactRecords(recs, &expanded).ok()) {
    if (expanded.size() % 72 != 0) Fail("compact records: a partial record expanded");
    std::string again, twice;
    uint64_t next = 0;
    dlcbf::DenseDLeftFilter::CompactRecords(expanded, &next, &again);
    if (!dlcbf::DenseDLeftFilter::ExpandCompactRecords(again, &twice).ok() || twice != expanded) {
      Fail("compact records: no round trip");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t sel = data[0];
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  for (int fix = 0; fix < 2; ++fix) {
    const std::string s = fix ? dlcbf::fuzz::WithValidChecksum(body, n)
                              : std::string(reinterpret_cast<const char*>(body), n);
    const bool ts = (sel & 4) != 0;
    if (sel >= 0xF0) {
      Fast(s, (sel & 1) != 0, body, n);
      continue;
    }
    if (sel >= 0xE0) {
      Dense(s, (sel & 1) != 0, body, n);
      DenseSparse(s, (sel & 1) != 0, (sel & 2) != 0);
      continue;
    }
    switch (sel % 4) {
      case 0: DLeft(s, ts, body, n); break;
      case 1: Counting(s, ts, body, n); break;
      case 2: Autoscaling(s, ts, false, body, n); break;
      default: Autoscaling(s, ts, true, body, n); break;
    }
  }
  return 0;
}
