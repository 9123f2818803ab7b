// DenseDLeftFilter's on-disk format ("dLDN", version 1): Serialize and the
// validating Deserialize. The byte layout is drawn in
// filter_policy/FORMATS.md ("Dense dlCBF"); the block encoding in the
// design note of dense_dleft_filter.cc.
#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/memory.h"
#include "filter_policy/core/dense_dleft_impl.h"

namespace dlcbf {

namespace {
constexpr char kMagic[4] = {'d', 'L', 'D', 'N'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHeader = 64;  // FORMATS.md: fields at 0..63, then the blocks
constexpr size_t kItemsAt = 32;  // the header's item count
constexpr size_t kRecord = 8 + 64;  // a changed-block record: block number, block

// The header (FORMATS.md, "Dense kernel"), with `items` as its item count.
void PutHeader(const DenseDLeftFilter::Impl& m, uint64_t items, std::string* out) {
  using namespace internal;
  out->append(kMagic, 4);
  PutFixed16(out, kVersion);
  PutFixed8(out, static_cast<uint8_t>(m.opt.remainder_bits));
  PutFixed8(out, static_cast<uint8_t>(m.d));
  PutFixed16(out, static_cast<uint16_t>(m.opt.SlotsPerBlock()));
  PutFixed16(out, static_cast<uint16_t>(m.opt.BucketsPerBlock()));
  PutFixed32(out, 0);  // reserved
  PutFixed64(out, m.nb);
  PutFixed64(out, m.opt.seed);
  PutFixed64(out, items);  // at kItemsAt
  for (uint32_t i = 1; i < 4; ++i) PutFixed64(out, i < m.d ? m.hashing.keys().k[i][0] : 0);
}

// Clears the changed bits of blocks [b0, b1).
void ClearChanged(uint64_t* bits, uint64_t b0, uint64_t b1) {
  for (uint64_t b = b0; b < b1;) {
    if ((b & 63) == 0 && b + 64 <= b1) {
      bits[b >> 6] = 0;
      b += 64;
    } else {
      bits[b >> 6] &= ~(uint64_t{1} << (b & 63));
      ++b;
    }
  }
}

void MarkAllChanged(DenseDLeftFilter::Impl* m, std::mutex* mu) {
  std::unique_lock<std::mutex> g;
  if (mu != nullptr) g = std::unique_lock<std::mutex>(*mu);
  std::memset(m->changed.get(), 0xff, 8 * ((m->nblocks + 63) / 64));
}

// Appends block b as stored: its little-endian words.
void AppendBlock(const DenseDLeftFilter::Impl& m, uint64_t b, std::string* out) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  out->append(reinterpret_cast<const char*>(m.Blk(b)), 64);
#else
  const uint8_t* blk = m.Blk(b);
  for (int w = 0; w < dense_detail::kBlockWords; ++w) {
    uint64_t v;
    std::memcpy(&v, blk + 8 * w, 8);
    internal::PutFixed64(out, v);
  }
#endif
}

// One compact record: block b, its 64 bytes as stored (little-endian words).
void AppendCompactRecord(uint64_t b, const char* block, uint64_t* next, std::string* out) {
  uint64_t delta = b - *next;  // (blocks ascend)
  while (delta >= 0x80) {
    out->push_back(static_cast<char>((delta & 0x7f) | 0x80));
    delta >>= 7;
  }
  out->push_back(static_cast<char>(delta));
  const size_t mask_at = out->size();
  out->push_back('\0');
  uint8_t mask = 0;
  for (int w = 0; w < dense_detail::kBlockWords; ++w) {
    const char* word = block + 8 * w;
    if (internal::DecodeFixed64(word) != 0) {
      mask = static_cast<uint8_t>(mask | (1u << w));
      out->append(word, 8);
    }
  }
  (*out)[mask_at] = static_cast<char>(mask);
  *next = b + 1;
}

// Reads the compact record at `*i` of `compact`: its block number (from
// `*next`, advanced) and its 64 bytes as stored into `block`. Why not, or
// nullptr.
const char* ReadCompactRecord(std::string_view compact, size_t* i, uint64_t* next, uint64_t* b, char* block) {
  uint64_t delta = 0;
  int shift = 0;
  for (;;) {
    if (*i >= compact.size() || shift > 63) return "truncated or overlong block number";
    const uint8_t byte = static_cast<uint8_t>(compact[(*i)++]);
    delta |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
    shift += 7;
  }
  if (delta > ~uint64_t{0} - *next) return "block number overflows";
  *b = *next + delta;
  if (*b == ~uint64_t{0}) return "block number out of range";
  if (*i >= compact.size()) return "truncated record";
  const uint8_t mask = static_cast<uint8_t>(compact[(*i)++]);
  if (compact.size() - *i < 8 * static_cast<size_t>(__builtin_popcount(mask))) return "truncated block";
  for (int w = 0; w < dense_detail::kBlockWords; ++w) {
    if ((mask >> w) & 1) {
      if (internal::DecodeFixed64(compact.data() + *i) == 0) return "a zero word marked nonzero";
      std::memcpy(block + 8 * w, compact.data() + *i, 8);
      *i += 8;
    } else {
      std::memset(block + 8 * w, 0, 8);
    }
  }
  *next = *b + 1;
  return nullptr;
}
}  // namespace

bool DenseDLeftFilter::TrackChangedBlocks() {
  Impl& m = *impl_;
  if (!m.opt.thread_safe) return false;
  std::lock_guard<std::mutex> g(m.mu);  // (before the filter is shared: see the header)
  if (!m.changed) {
    m.changed.reset(new (std::nothrow) uint64_t[(m.nblocks + 63) / 64]);
    if (!m.changed) return false;
  }
  std::memset(m.changed.get(), 0xff, 8 * ((m.nblocks + 63) / 64));
  return true;
}

// The blocks changed since they were last copied (by this call or by
// SerializeInChunks), a chunk of blocks at a time under the writers' lock,
// as records: block number (fixed64), then the block's 64 bytes as
// Serialize stores them. Each block copied has its bit cleared in the same
// hold, so a write after that sets it again for the next call: applied to
// the image the last copy produced (PatchSerializedBlocks), the records
// give an image in which every block is as the filter held it at some
// instant of this call, blocks in ascending order: the chunked image of
// SerializeInChunks, so its guarantee holds (an unchanged block skipped
// at instant t is the block as of t).
bool DenseDLeftFilter::CopyChangedBlocks(std::string* out, std::mutex* writers, uint64_t chunk_blocks,
                                         uint64_t* blocks_copied,
                                         const std::function<void(uint64_t)>* between_chunks) const {
  const size_t start = out->size();
  const ImageSink append = [out](std::string_view piece) {
    out->append(piece.data(), piece.size());
    return true;
  };
  if (!CopyChangedBlocks(append, writers, chunk_blocks, blocks_copied, between_chunks)) {
    out->resize(start);
    return false;
  }
  return true;
}

bool DenseDLeftFilter::CopyChangedBlocks(const ImageSink& sink, std::mutex* writers, uint64_t chunk_blocks,
                                         uint64_t* blocks_copied,
                                         const std::function<void(uint64_t)>* between_chunks) const {
  Impl& m = *impl_;
  if (m.d != 2 || !m.changed) return false;
  std::mutex* mu = writers != nullptr ? writers : (m.lock_writers ? &m.mu : nullptr);
  chunk_blocks = std::max<uint64_t>(64, chunk_blocks & ~uint64_t{63});  // whole bitmap words
  uint64_t relocations_before = 0, copied = 0;
  bool moved = false, ok = true;
  // Each chunk's records go to `chunk` (its capacity reserved for a whole
  // chunk of records), then to the sink once the lock is released: a
  // writer never waits for the sink.
  std::string chunk;
  chunk.reserve(chunk_blocks * kRecord);
  // The chunk's changed blocks are listed first, then copied with a
  // prefetch kCopyAhead blocks ahead. They lie scattered over the chunk's
  // 64 * chunk_blocks bytes, and in a table larger than the cache each is a
  // miss: copied one after the other, every miss was waited for in turn,
  // with the writers' lock held (a delta of about 400,000 blocks of a
  // 300 MB table took about 12 ms of it).
  constexpr size_t kCopyAhead = 16;
  std::vector<uint64_t> todo;
  todo.reserve(chunk_blocks);
  for (uint64_t b0 = 0; ok && b0 < m.nblocks; b0 += chunk_blocks) {
    const uint64_t b1 = std::min<uint64_t>(m.nblocks, b0 + chunk_blocks);
    if (b0 > 0 && between_chunks != nullptr && *between_chunks) (*between_chunks)(b0);
    chunk.clear();
    todo.clear();
    {
      std::unique_lock<std::mutex> g;
      if (mu != nullptr) g = std::unique_lock<std::mutex>(*mu);
      if (b0 == 0) relocations_before = m.relocations;
#ifdef DLCBF_TESTING
      dense_testing::RunChunkLockedHook(b0);
#endif
      for (uint64_t w = b0 >> 6; w < (b1 + 63) >> 6; ++w) {
        uint64_t bits = m.changed[w];
        while (bits != 0) {
          const uint64_t b = (w << 6) + static_cast<uint64_t>(__builtin_ctzll(bits));
          bits &= bits - 1;
          if (b >= m.nblocks) break;
          if (todo.size() < kCopyAhead) __builtin_prefetch(m.Blk(b), 0, 0);
          todo.push_back(b);
        }
        m.changed[w] = 0;
      }
      for (size_t i = 0; i < todo.size(); ++i) {
        if (i + kCopyAhead < todo.size()) __builtin_prefetch(m.Blk(todo[i + kCopyAhead]), 0, 0);
        internal::PutFixed64(&chunk, todo[i]);
        AppendBlock(m, todo[i], &chunk);
      }
      copied += todo.size();
      if (b1 == m.nblocks) moved = m.relocations != relocations_before;
    }
    if (!chunk.empty()) ok = sink(chunk);
  }
  if (moved || !ok) {
    MarkAllChanged(&m, mu);  // what this copy cleared is not saved
    return false;
  }
  if (blocks_copied != nullptr) *blocks_copied = copied;
  return true;
}

Status DenseDLeftFilter::PatchSerializedBlocks(std::string* image, std::string_view records, uint64_t* items) {
  auto corrupt = [](const std::string& why) { return Status::Corruption("DenseDLeftFilter: " + why); };
  if (image->size() < kHeader + 8 || std::memcmp(image->data(), kMagic, 4) != 0) return corrupt("not an image");
  const uint64_t nblocks = (image->size() - kHeader - 8) / 64;
  if ((image->size() - kHeader - 8) % 64 != 0) return corrupt("image size");
  if (records.size() % kRecord != 0) return corrupt("truncated changed-block record");
  for (size_t i = 0; i < records.size(); i += kRecord) {
    const uint64_t b = internal::DecodeFixed64(records.data() + i);
    if (b >= nblocks) return corrupt("changed block " + std::to_string(b) + " out of range");
    std::memcpy(&(*image)[kHeader + 64 * b], records.data() + i + 8, 64);
  }
  const uint8_t r = static_cast<uint8_t>((*image)[6]);
  uint64_t used = 0;
  for (uint64_t b = 0; b < nblocks; ++b) {
    uint64_t w[dense_detail::kBlockWords];
    for (int k = 0; k < dense_detail::kBlockWords; ++k) {
      w[k] = internal::DecodeFixed64(image->data() + kHeader + 64 * b + 8 * k);
    }
    const uint8_t* blk = reinterpret_cast<const uint8_t*>(w);
    used += static_cast<uint64_t>(r == 8 ? dense_detail::Used<dense_detail::Class8>(blk)
                                         : dense_detail::Used<dense_detail::Class16>(blk));
  }
  internal::EncodeFixed64(&(*image)[kItemsAt], used);
  if (items != nullptr) *items = used;
  internal::EncodeFixed64(&(*image)[image->size() - 8], internal::HashKey(image->data(), image->size() - 8, 0));
  return Status::OK();
}

void DenseDLeftFilter::Serialize(std::string* out) const {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu, std::defer_lock);
  if (m.lock_writers) g.lock();
  using namespace internal;
  const size_t start = out->size();
  out->reserve(start + kHeader + 64 * m.nblocks + 8);
  PutHeader(m, m.items, out);
  // The blocks are stored as their little-endian words: on a
  // little-endian host the table is the encoding, one copy (a checkpoint
  // holds writers off while it runs: LiveKeyDB's checkpoint.cc).
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  out->append(reinterpret_cast<const char*>(m.Blk(0)), 64 * m.nblocks);
#else
  for (uint64_t b = 0; b < m.nblocks; ++b) {
    const uint8_t* blk = m.Blk(b);
    for (int w = 0; w < dense_detail::kBlockWords; ++w) {
      uint64_t v;
      std::memcpy(&v, blk + 8 * w, 8);
      PutFixed64(out, v);
    }
  }
#endif
  PutFixed64(out, HashKey(out->data() + start, out->size() - start, 0));
}

