// LiveKeyDB's counters since Open, for Java: the C++ LiveKeyStats fields a
// user acts on (include/dlcbf/rocksdb/live_key_db.h), the diagnostics by
// name, and the dump. A snapshot: read once, at LiveKeyStats.of().
package org.dlcbf.rocksdb;

import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

public final class LiveKeyStats {
  public final long lookups, shortCircuited, deadPrefixSeeks, movedSeeks, bypassedReads;
  public final long queueFullFallbacks, busySyncReads;
  public final long unverifiedReads, unseenWriteDetections, trustRecoveries;
  public final boolean indexesTrusted;
  public final long deleteRangeLimitHits, rebuilds, autoRebuilds, failedRebuilds, indexMigrations;
  public final long checkpoints, checkpointFailures, indexFileLoads, indexFileRejections;
  public final long indexBytes, cacheChargedBytes, cacheChargeFailures;
  private final RocksDB db;
  private final int kind;

  private LiveKeyStats(final RocksDB db, final int kind, final long[] c) {
    this.db = db;
    this.kind = kind;
    int i = 0;
    lookups = c[i++]; shortCircuited = c[i++]; deadPrefixSeeks = c[i++]; movedSeeks = c[i++];
    bypassedReads = c[i++]; queueFullFallbacks = c[i++]; busySyncReads = c[i++]; unverifiedReads = c[i++];
    unseenWriteDetections = c[i++]; trustRecoveries = c[i++]; indexesTrusted = c[i++] != 0;
    deleteRangeLimitHits = c[i++]; rebuilds = c[i++]; autoRebuilds = c[i++]; failedRebuilds = c[i++];
    indexMigrations = c[i++]; checkpoints = c[i++]; checkpointFailures = c[i++]; indexFileLoads = c[i++];
    indexFileRejections = c[i++]; indexBytes = c[i++]; cacheChargedBytes = c[i++]; cacheChargeFailures = c[i++];
  }

  /**
   * The counters of {@code db}: a LiveKeyDB, or a TransactionDB or OptimisticTransactionDB that
   * LiveKeyDB opened. RocksDBException for any other DB.
   */
  public static LiveKeyStats of(final RocksDB db) throws RocksDBException {
    final int kind = db instanceof LiveKeyDB ? 0 : 1;
    return new LiveKeyStats(db, kind, counters(handleOf(db), kind));
  }

  /** Keys answered "no" by the index over keys checked (0 with none). */
  public double shortCircuitRate() { return lookups == 0 ? 0.0 : (double) shortCircuited / lookups; }

  /** The diagnostic {@code name} now (C++ LiveKeyStats::diagnostics), or -1 if there is none. */
  public long diagnostic(final String name) throws RocksDBException { return diagnostic(handleOf(db), kind, name); }

  /** LiveKeyStats::ToString() now: the counters, then the diagnostics; not a stable format. */
  public String dump() throws RocksDBException { return dump(handleOf(db), kind); }

  // (A closed DB's handle is freed: refused, never read.)
  private static long handleOf(final RocksDB db) throws RocksDBException {
    if (!db.isOwningHandle()) throw new RocksDBException("LiveKeyStats: the DB is closed");
    return db.getNativeHandle();
  }

  private static native long[] counters(long handle, int kind) throws RocksDBException;
  private static native String dump(long handle, int kind) throws RocksDBException;
  private static native long diagnostic(long handle, int kind, String name) throws RocksDBException;
}
