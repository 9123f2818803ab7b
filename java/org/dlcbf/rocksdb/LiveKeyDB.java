// LiveKeyDB from Java: open() returns an org.rocksdb.RocksDB whose native
// handle is a dlcbf::LiveKeyDB, so every RocksJava call (get, put, delete,
// singleDelete, merge, write, multiGetAsList, keyMayExist, iterators,
// deleteRange, ingestExternalFile, flush, compactRange, close) goes through
// it; openTransactionDB and openOptimisticTransactionDB return RocksJava's
// own TransactionDB and OptimisticTransactionDB over LiveKeyDB's. The
// native code is filter_policy/rocksdb/java/live_key_db_jni.cc, compiled
// into librocksdbjni when RocksDB is built with the plugin and WITH_JNI.
//
// Column-family handles: LiveKeyDB uses a family's handle until Close, and
// RocksJava's ColumnFamilyHandle.close() deletes it. The handles this class
// hands out (open's, createColumnFamily's) do not own theirs; close()
// destroys them through the DB. The transaction DBs are RocksJava's own
// classes: open them with the default family only, and create no family
// through them (their handles would be deleted under LiveKeyDB).
package org.dlcbf.rocksdb;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.AbstractImmutableNativeReference;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.DBOptionsInterface;
import org.rocksdb.OptimisticTransactionDB;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.TransactionDB;
import org.rocksdb.TransactionDBOptions;

public final class LiveKeyDB extends RocksDB {
  // Native handles of the column families this object handed out. LiveKeyDB keeps using a
  // family's handle until Close, and its contract is DestroyColumnFamilyHandle, never a delete;
  // RocksJava's ColumnFamilyHandle.close() deletes, and RocksDB.close() closes them before the
  // DB. So the Java handles do not own them: close() destroys them through the DB, first.
  private final List<Long> familyHandles = new ArrayList<>();

  private LiveKeyDB(final long handle) { super(handle); }

  /**
   * Opens (or creates) the DB at {@code path}, default column family only, with LiveKeyDB's index.
   * RocksDBException with RocksDB's or LiveKeyDB's error (a bad index option names its field).
   * Thread-safety and ownership as RocksDB.open's: close() it when done.
   */
  public static LiveKeyDB open(final Options options, final LiveKeyIndexOptions indexOptions, final String path)
      throws RocksDBException {
    RocksDB.loadLibrary();
    final LiveKeyDB db = new LiveKeyDB(openNative(options.getNativeHandle(), indexOptions.toString(), path));
    db.storeOptionsInstance(options);
    db.storeDefaultColumnFamilyHandle(db.makeDefaultColumnFamilyHandle());
    return db;
  }

  /**
   * As RocksDB.open(DBOptions, path, descriptors, handles): one handle per descriptor is added to
   * {@code columnFamilyHandles} (owned by the DB, closed with it). Every family is indexed.
   */
  public static LiveKeyDB open(final DBOptions options, final LiveKeyIndexOptions indexOptions, final String path,
      final List<ColumnFamilyDescriptor> columnFamilyDescriptors, final List<ColumnFamilyHandle> columnFamilyHandles)
      throws RocksDBException {
    RocksDB.loadLibrary();
    final byte[][] names = new byte[columnFamilyDescriptors.size()][];
    final long[] cfOptions = new long[columnFamilyDescriptors.size()];
    for (int i = 0; i < names.length; ++i) {
      names[i] = columnFamilyDescriptors.get(i).getName();
      cfOptions[i] = columnFamilyDescriptors.get(i).getOptions().getNativeHandle();
    }
    final long[] handles = openColumnFamiliesNative(options.getNativeHandle(), indexOptions.toString(), path, names,
        cfOptions);
    final LiveKeyDB db = new LiveKeyDB(handles[0]);
    db.storeOptionsInstance(options);
    final List<ColumnFamilyHandle> made = new ArrayList<>();
    try {
      // (ColumnFamilyHandle's constructor and RocksDB's list of owned handles are not public.)
      final Constructor<ColumnFamilyHandle> k =
          ColumnFamilyHandle.class.getDeclaredConstructor(RocksDB.class, long.class);
      k.setAccessible(true);
      for (int i = 1; i < handles.length; ++i) db.familyHandles.add(handles[i]);
      for (int i = 1; i < handles.length; ++i) made.add(disown(k.newInstance(db, handles[i])));
    } catch (ReflectiveOperationException | RuntimeException e) {
      db.close();
      throw new RocksDBException("LiveKeyDB: this RocksJava's ColumnFamilyHandle cannot be made over a handle: " + e);
    }
    columnFamilyHandles.addAll(made);
    db.storeDefaultColumnFamilyHandle(db.makeDefaultColumnFamilyHandle());
    return db;
  }

  /** As TransactionDB.open(options, txnDbOptions, path), with LiveKeyDB under it (write-committed only). */
  public static TransactionDB openTransactionDB(final Options options, final TransactionDBOptions txnDbOptions,
      final LiveKeyIndexOptions indexOptions, final String path) throws RocksDBException {
    RocksDB.loadLibrary();
    final long h = openTransactionDBNative(options.getNativeHandle(), txnDbOptions.getNativeHandle(),
        indexOptions.toString(), path);
    final TransactionDB db = wrap(TransactionDB.class, h, options);
    try {
      final Method m = TransactionDB.class.getDeclaredMethod("storeTransactionDbOptions", TransactionDBOptions.class);
      m.setAccessible(true);
      m.invoke(db, txnDbOptions);
    } catch (ReflectiveOperationException | RuntimeException e) {
      db.close();
      throw new RocksDBException("LiveKeyDB: cannot keep the TransactionDBOptions with RocksJava's TransactionDB: " + e);
    }
    return db;
  }

