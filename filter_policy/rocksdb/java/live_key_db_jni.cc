// The JNI side of LiveKeyDB's Java binding (java/org/dlcbf/rocksdb/): opens a
// LiveKeyDB and hands RocksJava the handle of a rocksdb::DB, so that every
// call of org.rocksdb.RocksDB goes through LiveKeyDB; its index options come
// as "name=value;..." (the C++ names) and are validated here. Compiled into
// RocksJava's librocksdbjni by the plugin's CMakeLists.txt when RocksDB is
// built WITH_JNI. Errors become org.rocksdb.RocksDBException; nothing else
// is thrown.
#include <jni.h>

#include <charconv>
#include <string>
#include <vector>

#include "dlcbf/rocksdb/live_key_db.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction_db.h"

namespace {

// (Never over a pending exception: that one is reported.)
void Throw(JNIEnv* env, const std::string& msg) {
  if (env->ExceptionCheck()) return;
  jclass c = env->FindClass("org/rocksdb/RocksDBException");
  if (c != nullptr) env->ThrowNew(c, msg.c_str());
}

// False with an exception pending (OutOfMemoryError) when the string
// cannot be read.
bool Str(JNIEnv* env, jstring s, std::string* out) {
  out->clear();
  if (s == nullptr) return true;
  const char* p = env->GetStringUTFChars(s, nullptr);
  if (p == nullptr) return false;
  *out = p;
  env->ReleaseStringUTFChars(s, p);
  return true;
}

// Base 10, the whole string, no sign or space; doubles in the C locale's
// form whatever the JVM's locale (std::from_chars).
bool ParseU64(const std::string& v, uint64_t* out) {
  const char* end = v.data() + v.size();
  const auto r = std::from_chars(v.data(), end, *out, 10);
  return !v.empty() && r.ec == std::errc() && r.ptr == end;
}

bool ParseDouble(const std::string& v, double* out) {
  const char* end = v.data() + v.size();
  const auto r = std::from_chars(v.data(), end, *out);
  return !v.empty() && r.ec == std::errc() && r.ptr == end;
}

bool ParseBool(const std::string& v, bool* out) {
  if (v == "true" || v == "1") {
    *out = true;
  } else if (v == "false" || v == "0") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

// One option, by its C++ name. InvalidArgument naming the field otherwise.
rocksdb::Status SetOption(dlcbf::LiveKeyIndexOptions* o, const std::string& name, const std::string& v) {
  uint64_t u = 0;
  double d = 0;
  bool b = false;
  const auto bad = [&] { return rocksdb::Status::InvalidArgument(name + ": bad value '" + v + "'"); };
  const auto u32 = [&](uint32_t* f) {
    if (!ParseU64(v, &u) || u > 0xFFFFFFFFULL) return bad();
    *f = static_cast<uint32_t>(u);
    return rocksdb::Status::OK();
  };
  const auto u64 = [&](uint64_t* f) {
    if (!ParseU64(v, &u)) return bad();
    *f = u;
    return rocksdb::Status::OK();
  };
  const auto dbl = [&](double* f) {
    if (!ParseDouble(v, &d)) return bad();
    *f = d;
    return rocksdb::Status::OK();
  };
  const auto bln = [&](bool* f) {
    if (!ParseBool(v, &b)) return bad();
    *f = b;
    return rocksdb::Status::OK();
  };
  if (name == "expected_keys") return u64(&o->expected_keys);
  if (name == "kernel") {
    if (v == "dense") {
      o->kernel = dlcbf::ElasticKernel::kDense;
    } else if (v == "fast") {
      o->kernel = dlcbf::ElasticKernel::kFast;
    } else {
      return bad();
    }
    return rocksdb::Status::OK();
  }
  if (name == "bits_per_key") return dbl(&o->bits_per_key);
  if (name == "sizing_load") return dbl(&o->sizing_load);
  if (name == "seed") return u64(&o->seed);
  if (name == "abf_counter_bits") return u32(&o->abf_counter_bits);
  if (name == "auto_rebuild_drift") return dbl(&o->auto_rebuild_drift);
  if (name == "rebuild_at_capacity") return dbl(&o->rebuild_at_capacity);
  if (name == "rebuild_headroom") return dbl(&o->rebuild_headroom);
  if (name == "lock_stripes") return u32(&o->lock_stripes);
  if (name == "delete_range_scan_limit") return u64(&o->delete_range_scan_limit);
  if (name == "trust_single_delete") return bln(&o->trust_single_delete);
  if (name == "trust_comparator") return bln(&o->trust_comparator);
  if (name == "persist_index") return bln(&o->persist_index);
  if (name == "index_file_name") {
    o->index_file_name = v;
    return rocksdb::Status::OK();
  }
  if (name == "defer_liveness_checks") return bln(&o->defer_liveness_checks);
  if (name == "max_pending_checks") return u32(&o->max_pending_checks);
  if (name == "max_deferring_writers") return u32(&o->max_deferring_writers);
  if (name == "unchecked_copy_budget") return dbl(&o->unchecked_copy_budget);
  if (name == "rebuild_progress_interval") return u64(&o->rebuild_progress_interval);
  if (name == "rebuild_scan_threads") return u32(&o->rebuild_scan_threads);
  if (name == "background_open_build") return bln(&o->background_open_build);
  if (name == "live_prefix_counts") return bln(&o->live_prefix_counts);
  if (name == "checkpoint_interval_seconds") return dbl(&o->checkpoint_interval_seconds);
  if (name == "live_range_lengths") {
    o->live_range_lengths.clear();
    size_t at = 0;
    while (at <= v.size() && !v.empty()) {  // "5:6": every length non-empty
      size_t colon = v.find(':', at);
      if (colon == std::string::npos) colon = v.size();
      if (!ParseU64(v.substr(at, colon - at), &u) || u > 0xFFFFFFFFULL) return bad();
      o->live_range_lengths.push_back(static_cast<uint32_t>(u));
      at = colon + 1;
    }
    return rocksdb::Status::OK();
  }
  return rocksdb::Status::InvalidArgument(name + ": no such LiveKeyIndexOptions field");
}

// "name=value;name=value" (live_range_lengths: "5:6").
rocksdb::Status ParseOptions(const std::string& s, dlcbf::LiveKeyIndexOptions* o) {
  size_t at = 0;
  while (at < s.size()) {
    size_t semi = s.find(';', at);
    if (semi == std::string::npos) semi = s.size();
    const std::string item = s.substr(at, semi - at);
    at = semi + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return rocksdb::Status::InvalidArgument("'" + item + "': expected name=value");
    const rocksdb::Status st = SetOption(o, item.substr(0, eq), item.substr(eq + 1));
    if (!st.ok()) return st;
  }
  return o->Validate();
}

// The LiveKeyDB behind a handle: a LiveKeyDB's own (kind 0), or the
// TransactionDB or OptimisticTransactionDB its Open returned (kind 1);
// nullptr (a RocksDBException thrown) for a handle of no LiveKeyDB.
// False with a RocksDBException thrown (or an exception pending) unless s is OK.
bool Ok(JNIEnv* env, const rocksdb::Status& s) {
  if (!s.ok()) Throw(env, s.ToString());
  return s.ok();
}

// Every open's first step: the index options parsed and validated, the path read.
bool OpenArgs(JNIEnv* env, jstring index_options, jstring path, dlcbf::LiveKeyIndexOptions* io, std::string* where) {
  std::string text;
  return Str(env, index_options, &text) && Str(env, path, where) && Ok(env, ParseOptions(text, io));
}

dlcbf::LiveKeyDB* Live(JNIEnv* env, jlong handle, jint kind) {
  rocksdb::DB* db = reinterpret_cast<rocksdb::DB*>(handle);
  dlcbf::LiveKeyDB* live = kind == 0 ? static_cast<dlcbf::LiveKeyDB*>(db) : dlcbf::LiveKeyDB::FromTransactionDB(db);
  if (live == nullptr) Throw(env, "not a DB that LiveKeyDB opened");
  return live;
}

jlongArray Longs(JNIEnv* env, const std::vector<jlong>& v) {
  jlongArray out = env->NewLongArray(static_cast<jsize>(v.size()));
  if (out != nullptr) env->SetLongArrayRegion(out, 0, static_cast<jsize>(v.size()), v.data());
  return out;
}

}  // namespace

extern "C" {

// Validates an options string; throws RocksDBException naming the field.
JNIEXPORT void JNICALL Java_org_dlcbf_rocksdb_LiveKeyIndexOptions_validate(JNIEnv* env, jclass, jstring opts) {
  dlcbf::LiveKeyIndexOptions io;
  std::string text;
  if (Str(env, opts, &text)) Ok(env, ParseOptions(text, &io));
}

// LiveKeyDB::Open(options, index options, path): the rocksdb::DB* handle.
JNIEXPORT jlong JNICALL Java_org_dlcbf_rocksdb_LiveKeyDB_openNative(JNIEnv* env, jclass, jlong options_handle,
                                                                    jstring index_options, jstring path) {
  dlcbf::LiveKeyIndexOptions io;
  std::string where;
  if (!OpenArgs(env, index_options, path, &io, &where)) return {};
  const auto* opts = reinterpret_cast<const rocksdb::Options*>(options_handle);
  dlcbf::LiveKeyDB* db = nullptr;
  if (!Ok(env, dlcbf::LiveKeyDB::Open(*opts, io, where, &db))) return 0;
  return reinterpret_cast<jlong>(static_cast<rocksdb::DB*>(db));
}

// LiveKeyDB::Open with column families: {db, handle per descriptor} (as
// RocksJava's RocksDB.open(DBOptions, path, descriptors, handles) returns).
JNIEXPORT jlongArray JNICALL Java_org_dlcbf_rocksdb_LiveKeyDB_openColumnFamiliesNative(
    JNIEnv* env, jclass, jlong db_options_handle, jstring index_options, jstring path, jobjectArray names,
    jlongArray cf_options_handles) {
  dlcbf::LiveKeyIndexOptions io;
  std::string where;
  if (!OpenArgs(env, index_options, path, &io, &where)) return {};
  const jsize n = env->GetArrayLength(names);
  if (env->GetArrayLength(cf_options_handles) != n) {
    Throw(env, "LiveKeyDB: one ColumnFamilyOptions per column family name");
    return nullptr;
  }
  std::vector<jlong> opt(static_cast<size_t>(n));
  env->GetLongArrayRegion(cf_options_handles, 0, n, opt.data());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (jsize i = 0; i < n; ++i) {
    auto* b = static_cast<jbyteArray>(env->GetObjectArrayElement(names, i));
    const jsize len = env->GetArrayLength(b);
    std::string name(static_cast<size_t>(len), '\0');
    env->GetByteArrayRegion(b, 0, len, reinterpret_cast<jbyte*>(&name[0]));
    env->DeleteLocalRef(b);
    cfs.emplace_back(name, *reinterpret_cast<const rocksdb::ColumnFamilyOptions*>(opt[static_cast<size_t>(i)]));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  dlcbf::LiveKeyDB* db = nullptr;
  if (!Ok(env, dlcbf::LiveKeyDB::Open(*reinterpret_cast<const rocksdb::DBOptions*>(db_options_handle), io, where,
                                      cfs, &handles, &db))) {
    return nullptr;
  }
  std::vector<jlong> out;
  out.push_back(reinterpret_cast<jlong>(static_cast<rocksdb::DB*>(db)));
  for (rocksdb::ColumnFamilyHandle* h : handles) out.push_back(reinterpret_cast<jlong>(h));
  jlongArray r = Longs(env, out);
  if (r == nullptr) {  // (OutOfMemoryError pending: nobody would own the DB)
    for (rocksdb::ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    delete db;
  }
  return r;
}

// LiveKeyDB::OpenTransactionDB / OpenOptimisticTransactionDB: RocksDB's own
// TransactionDB* / OptimisticTransactionDB* (RocksJava's handles).
JNIEXPORT jlong JNICALL Java_org_dlcbf_rocksdb_LiveKeyDB_openTransactionDBNative(JNIEnv* env, jclass, jlong options_handle,
                                                                                 jlong txn_options_handle,
                                                                                 jstring index_options, jstring path) {
  dlcbf::LiveKeyIndexOptions io;
  std::string where;
  if (!OpenArgs(env, index_options, path, &io, &where)) return {};
  rocksdb::TransactionDB* db = nullptr;
  if (!Ok(env, dlcbf::LiveKeyDB::OpenTransactionDB(
                   *reinterpret_cast<const rocksdb::Options*>(options_handle),
                   *reinterpret_cast<const rocksdb::TransactionDBOptions*>(txn_options_handle), io, where, &db))) {
    return 0;
  }
  return reinterpret_cast<jlong>(db);
}

JNIEXPORT jlong JNICALL Java_org_dlcbf_rocksdb_LiveKeyDB_openOptimisticTransactionDBNative(JNIEnv* env, jclass,
                                                                                           jlong options_handle,
                                                                                           jstring index_options,
                                                                                           jstring path) {
  dlcbf::LiveKeyIndexOptions io;
  std::string where;
  if (!OpenArgs(env, index_options, path, &io, &where)) return {};
  rocksdb::OptimisticTransactionDB* db = nullptr;
  if (!Ok(env, dlcbf::LiveKeyDB::OpenOptimisticTransactionDB(
                   *reinterpret_cast<const rocksdb::Options*>(options_handle), io, where, &db))) {
    return 0;
  }
  return reinterpret_cast<jlong>(db);  // (RocksJava's own OptimisticTransactionDB handle)
}

// Deletes a DB a Java wrapper could not be made for (the open's cleanup).
JNIEXPORT void JNICALL Java_org_dlcbf_rocksdb_LiveKeyDB_deleteNative(JNIEnv*, jclass, jlong handle) {
  delete reinterpret_cast<rocksdb::DB*>(handle);
}

// DestroyColumnFamilyHandle through the DB (LiveKeyDB keeps its families'
// handles until Close): RocksJava's own close would delete them directly.
JNIEXPORT void JNICALL Java_org_dlcbf_rocksdb_LiveKeyDB_destroyColumnFamilyHandleNative(JNIEnv*, jclass, jlong db,
                                                                                       jlong cf) {
  reinterpret_cast<rocksdb::DB*>(db)->DestroyColumnFamilyHandle(reinterpret_cast<rocksdb::ColumnFamilyHandle*>(cf))
      .PermitUncheckedError();
}

// GetLiveKeyStats(): the user counters in LiveKeyStats.java's order.
JNIEXPORT jlongArray JNICALL Java_org_dlcbf_rocksdb_LiveKeyStats_counters(JNIEnv* env, jclass, jlong handle, jint kind) {
  dlcbf::LiveKeyDB* live = Live(env, handle, kind);
  if (live == nullptr) return nullptr;
  const dlcbf::LiveKeyStats st = live->GetLiveKeyStats();
  return Longs(env, {static_cast<jlong>(st.lookups), static_cast<jlong>(st.short_circuited),
                     static_cast<jlong>(st.dead_prefix_seeks), static_cast<jlong>(st.moved_seeks),
                     static_cast<jlong>(st.bypassed_reads), static_cast<jlong>(st.queue_full_fallbacks),
                     static_cast<jlong>(st.busy_sync_reads), static_cast<jlong>(st.unverified_reads),
                     static_cast<jlong>(st.unseen_write_detections), static_cast<jlong>(st.trust_recoveries),
                     static_cast<jlong>(st.indexes_trusted ? 1 : 0), static_cast<jlong>(st.delete_range_limit_hits),
                     static_cast<jlong>(st.rebuilds), static_cast<jlong>(st.auto_rebuilds),
                     static_cast<jlong>(st.failed_rebuilds), static_cast<jlong>(st.index_migrations),
                     static_cast<jlong>(st.checkpoints), static_cast<jlong>(st.checkpoint_failures),
                     static_cast<jlong>(st.index_file_loads), static_cast<jlong>(st.index_file_rejections),
                     static_cast<jlong>(st.index_bytes), static_cast<jlong>(st.cache_charged_bytes),
                     static_cast<jlong>(st.cache_charge_failures)});
}

// The dump (LiveKeyStats::ToString, diagnostics included).
JNIEXPORT jstring JNICALL Java_org_dlcbf_rocksdb_LiveKeyStats_dump(JNIEnv* env, jclass, jlong handle, jint kind) {
  dlcbf::LiveKeyDB* live = Live(env, handle, kind);
  return live == nullptr ? nullptr : env->NewStringUTF(live->GetLiveKeyStats().ToString().c_str());
}

// One diagnostic by name; -1 when there is none of that name.
JNIEXPORT jlong JNICALL Java_org_dlcbf_rocksdb_LiveKeyStats_diagnostic(JNIEnv* env, jclass, jlong handle, jint kind,
                                                                      jstring name) {
  dlcbf::LiveKeyDB* live = Live(env, handle, kind);
  if (live == nullptr) return -1;
  uint64_t v = 0;
  std::string n;
  if (!Str(env, name, &n)) return -1;
  return live->GetLiveKeyStats().GetDiagnostic(n, &v) ? static_cast<jlong>(v) : -1;
}

}  // extern "C"