// The same bytes as Serialize, copied a chunk of blocks at a time with the
// writers' lock held only around each chunk (LiveKeyDB's checkpoints: the
// writers pause for one chunk, never for the table).
//
// What the image holds, d = 2. A key's fingerprint f lives in its two
// candidate blocks A < B (A in subtable 0). Writers change one block at a
// time under the lock: an insert adds a copy of f to A or B, an erase
// takes one from A if A holds one, else from B; no entry leaves its block
// (but by a relocation, below). The copy takes A at time tA, then B at
// tB > tA (ascending block order; both in one chunk: one instant). The
// image holds a(tA) + b(tB) copies. If no erase took from B in (tA, tB],
// b(tB) >= b(tA) and the image holds >= n(tA), n = a + b. Else let t be
// the last such erase: A held none then, so n(t+) = b(t+) <= b(tB). Either
// way: the image holds at least the fewest copies of f the filter held at
// any instant of the copy. (The order matters: copies taken in descending
// order, an insert into B after its copy and the erase of A's copy before
// A's would leave none.)
// A relocation (an insert into full candidates: past MaxLoad) moves a
// resident out of one block into another, where the copy could see it in
// neither. The relocation counter is read under the lock before the first
// chunk and after the last: any change, and the image is refused.
// The header's item count is the image's own (each block's used slots,
// counted under the lock as it is copied), so it loads like Serialize's.
bool DenseDLeftFilter::SerializeInChunks(std::string* out, std::mutex* writers, uint64_t chunk_blocks,
                                         uint64_t* items,
                                         const std::function<void(uint64_t)>* between_chunks) const {
  const size_t start = out->size();
  out->reserve(start + SerializedBytes());
  uint64_t used = 0;
  const ImageSink append = [out](std::string_view piece) {
    out->append(piece.data(), piece.size());
    return true;
  };
  if (!SerializeInChunks(append, writers, chunk_blocks, &used, between_chunks)) {
    out->resize(start);
    return false;
  }
  internal::EncodeFixed64(&(*out)[start + kItemsAt], used);
  internal::EncodeFixed64(&(*out)[out->size() - 8],
                          internal::HashKey(out->data() + start, out->size() - start - 8, kImageChecksumSeed));
  if (items != nullptr) *items = used;
  return true;
}

