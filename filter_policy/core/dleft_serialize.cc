// DLeftCountingBloomFilter's on-disk format ("dLCB", version 1):
// AppendPackedBits, Serialize and the validating Deserialize. The kernel is
// in dleft_impl.h.
#include <string>

#include "filter_policy/core/dleft_impl.h"

namespace dlcbf {

namespace {

// Serialized format, version 1: the byte layout is drawn once, in
// filter_policy/FORMATS.md ("Standalone dlCBF"); fields are written in that
// order, one by one, little-endian.
constexpr uint32_t kMagic = 0x42434C64;  // "dLCB" read as little-endian
constexpr uint16_t kFormatVersion = 1;
// The field widths of the format (FORMATS.md, "Standalone dlCBF") hold the
// geometry bounds of internal/dleft_layout.h.
static_assert(internal::kMaxSubtables <= 255 && internal::kMaxCellsPerBucket <= 255 &&
                  internal::kMaxRemainderBits <= 255 && internal::kMaxCounterBits <= 255,
              "d, L, r and c are one byte each");
static_assert(internal::kMinSubtables >= 2 && internal::kMaxSubtables == 8 &&
                  internal::kMaxCellsPerBucket == 64 && internal::kMaxRemainderBits == 32 &&
                  internal::kMaxCounterBits == 4,
              "the ranges FORMATS.md states: d [2, 8], L [1, 64], r [2, 32], c [0, 4]");
static_assert(internal::kMaxFingerprintBits < 64 && internal::kMaxFingerprintBits >= internal::kMaxRemainderBits,
              "log2(B) + r stays below the 64 hash bits");
}  // namespace

void DLeftCountingBloomFilter::AppendPackedBits(std::string* out) const {
  auto lock = impl_->MaybeLock();
  impl_->AppendBitsLocked(out);
}

void DLeftCountingBloomFilter::Serialize(std::string* out) const {
  using namespace internal;
  const size_t start = out->size();
  {
    auto lock = impl_->MaybeLock();
    const Impl& m = *impl_;
    const Geometry& g = m.geo_;
    PutFixed32(out, kMagic);
    PutFixed16(out, kFormatVersion);
    PutFixed8(out, static_cast<uint8_t>(g.subtables));
    PutFixed8(out, static_cast<uint8_t>(g.cells));
    PutFixed8(out, static_cast<uint8_t>(g.remainder_bits));
    PutFixed8(out, static_cast<uint8_t>(g.counter_bits));
    PutFixed8(out, static_cast<uint8_t>(m.opt_.relocation));
    PutFixed8(out, 0);
    PutFixed32(out, m.opt_.max_relocation_nodes);
    PutFixed64(out, g.buckets);
    PutFixed64(out, m.hashing_.seed());
    for (uint32_t i = 0; i < g.subtables; ++i) {
      PutFixed64(out, m.hashing_.keys().k[i][0]);
      PutFixed64(out, m.hashing_.keys().k[i][1]);
    }
    PutFixed64(out, m.items_);
    PutFixed64(out, m.fingerprints_);
    PutFixed64(out, g.total_bytes());
    m.AppendBitsLocked(out);
  }
  PutFixed64(out, internal::HashKey(out->data() + start, out->size() - start, 0));
}

Status DLeftCountingBloomFilter::Deserialize(std::string_view data, std::unique_ptr<DLeftCountingBloomFilter>* out,
                                             const DeserializeOptions& options) {
  const bool thread_safe = options.thread_safe;
  const char* kWhat = "dlCBF deserialize";
  if (out == nullptr) return Status::InvalidArgument(kWhat, "out is null");
  internal::Decoder dec(data.data(), data.size());
  uint32_t magic = 0;
  uint16_t version = 0;
  uint8_t d = 0, L = 0, r = 0, c = 0, reloc = 0, reserved = 0;
  uint32_t max_nodes = 0;
  uint64_t B = 0, seed = 0;
  if (!dec.Get32(&magic)) return Status::Corruption(kWhat, "truncated header");
  if (magic != kMagic) return Status::Corruption(kWhat, "bad magic (not a dlCBF)");
  if (!dec.Get16(&version)) return Status::Corruption(kWhat, "truncated header");
  if (version != kFormatVersion) {
    return Status::NotSupported(kWhat, "unknown format version " + std::to_string(version));
  }
  if (!dec.Get8(&d) || !dec.Get8(&L) || !dec.Get8(&r) || !dec.Get8(&c) || !dec.Get8(&reloc) ||
      !dec.Get8(&reserved) || !dec.Get32(&max_nodes) || !dec.Get64(&B) || !dec.Get64(&seed)) {
    return Status::Corruption(kWhat, "truncated header");
  }
  DLeftOptions o;
  o.subtables = d;
  o.cells_per_bucket = L;
  o.remainder_bits = r;
  o.counter_bits = c;
  o.buckets_per_subtable = B;
  o.seed = seed;
  o.relocation = static_cast<Relocation>(reloc);
  o.max_relocation_nodes = max_nodes;
  o.thread_safe = thread_safe;
  if (reserved != 0) return Status::Corruption(kWhat, "reserved byte is not zero");
  if (const char* why = GeometryOf(o).Invalid()) return Status::Corruption(kWhat, why);
  if (reloc > static_cast<uint8_t>(Relocation::kBreadthFirst)) {
    return Status::Corruption(kWhat, "unknown relocation policy");
  }
  // Every bound Create() enforces (e.g. max_relocation_nodes <= 2^20, which
  // sizes the relocation search) holds for deserialized filters too. The
  // payload size is checked against the input below, so max_bytes is not
  // what limits a well-formed filter here.
  {
    DLeftOptions check = o;
    check.max_bytes = std::max<uint64_t>(check.max_bytes, GeometryOf(o).total_bytes());
    Status v = check.Validate();
    if (!v.ok()) return Status::Corruption(kWhat, v.ToString());
  }
  internal::PermutationKeys keys;
  for (uint32_t i = 0; i < d; ++i) {
    if (!dec.Get64(&keys.k[i][0]) || !dec.Get64(&keys.k[i][1])) {
      return Status::Corruption(kWhat, "truncated permutation keys");
    }
  }
  uint64_t items = 0, fps = 0, payload = 0;
  if (!dec.Get64(&items) || !dec.Get64(&fps) || !dec.Get64(&payload)) {
    return Status::Corruption(kWhat, "truncated header");
  }
  const Geometry g = GeometryOf(o);
  if (payload != g.total_bytes()) return Status::Corruption(kWhat, "payload size does not match geometry");
  if (dec.remaining() != payload + 8) return Status::Corruption(kWhat, "size does not match header (truncated or trailing bytes)");
  const size_t body = data.size() - 8;
  if (internal::HashKey(data.data(), body, 0) != internal::DecodeFixed64(data.data() + body)) {
    return Status::Corruption(kWhat, "checksum mismatch");
  }
  o.max_bytes = std::max<uint64_t>(o.max_bytes, payload);
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl(o, keys));
  if (!impl || !impl->Allocate()) return Status::MemoryLimit(kWhat, "allocation failed");
  const char* p = dec.data();
  for (uint64_t i = 0; i < payload; ++i) {
    impl->words_[i / 8] |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * (i % 8));
  }
  // Semantic checks: the trailing pad bits are zero, every empty cell is
  // all-zero, every remainder is in range, and the fingerprint count matches.
  uint64_t used_bits = g.total_bits();
  if (used_bits % 64 != 0 && (impl->words_[used_bits / 64] >> (used_bits % 64)) != 0) {
    return Status::Corruption(kWhat, "nonzero padding bits");
  }
  uint64_t occupied = 0;
  uint32_t max_count = 0;
  bool bad_cell = false;
  impl->ForEachCell([&](uint32_t, uint64_t, uint64_t cell) {
    if (!impl->codec_.Occupied(cell)) {
      if (cell != 0) bad_cell = true;  // counter bits set in an empty cell
      return;
    }
    ++occupied;
    max_count = std::max(max_count, impl->codec_.Counter(cell));
  });
  if (bad_cell) return Status::Corruption(kWhat, "malformed cell (empty cell with counter bits set)");
  if (occupied != fps) return Status::Corruption(kWhat, "fingerprint count does not match payload");
  impl->items_ = items;
  impl->fingerprints_ = fps;
  impl->max_counter_ = max_count;
  out->reset(new DLeftCountingBloomFilter(std::move(impl)));
  return Status::OK();
}

}  // namespace dlcbf
