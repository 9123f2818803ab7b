// FastDLeftFilter's on-disk format ("dLFK", version 1): Serialize and the
// validating Deserialize. The kernel is in fast_dleft_impl.h.
#include <cstring>
#include <string>

#include "dlcbf/internal/coding.h"
#include "filter_policy/core/fast_dleft_impl.h"

namespace dlcbf {

namespace {
constexpr char kMagic[4] = {'d', 'L', 'F', 'K'};
constexpr uint16_t kVersion = 1;
}  // namespace

// Serialization, version 1: the byte layout is drawn once, in
// filter_policy/FORMATS.md ("Fast kernel"); fields are written in that
// order, one by one, little-endian.
void FastDLeftFilter::Serialize(std::string* out) const {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.opt.thread_safe) g.lock();
  using namespace internal;
  out->append(kMagic, 4);
  const size_t start = out->size() - 4;
  PutFixed16(out, kVersion);
  PutFixed8(out, static_cast<uint8_t>(m.opt.subtables));
  PutFixed8(out, 13);
  PutFixed8(out, 2);
  PutFixed8(out, static_cast<uint8_t>(kBlocksPerSpare));
  PutFixed16(out, 0);
  // Bytes 12..23 hold k1, k2, k3 (4 bytes each).
  for (int i = 1; i < 4; ++i) PutFixed32(out, m.opt.subtables == 4 || i == 1 ? m.pkeys[i] : 0);
  PutFixed64(out, m.nblocks);
  PutFixed64(out, m.opt.seed);
  PutFixed64(out, m.items);
  PutFixed64(out, m.fingerprints);
  PutFixed64(out, m.spilled);
  const uint64_t words = 8 * (m.nblocks + m.nspare);
  out->reserve(out->size() + words * 8 + 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  out->append(reinterpret_cast<const char*>(m.mem.get()), words * 8);  // the encoding itself: one copy
#else
  for (uint64_t i = 0; i < words; ++i) PutFixed64(out, m.mem[i]);
#endif
  PutFixed64(out, HashKey(out->data() + start, out->size() - start, 0));
}

Status FastDLeftFilter::Deserialize(std::string_view data, std::unique_ptr<FastDLeftFilter>* out,
                            const DeserializeOptions& options) {
  const bool thread_safe = options.thread_safe;
  using internal::Decoder;
  auto corrupt = [](const std::string& why) {
    return Status::Corruption("FastDLeftFilter", why);
  };
  constexpr size_t kHeader = 64;
  if (data.size() < kHeader + 8) return corrupt("truncated header");
  if (std::memcmp(data.data(), kMagic, 4) != 0) return corrupt("bad magic");
  Decoder d(data.data() + 4, data.size() - 4);
  uint16_t version = 0, reserved = 0;
  uint8_t dd = 0, r = 0, c = 0, lg = 0;
  uint32_t keys[4] = {0, 0, 0, 0};
  uint64_t nblocks = 0, seed = 0, items = 0, fps = 0, spl = 0;
  d.Get16(&version);
  if (version != kVersion) return corrupt("unsupported version " + std::to_string(version));
  d.Get8(&dd);
  d.Get8(&r);
  d.Get8(&c);
  d.Get8(&lg);
  d.Get16(&reserved);
  for (int i = 1; i < 4; ++i) d.Get32(&keys[i]);
  d.Get64(&nblocks);
  d.Get64(&seed);
  d.Get64(&items);
  d.Get64(&fps);
  d.Get64(&spl);
  if (dd != 2 && dd != 4) return corrupt("bad subtable count");
  if (r != 13 || c != 2 || lg != kBlocksPerSpare || reserved != 0) return corrupt("unsupported cell geometry");
  if (dd == 2 && (keys[2] != 0 || keys[3] != 0)) return corrupt("unused permutation keys set");
  if (nblocks == 0 || nblocks > (uint64_t{1} << 50)) return corrupt("bad block count");
  const uint64_t nspare = SpareLinesFor(nblocks);
  const uint64_t payload = 64 * (nblocks + nspare);
  if (data.size() - kHeader - 8 != payload) return corrupt("size does not match the block count");
  const uint64_t want = internal::DecodeFixed64(data.data() + data.size() - 8);
  if (internal::HashKey(data.data(), data.size() - 8, 0) != want) return corrupt("checksum mismatch");

  FastDLeftOptions o;
  o.subtables = dd;
  o.blocks = nblocks;
  o.seed = seed;
  o.max_bytes = ~uint64_t{0};
  o.thread_safe = thread_safe;
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (!impl) return Status::MemoryLimit("FastDLeftFilter", "allocation failed");
  impl->opt = o;
  for (int i = 0; i < 4; ++i) impl->pkeys[i] = keys[i];
  Status s = impl->Allocate();
  if (!s.ok()) return s;
  const char* p = data.data() + kHeader;
  for (uint64_t i = 0; i < payload / 8; ++i) impl->mem[i] = internal::DecodeFixed64(p + 8 * i);
  impl->items = items;
  impl->fingerprints = fps;
  impl->spilled = spl;
  const char* why = dd == 4 ? impl->Check<4>() : impl->Check<2>();
  if (why != nullptr) return corrupt(why);
  out->reset(new FastDLeftFilter(std::move(impl)));
  return Status::OK();
}

}  // namespace dlcbf
