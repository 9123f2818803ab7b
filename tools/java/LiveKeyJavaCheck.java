// LiveKeyJavaCheck: LiveKeyDB through RocksJava (org.dlcbf.rocksdb.LiveKeyDB,
// java/), against a plain RocksJava DB as the oracle. Run by
// `tools/run.sh rocksdb-java <rocksdb-source-dir>`.
//
// One random workload goes to both DBs (put, delete, singleDelete of keys
// written once, write(WriteBatch), deleteRange, flush, compactRange); then
// every key is read through get, multiGetAsList, keyMayExist and an
// iterator's seek. A key the oracle holds and LiveKeyDB answers absent is
// lost. The DB is closed and reopened (the index file is loaded) and read
// again. A bad index option must be a RocksDBException naming its field.
//
// Negative control (--negative): both DBs use a comparator that calls keys
// equal regardless of ASCII case, and LiveKeyDB is told to trust it
// (trust_comparator=true), which the C++ contract says loses keys: the
// index hashes bytes, so a read of "K..." for a stored "k..." is answered
// absent while RocksDB finds it. The check reads the upper-case spelling
// and must find the losses. (A misused SingleDelete is no control: the
// compaction-filter guard detects it and LiveKeyDB loses nothing.)
//
// Usage: java -cp rocksdbjni.jar:classes LiveKeyJavaCheck <work-dir> [ops] [--negative]
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.dlcbf.rocksdb.LiveKeyDB;
import org.dlcbf.rocksdb.LiveKeyIndexOptions;
import java.nio.ByteBuffer;
import org.rocksdb.AbstractComparator;
import org.rocksdb.ComparatorOptions;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.Holder;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

public final class LiveKeyJavaCheck {
  private static byte[] key(int i) { return String.format("k%07d", i).getBytes(StandardCharsets.UTF_8); }
  private static byte[] upperKey(int i) { return String.format("K%07d", i).getBytes(StandardCharsets.UTF_8); }

  // ASCII case-insensitive order: different bytes compare equal.
  static final class CaseInsensitive extends AbstractComparator {
    CaseInsensitive(ComparatorOptions o) { super(o); }
    @Override public String name() { return "livekey-java-check.case-insensitive"; }
    @Override public int compare(ByteBuffer a, ByteBuffer b) {
      final int n = Math.min(a.remaining(), b.remaining());
      for (int i = 0; i < n; ++i) {
        final int x = Character.toLowerCase(a.get(a.position() + i) & 0xff);
        final int y = Character.toLowerCase(b.get(b.position() + i) & 0xff);
        if (x != y) return x - y;
      }
      return a.remaining() - b.remaining();
    }
  }

  private static void fail(String why) {
    System.out.println("livekey-java FAILED: " + why);
    System.exit(1);
  }