bool DenseDLeftFilter::SerializeInChunks(const ImageSink& sink, std::mutex* writers, uint64_t chunk_blocks,
                                         uint64_t* items, const std::function<void(uint64_t)>* between_chunks,
                                         ImageLayout layout) const {
  static_assert(kImageItemsOffset == kItemsAt, "the streamed image's item count is the header's");
  Impl& m = *impl_;
  if (m.d != 2) return false;  // the argument above is for d = 2
  std::mutex* mu = writers != nullptr ? writers : (m.lock_writers ? &m.mu : nullptr);
  chunk_blocks = std::max<uint64_t>(1, chunk_blocks);
  using namespace internal;
  // The header's fields are fixed at Create, but the item count: a zero
  // here, the caller's to write.
  std::string chunk;
  PutHeader(m, 0, &chunk);
  bool ok = sink(chunk);
  const bool sparse = layout != ImageLayout::kWhole;
  const bool compact = layout == ImageLayout::kSparseCompact;
  uint64_t next = 0;  // kSparseCompact: the block after the last record's
  std::string compacted;  // (as large as `chunk`: no allocation under the lock after the swap)
  if (compact) compacted.reserve(kRecord * std::min<uint64_t>(chunk_blocks, m.nblocks));
  chunk.reserve((sparse ? kRecord : 64) * std::min<uint64_t>(chunk_blocks, m.nblocks));
  const bool r8 = m.opt.remainder_bits == 8;
  uint64_t used = 0, relocations_before = 0;
  bool moved = false;
  for (uint64_t b0 = 0; ok && b0 < m.nblocks; b0 += chunk_blocks) {
    const uint64_t b1 = std::min<uint64_t>(m.nblocks, b0 + chunk_blocks);
    if (b0 > 0 && between_chunks != nullptr && *between_chunks) (*between_chunks)(b0);
    chunk.clear();
    {
      std::unique_lock<std::mutex> g;
      if (mu != nullptr) g = std::unique_lock<std::mutex>(*mu);
      if (b0 == 0) relocations_before = m.relocations;
#ifdef DLCBF_TESTING
      dense_testing::RunChunkLockedHook(b0);
#endif
      if (sparse) {
        for (uint64_t b = b0; b < b1; ++b) {
          uint64_t w[dense_detail::kBlockWords];
          std::memcpy(w, m.Blk(b), 64);
          uint64_t any = 0;
          for (int k = 0; k < dense_detail::kBlockWords; ++k) any |= w[k];
          if (any == 0) continue;
          internal::PutFixed64(&chunk, b);
          AppendBlock(m, b, &chunk);
        }
      } else {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        chunk.append(reinterpret_cast<const char*>(m.Blk(b0)), 64 * (b1 - b0));  // (the table is the encoding)
#else
        for (uint64_t b = b0; b < b1; ++b) AppendBlock(m, b, &chunk);
#endif
      }
      for (uint64_t b = b0; b < b1; ++b) {
        used += static_cast<uint64_t>(r8 ? dense_detail::Used<dense_detail::Class8>(m.Blk(b))
                                         : dense_detail::Used<dense_detail::Class16>(m.Blk(b)));
      }
      if (m.changed) ClearChanged(m.changed.get(), b0, b1);
      if (b1 == m.nblocks) moved = m.relocations != relocations_before;
    }
    if (compact && !chunk.empty()) {  // (compacted with no lock held, as the sink runs)
      compacted.clear();
      CompactRecords(chunk, &next, &compacted);
      chunk.swap(compacted);
    }
    if (!chunk.empty()) ok = sink(chunk);  // (no lock held: a writer never waits for the sink)
  }
  if (ok) ok = sink(std::string_view("\0\0\0\0\0\0\0\0", 8));  // the checksum's place
  if (moved || !ok) {
    if (m.changed) MarkAllChanged(&m, mu);  // what this copy cleared is not saved
    return false;
  }
  if (items != nullptr) *items = used;
  return true;
}