  /** As OptimisticTransactionDB.open(options, path), with LiveKeyDB under it. */
  public static OptimisticTransactionDB openOptimisticTransactionDB(final Options options,
      final LiveKeyIndexOptions indexOptions, final String path) throws RocksDBException {
    RocksDB.loadLibrary();
    return wrap(OptimisticTransactionDB.class,
        openOptimisticTransactionDBNative(options.getNativeHandle(), indexOptions.toString(), path), options);
  }

  /** As RocksDB's; the handle is destroyed through the DB at close() (closing it earlier is a no-op). */
  @Override
  public ColumnFamilyHandle createColumnFamily(final ColumnFamilyDescriptor descriptor) throws RocksDBException {
    return adopt(super.createColumnFamily(descriptor));
  }

  /** As RocksDB's; the handles are destroyed through the DB at close(). */
  @Override
  public List<ColumnFamilyHandle> createColumnFamilies(final List<ColumnFamilyDescriptor> descriptors)
      throws RocksDBException {
    final List<ColumnFamilyHandle> hs = super.createColumnFamilies(descriptors);
    for (ColumnFamilyHandle h : hs) adopt(h);
    return hs;
  }

  /** As RocksDB's; the handles are destroyed through the DB at close(). */
  @Override
  public List<ColumnFamilyHandle> createColumnFamilies(final ColumnFamilyOptions options, final List<byte[]> names)
      throws RocksDBException {
    final List<ColumnFamilyHandle> hs = super.createColumnFamilies(options, names);
    for (ColumnFamilyHandle h : hs) adopt(h);
    return hs;
  }

  /** Destroys the families' handles through LiveKeyDB (which closes them), then closes as RocksDB's. */
  @Override
  public void close() {
    destroyFamilyHandles();
    super.close();
  }

  @Override
  public void closeE() throws RocksDBException {
    destroyFamilyHandles();
    super.closeE();
  }

  private synchronized void destroyFamilyHandles() {
    if (isOwningHandle()) {
      for (long h : familyHandles) destroyColumnFamilyHandleNative(getNativeHandle(), h);
    }
    familyHandles.clear();
  }

  private synchronized ColumnFamilyHandle adopt(final ColumnFamilyHandle h) throws RocksDBException {
    try {
      familyHandles.add(h.getNativeHandle());
      return disown(h);
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new RocksDBException("LiveKeyDB: cannot take over a ColumnFamilyHandle: " + e);
    }
  }

  // The Java handle stops owning its native handle (its close() no longer deletes it).
  private static ColumnFamilyHandle disown(final ColumnFamilyHandle h) throws ReflectiveOperationException {
    final Method m = AbstractImmutableNativeReference.class.getDeclaredMethod("disOwnNativeHandle");
    m.setAccessible(true);
    m.invoke(h);
    return h;
  }

  /** The counters since Open (LiveKeyStats.of(this)). */
  public LiveKeyStats getLiveKeyStats() throws RocksDBException { return LiveKeyStats.of(this); }

  // RocksJava's own object over a native handle (its constructor is private; the calls its open
  // makes after it are protected), made as its open makes it. On failure the native DB is deleted.
  private static <T extends RocksDB> T wrap(final Class<T> c, final long handle, final Options options)
      throws RocksDBException {
    try {
      final Constructor<T> k = c.getDeclaredConstructor(long.class);
      k.setAccessible(true);
      final T db = k.newInstance(handle);
      final Method store = RocksDB.class.getDeclaredMethod("storeOptionsInstance", DBOptionsInterface.class);
      store.setAccessible(true);
      store.invoke(db, options);
      final Method make = RocksDB.class.getDeclaredMethod("makeDefaultColumnFamilyHandle");
      make.setAccessible(true);
      final Method storeCf = RocksDB.class.getDeclaredMethod("storeDefaultColumnFamilyHandle", ColumnFamilyHandle.class);
      storeCf.setAccessible(true);
      storeCf.invoke(db, make.invoke(db));
      return db;
    } catch (ReflectiveOperationException | RuntimeException e) {
      deleteNative(handle);
      throw new RocksDBException("LiveKeyDB: this RocksJava's " + c.getSimpleName() + " cannot be made over a handle: " + e);
    }
  }

  private static native long openNative(long optionsHandle, String indexOptions, String path) throws RocksDBException;
  private static native long[] openColumnFamiliesNative(long dbOptionsHandle, String indexOptions, String path,
      byte[][] names, long[] cfOptionsHandles) throws RocksDBException;
  private static native long openTransactionDBNative(long optionsHandle, long txnOptionsHandle, String indexOptions,
      String path) throws RocksDBException;
  private static native long openOptimisticTransactionDBNative(long optionsHandle, String indexOptions, String path)
      throws RocksDBException;
  private static native void deleteNative(long handle);
  private static native void destroyColumnFamilyHandleNative(long db, long columnFamily);
}