  private static void wipe(Path p) throws Exception {
    if (!Files.exists(p)) return;
    try (Stream<Path> s = Files.walk(p)) {
      s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }

  // Keys the oracle holds that LiveKeyDB answers absent, by any read.
  // upper: read each key by its upper-case spelling (the negative control).
  private static int lost(RocksDB oracle, RocksDB live, int keys, boolean upper) throws RocksDBException {
    int lost = 0, held = 0;
    final List<byte[]> all = new ArrayList<>();
    for (int i = 0; i < keys; ++i) all.add(upper ? upperKey(i) : key(i));
    final List<byte[]> got = live.multiGetAsList(all);
    try (RocksIterator it = live.newIterator()) {
      for (int i = 0; i < keys; ++i) {
        final byte[] k = all.get(i);
        final byte[] want = oracle.get(k);
        if (want == null) continue;
        ++held;
        boolean miss = live.get(k) == null || got.get(i) == null || !live.keyMayExist(k, (Holder<byte[]>) null);
        it.seek(k);
        if (!it.isValid() || (!upper && !Arrays.equals(it.key(), k))) miss = true;
        if (miss) ++lost;
      }
    }
    System.out.printf("  %d of %d keys the oracle holds answered absent%n", lost, held);
    return lost;
  }

  public static void main(String[] args) throws Exception {
    final Path work = Paths.get(args[0]);
    final int ops = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
    final boolean negative = Arrays.asList(args).contains("--negative");
    RocksDB.loadLibrary();
    wipe(work);
    Files.createDirectories(work);
    final int keys = 2000;
    final Random rnd = new Random(20261129);

    // Bad options: a RocksDBException naming the field.
    try {
      new LiveKeyIndexOptions().set("sizing_load", 7).validate();
      fail("sizing_load=7 was accepted");
    } catch (RocksDBException e) {
      if (!e.getMessage().contains("sizing_load")) fail("the error does not name the field: " + e.getMessage());
    }
    try {
      new LiveKeyIndexOptions().set("no_such_field", 1).validate();
      fail("an unknown field was accepted");
    } catch (RocksDBException e) {
      if (!e.getMessage().contains("no_such_field")) fail("the error does not name the field: " + e.getMessage());
    }

    final LiveKeyIndexOptions io = new LiveKeyIndexOptions().setExpectedKeys(10000).setBackgroundOpenBuild(false)
        .set("trust_comparator", negative);
    int lostTotal = 0;
    try (ComparatorOptions co = new ComparatorOptions();
         CaseInsensitive ci = new CaseInsensitive(co);
         Options o = negative ? new Options().setCreateIfMissing(true).setComparator(ci)
                              : new Options().setCreateIfMissing(true);
         WriteOptions wo = new WriteOptions();
         FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
      RocksDB oracle = RocksDB.open(o, work.resolve("oracle").toString());
      LiveKeyDB live = LiveKeyDB.open(o, io, work.resolve("live").toString());
      final boolean[] written = new boolean[keys];
      for (int n = 0; n < ops; ++n) {
        final int i = rnd.nextInt(keys);
        final byte[] k = key(i);
        final byte[] v = ("v" + n).getBytes(StandardCharsets.UTF_8);
        final int op = rnd.nextInt(100);
        for (RocksDB db : new RocksDB[] {oracle, live}) {
          if (op < 50) {
            db.put(wo, k, v);
          } else if (op < 70) {
            db.delete(wo, k);
          } else if (op < 75 && !written[i] && !negative) {
            db.put(wo, k, v);
            db.singleDelete(wo, k);
          } else if (op < 90) {
            try (WriteBatch b = new WriteBatch()) {
              b.put(k, v);
              b.delete(key((i + 1) % keys));
              db.write(wo, b);
            }
          } else if (op < 92) {
            db.deleteRange(wo, k, key(Math.min(keys, i + 20)));
          } else if (op < 96) {
            db.flush(fo);
          } else if (n % 7 == 0) {
            try (CompactRangeOptions c = new CompactRangeOptions()) {
              db.compactRange(db.getDefaultColumnFamily(), null, null, c);
            }
          }
        }
        written[i] = true;
      }
      for (RocksDB db : new RocksDB[] {oracle, live}) {
        db.flush(fo);
        try (CompactRangeOptions c = new CompactRangeOptions()) {
          db.compactRange(db.getDefaultColumnFamily(), null, null, c);
        }
      }
      lostTotal += lost(oracle, live, keys, negative);
      final long sc0 = live.shortCircuited();
      for (int i = keys; i < keys + 1000; ++i) live.get(key(i));
      final long shortCircuited = live.shortCircuited() - sc0;
      System.out.println("  absent keys answered by the index: " + shortCircuited + " of 1000");
      if (!negative && shortCircuited < 900) fail("the index answered too few absent keys: " + shortCircuited);
      System.out.println(live.getLiveKeyStatsString());
      live.close();
      live = LiveKeyDB.open(o, io, work.resolve("live").toString());
      System.out.println("  reopened");
      lostTotal += lost(oracle, live, keys, negative);
      live.close();
      oracle.close();
    }
    if (negative) {
      if (lostTotal == 0) fail("negative control: a trusted case-insensitive comparator lost no key (the check cannot fail)");
      System.out.println("livekey-java PASSED (negative control: " + lostTotal + " keys lost, as the contract says)");
    } else {
      if (lostTotal != 0) fail(lostTotal + " keys lost");
      System.out.println("livekey-java PASSED (" + ops + " ops, 0 keys lost)");
    }
  }
}