Status DenseDLeftFilter::ExpandSparseImage(std::string_view sparse, std::string* image) {
  auto corrupt = [](const std::string& why) { return Status::Corruption("DenseDLeftFilter: sparse image: " + why); };
  if (sparse.size() < kHeader + 8 || std::memcmp(sparse.data(), kMagic, 4) != 0) return corrupt("not an image");
  const size_t body = sparse.size() - 8;
  if ((body - kHeader) % kRecord != 0) return corrupt("truncated record");
  if (internal::HashKey(sparse.data(), body, kImageChecksumSeed) != internal::DecodeFixed64(sparse.data() + body)) {
    return corrupt("checksum mismatch");
  }
  const uint64_t nb = internal::DecodeFixed64(sparse.data() + 16);  // blocks per subtable (FORMATS.md)
  const uint8_t d = static_cast<uint8_t>(sparse[7]);
  if (d < 1 || d > 4 || nb == 0 || nb > (uint64_t{1} << 40)) return corrupt("bad geometry");
  const uint64_t nblocks = nb * d;
  if (nblocks > internal::PhysicalMemoryBytes() / 64) {
    return Status::MemoryLimit("DenseDLeftFilter: sparse image of " + std::to_string(nblocks) + " blocks");
  }
  uint64_t last = 0;
  bool first = true;
  for (size_t i = kHeader; i < body; i += kRecord) {
    const uint64_t b = internal::DecodeFixed64(sparse.data() + i);
    if (b >= nblocks || (!first && b <= last)) return corrupt("record out of range or out of order");
    first = false;
    last = b;
  }
  image->assign(kHeader + 64 * nblocks + 8, '\0');
  std::memcpy(&(*image)[0], sparse.data(), kHeader);
  uint64_t items = 0;
  const Status s = PatchSerializedBlocks(image, sparse.substr(kHeader, body - kHeader), &items);
  if (!s.ok()) return s;
  if (items != internal::DecodeFixed64(sparse.data() + kItemsAt)) return corrupt("item count does not match");
  return Status::OK();
}

