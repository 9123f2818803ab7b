// LiveKeyDB from Java: open() returns an org.rocksdb.RocksDB whose native
// handle is a dlcbf::LiveKeyDB, so every RocksJava call goes through it.
// The native code is in filter_policy/rocksdb/java/live_key_db_jni.cc,
// compiled into librocksdbjni when RocksDB is built with the plugin and JNI.
package org.dlcbf.rocksdb;

import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

public final class LiveKeyDB extends RocksDB {
  private LiveKeyDB(final long handle) { super(handle); }

  /**
   * Opens (or creates) the DB at {@code path}, default column family only, with LiveKeyDB's index.
   * Throws RocksDBException with RocksDB's or LiveKeyDB's error (a bad index option names its field).
   */
  public static LiveKeyDB open(final Options options, final LiveKeyIndexOptions indexOptions, final String path)
      throws RocksDBException {
    RocksDB.loadLibrary();
    final LiveKeyDB db = new LiveKeyDB(openNative(options.getNativeHandle(), indexOptions.toString(), path));
    db.storeOptionsInstance(options);
    db.storeDefaultColumnFamilyHandle(db.makeDefaultColumnFamilyHandle());
    return db;
  }

  /** LiveKeyStats::ToString(): the counters, then the diagnostics. */
  public String getLiveKeyStatsString() { return statsString(getNativeHandle()); }

  /** Lookups answered by the index ("no": RocksDB not touched). */
  public long shortCircuited() { return statsCounters(getNativeHandle())[1]; }
  /** Keys checked against the index. */
  public long lookups() { return statsCounters(getNativeHandle())[0]; }

  private static native long openNative(long optionsHandle, String indexOptions, String path) throws RocksDBException;
  private static native String statsString(long handle);
  private static native long[] statsCounters(long handle);
}
