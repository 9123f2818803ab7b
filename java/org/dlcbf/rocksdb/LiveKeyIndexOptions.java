// LiveKeyDB's index options for Java: the C++ LiveKeyIndexOptions fields
// (include/dlcbf/rocksdb/live_key_db.h), by their C++ names, validated by
// the C++ code (a bad value is a RocksDBException naming the field).
package org.dlcbf.rocksdb;

import java.util.LinkedHashMap;
import java.util.Map;
import org.rocksdb.RocksDBException;

public final class LiveKeyIndexOptions {
  private final Map<String, String> values = new LinkedHashMap<>();

  /** Sets field {@code name} (the C++ name, e.g. "expected_keys") to {@code value}. */
  public LiveKeyIndexOptions set(final String name, final Object value) {
    values.put(name, String.valueOf(value));
    return this;
  }

  public LiveKeyIndexOptions setExpectedKeys(final long n) { return set("expected_keys", n); }
  public LiveKeyIndexOptions setBitsPerKey(final double b) { return set("bits_per_key", b); }
  public LiveKeyIndexOptions setBackgroundOpenBuild(final boolean b) { return set("background_open_build", b); }
  public LiveKeyIndexOptions setPersistIndex(final boolean b) { return set("persist_index", b); }
  public LiveKeyIndexOptions setTrustSingleDelete(final boolean b) { return set("trust_single_delete", b); }

  /** Throws RocksDBException naming the first field the C++ side refuses. */
  public void validate() throws RocksDBException { validate(toString()); }

  /** "name=value;..." as the C++ side parses it. */
  @Override
  public String toString() {
    final StringBuilder b = new StringBuilder();
    for (final Map.Entry<String, String> e : values.entrySet()) {
      b.append(e.getKey()).append('=').append(e.getValue()).append(';');
    }
    return b.toString();
  }

  private static native void validate(String options) throws RocksDBException;
}