uint64_t DenseDLeftFilter::SerializedBytes() const { return kHeader + 64 * impl_->nblocks + 8; }

namespace {
// The image header (FORMATS.md, "Dense kernel") of a whole or sparse
// image: the geometry checked, as options, permutation keys and item count.
Status ParseImageHeader(std::string_view data, bool thread_safe, DenseDLeftOptions* out_o,
                        internal::PermutationKeys* out_pk, uint64_t* out_items) {
  auto corrupt = [](const std::string& why) { return Status::Corruption("DenseDLeftFilter: " + why); };
  if (data.size() < kHeader + 8) return corrupt("truncated header");
  if (std::memcmp(data.data(), kMagic, 4) != 0) return corrupt("bad magic");
  internal::Decoder dec(data.data() + 4, data.size() - 4);
  uint16_t version = 0, slots = 0, buckets = 0;
  uint8_t r = 0, dd = 0;
  uint32_t reserved = 0;
  uint64_t nb = 0, seed = 0, items = 0, keys[4] = {0, 0, 0, 0};
  dec.Get16(&version);
  if (version != kVersion) return corrupt("unsupported version " + std::to_string(version));
  dec.Get8(&r);
  dec.Get8(&dd);
  dec.Get16(&slots);
  dec.Get16(&buckets);
  dec.Get32(&reserved);
  dec.Get64(&nb);
  dec.Get64(&seed);
  dec.Get64(&items);
  for (int i = 1; i < 4; ++i) dec.Get64(&keys[i]);
  DenseDLeftOptions o;
  o.remainder_bits = r;
  o.subtables = dd;
  o.blocks_per_subtable = nb;
  o.seed = seed;
  o.max_bytes = ~uint64_t{0};
  o.thread_safe = thread_safe;
  if (!o.Validate().ok()) return corrupt("bad geometry: " + o.Validate().message());
  if (slots != o.SlotsPerBlock() || buckets != o.BucketsPerBlock() || reserved != 0)
    return corrupt("block geometry does not match the remainder class");
  for (uint32_t i = dd; i < 4; ++i) {
    if (keys[i] != 0) return corrupt("unused permutation keys set");
  }
  *out_o = o;
  for (uint32_t i = 1; i < dd; ++i) out_pk->k[i][0] = keys[i];
  *out_items = items;
  return Status::OK();
}
}  // namespace

Status DenseDLeftFilter::Deserialize(std::string_view data, std::unique_ptr<DenseDLeftFilter>* out,
                            const DeserializeOptions& options) {
  auto corrupt = [](const std::string& why) { return Status::Corruption("DenseDLeftFilter: " + why); };
  DenseDLeftOptions o;
  internal::PermutationKeys pk;
  uint64_t items = 0;
  Status hs = ParseImageHeader(data, options.thread_safe, &o, &pk, &items);
  if (!hs.ok()) return hs;
  const uint32_t r = o.remainder_bits;
  if ((data.size() - kHeader - 8) / 64 != o.Blocks() || (data.size() - kHeader - 8) % 64 != 0)
    return corrupt("size does not match the block count");
  const uint64_t want = internal::DecodeFixed64(data.data() + data.size() - 8);
  if (internal::HashKey(data.data(), data.size() - 8, 0) != want) return corrupt("checksum mismatch");

  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (!impl) return Status::MemoryLimit("DenseDLeftFilter: allocation failed");
  impl->opt = o;
  impl->Init(pk);
  if (o.Bytes() > internal::PhysicalMemoryBytes() || !impl->Allocate())
    return Status::MemoryLimit("DenseDLeftFilter: " + std::to_string(o.Bytes()) + " bytes cannot be allocated");
  const char* p = data.data() + kHeader;
  for (uint64_t b = 0; b < impl->nblocks; ++b) {
    uint8_t* blk = impl->Blk(b);
    for (int w = 0; w < dense_detail::kBlockWords; ++w) {
      const uint64_t v = internal::DecodeFixed64(p + 64 * b + 8 * w);
      std::memcpy(blk + 8 * w, &v, 8);
    }
  }
  uint64_t used = 0;
  const char* why = r == 8 ? impl->Check<dense_detail::Class8>(&used) : impl->Check<dense_detail::Class16>(&used);
  if (why != nullptr) return corrupt(why);
  if (used != items) return corrupt("item count does not match the blocks");
  impl->items = items;
  out->reset(new DenseDLeftFilter(std::move(impl)));
  return Status::OK();
}

// In place: a sparse image's table is allocated zeroed (untouched pages
// stay unmapped) and only the blocks its records and `records` name are
// written and checked; a whole image is Deserialized and `records` are
// written over its table. Each block written is checked as it lands and
// the item count kept by difference (Used of the block it replaces), so
// no pass runs over the whole table, no image is copied and no second
// table is allocated. A record naming a block twice is applied twice, in
// order: the last one stays, as PatchSerializedBlocks does. Stricter than
// the two-step path in one way only: an intermediate record whose block
// a later one replaces is checked too (every record CopyChangedBlocks
// writes is a block the filter held, so a valid file never has one).
Status DenseDLeftFilter::DeserializeWithRecords(std::string_view image, ImageLayout layout,
                                                const std::vector<std::string_view>& record_runs,
                                                std::unique_ptr<DenseDLeftFilter>* out,
                                                const DeserializeOptions& options, uint64_t* items_out,
                                                bool compact_runs) {
  auto corrupt = [](const std::string& why) { return Status::Corruption("DenseDLeftFilter: " + why); };
  for (std::string_view records : record_runs) {
    if (!compact_runs && records.size() % kRecord != 0) return corrupt("truncated changed-block record");
  }
  std::unique_ptr<DenseDLeftFilter> f;
  uint64_t items = 0;
  bool r8 = true;
  // Checks block b as it now lies in the table: nullptr, or why not valid.
  auto check_block = [&r8](const Impl& m, uint64_t b) {
    return r8 ? dense_detail::CheckBlock<dense_detail::Class8>(m.Blk(b))
              : dense_detail::CheckBlock<dense_detail::Class16>(m.Blk(b));
  };
  auto used_of = [&r8](const Impl& m, uint64_t b) {
    return static_cast<uint64_t>(r8 ? dense_detail::Used<dense_detail::Class8>(m.Blk(b))
                                    : dense_detail::Used<dense_detail::Class16>(m.Blk(b)));
  };
  auto write_block = [](Impl* m, uint64_t b, const char* src) {
    uint8_t* blk = m->Blk(b);
    for (int w = 0; w < dense_detail::kBlockWords; ++w) {
      const uint64_t v = internal::DecodeFixed64(src + 8 * w);
      std::memcpy(blk + 8 * w, &v, 8);
    }
  };
  if (layout == ImageLayout::kWhole) {
    Status s = Deserialize(image, &f, options);
    if (!s.ok()) return s;
    items = f->impl_->items;
    r8 = f->impl_->opt.remainder_bits == 8;
  } else {
    if (image.size() < kHeader + 8 || std::memcmp(image.data(), kMagic, 4) != 0) {
      return corrupt("sparse image: not an image");
    }
    const size_t body = image.size() - 8;
    const bool compact = layout == ImageLayout::kSparseCompact;
    if (!compact && (body - kHeader) % kRecord != 0) return corrupt("sparse image: truncated record");
    if (internal::HashKey(image.data(), body, kImageChecksumSeed) != internal::DecodeFixed64(image.data() + body)) {
      return corrupt("sparse image: checksum mismatch");
    }
    DenseDLeftOptions o;
    internal::PermutationKeys pk;
    uint64_t claimed = 0;
    Status hs = ParseImageHeader(image, options.thread_safe, &o, &pk, &claimed);
    if (!hs.ok()) return hs;
    r8 = o.remainder_bits == 8;
    std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
    if (!impl) return Status::MemoryLimit("DenseDLeftFilter: allocation failed");
    impl->opt = o;
    impl->Init(pk);
    if (o.Bytes() > internal::PhysicalMemoryBytes() || !impl->Allocate()) {
      return Status::MemoryLimit("DenseDLeftFilter: " + std::to_string(o.Bytes()) + " bytes cannot be allocated");
    }
    uint64_t last = 0, next = 0;
    const std::string_view records = image.substr(kHeader, body - kHeader);
    char block[64];
    for (size_t i = 0; i < records.size();) {
      uint64_t b = 0;
      const char* src = block;
      if (compact) {  // (ascending by construction)
        const char* why = ReadCompactRecord(records, &i, &next, &b, block);
        if (why != nullptr) return corrupt(std::string("sparse image: ") + why);
      } else {
        b = internal::DecodeFixed64(records.data() + i);
        if (i > 0 && b <= last) return corrupt("sparse image: record out of range or out of order");
        src = records.data() + i + 8;
        i += kRecord;
      }
      if (b >= impl->nblocks) return corrupt("sparse image: record out of range or out of order");
      last = b;
      write_block(impl.get(), b, src);  // each block once: ascending
      const char* why = check_block(*impl, b);
      if (why != nullptr) return corrupt(why);
      items += used_of(*impl, b);
    }
    if (items != claimed) return corrupt("sparse image: item count does not match");
    impl->items = items;
    f.reset(new DenseDLeftFilter(std::move(impl)));
  }
  Impl& m = *f->impl_;
  char block[64];
  for (std::string_view records : record_runs) {
    uint64_t next = 0;  // (compact runs: each from block 0)
    for (size_t i = 0; i < records.size();) {
      uint64_t b = 0;
      const char* src = block;
      if (compact_runs) {
        const char* why = ReadCompactRecord(records, &i, &next, &b, block);
        if (why != nullptr) return corrupt(std::string("compact records: ") + why);
      } else {
        b = internal::DecodeFixed64(records.data() + i);
        src = records.data() + i + 8;
        i += kRecord;
      }
      if (b >= m.nblocks) return corrupt("changed block " + std::to_string(b) + " out of range");
      items -= used_of(m, b);  // valid: checked when it landed
      write_block(&m, b, src);
      const char* why = check_block(m, b);
      if (why != nullptr) return corrupt(why);
      items += used_of(m, b);
    }
  }
  m.items = items;
  if (items_out != nullptr) *items_out = items;
  *out = std::move(f);
  return Status::OK();
}

// Compact records (FORMATS.md, "Compact changed-block records"): per
// record, varint64(block - next), next being the previous record's block
// plus one (0 at the start of a run), so blocks ascend strictly; a byte
// whose bit w is set iff the block's word w (fixed64, as Serialize stores
// it) is not zero; then those words in order. A changed block of a dense
// index holds 2-3 nonzero words at the fills LiveKeyDB runs (2.6 on
// average with 740,000 keys in 470,000 blocks): 24-27 bytes a record
// against 72.

void DenseDLeftFilter::CompactRecords(std::string_view records, uint64_t* next, std::string* out) {
  for (size_t i = 0; i + kRecord <= records.size(); i += kRecord) {
    AppendCompactRecord(internal::DecodeFixed64(records.data() + i), records.data() + i + 8, next, out);
  }
}

Status DenseDLeftFilter::ExpandCompactRecords(std::string_view compact, std::string* records) {
  uint64_t next = 0, b = 0;
  size_t i = 0;
  char block[64];
  while (i < compact.size()) {
    const char* why = ReadCompactRecord(compact, &i, &next, &b, block);
    if (why != nullptr) return Status::Corruption(std::string("DenseDLeftFilter: compact records: ") + why);
    internal::PutFixed64(records, b);
    records->append(block, 64);
  }
  return Status::OK();
}

}  // namespace dlcbf
