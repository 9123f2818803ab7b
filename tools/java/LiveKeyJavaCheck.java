// LiveKeyJavaCheck: LiveKeyDB through RocksJava (org.dlcbf.rocksdb.LiveKeyDB,
// java/), against plain RocksJava DBs as the oracle. Run by
// `tools/run.sh rocksdb-java <rocksdb-source-dir>`.
//
// One random workload goes to both DBs: put, merge (stringappend), delete,
// singleDelete of keys written once, write(WriteBatch), deleteRange,
// ingestExternalFile, flush, compactRange. Then every key is read through
// get, multiGetAsList, keyMayExist and an iterator's seek. A key the oracle
// holds and LiveKeyDB answers absent is lost. The DB is closed and reopened
// (the index file is loaded) and read again. The same runs through
// LiveKeyDB.openTransactionDB and openOptimisticTransactionDB (a share of
// the writes as transactions). Then three times a child JVM writes to a
// LiveKeyDB and is killed (SIGKILL): every key the DB then holds (read as a
// plain RocksDB) must be found through LiveKeyDB. A bad index option must be
// a RocksDBException naming its field, from validate() and from open().
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
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.DBOptions;
import org.dlcbf.rocksdb.LiveKeyStats;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.OptimisticTransactionDB;
import org.rocksdb.SstFileWriter;
import org.rocksdb.Transaction;
import org.rocksdb.TransactionDB;
import org.rocksdb.TransactionDBOptions;
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
        // (A value other than the oracle's counts too: a read through the wrong family or DB.)
        boolean miss = !Arrays.equals(live.get(k), want) || !Arrays.equals(got.get(i), want)
            || !live.keyMayExist(k, (Holder<byte[]>) null);
        it.seek(k);
        if (!it.isValid() || (!upper && !Arrays.equals(it.key(), k))) miss = true;
        if (miss) ++lost;
      }
    }
    System.out.printf("  %d of %d keys the oracle holds answered absent (or with another value)%n", lost, held);
    return lost;
  }

  // One random workload to both DBs: every write call RocksJava has, flushes and compactions;
  // through a transaction when `live` is a TransactionDB or OptimisticTransactionDB (the oracle
  // then writes the same as a batch).
  private static void workload(RocksDB oracle, RocksDB live, int keys, int ops, boolean negative, Random rnd,
      Path work) throws Exception {
    final boolean[] written = new boolean[keys];
    try (WriteOptions wo = new WriteOptions(); FlushOptions fo = new FlushOptions().setWaitForFlush(true);
         Options sstOptions = new Options();
         IngestExternalFileOptions ingest = new IngestExternalFileOptions().setMoveFiles(false)) {
      for (int n = 0; n < ops; ++n) {
        final int i = rnd.nextInt(keys);
        final byte[] k = key(i);
        final byte[] v = ("v" + n).getBytes(StandardCharsets.UTF_8);
        final int op = rnd.nextInt(100);
        if (op < 8 && !negative && (live instanceof TransactionDB || live instanceof OptimisticTransactionDB)) {
          final byte[] k2 = key((i + 3) % keys);
          try (Transaction t = live instanceof TransactionDB ? ((TransactionDB) live).beginTransaction(wo)
                                                             : ((OptimisticTransactionDB) live).beginTransaction(wo);
               WriteBatch b = new WriteBatch()) {
            t.put(k, v);
            t.delete(k2);
            t.commit();
            b.put(k, v);
            b.delete(k2);
            oracle.write(wo, b);
          }
          written[i] = written[(i + 3) % keys] = true;
          continue;
        }
        if (op >= 97 && op < 99 && !negative) {  // an SST file of 10 keys from i, ingested into both
          final Path f = work.resolve("ingest-" + n + ".sst");
          try (EnvOptions eo = new EnvOptions(); SstFileWriter w = new SstFileWriter(eo, sstOptions)) {
            w.open(f.toString());
            for (int j = i; j < Math.min(keys, i + 10); ++j) w.put(key(j), v);
            w.finish();
          }
          for (RocksDB db : new RocksDB[] {oracle, live}) db.ingestExternalFile(Arrays.asList(f.toString()), ingest);
          Files.delete(f);
          for (int j = i; j < Math.min(keys, i + 10); ++j) written[j] = true;
          continue;
        }
        for (RocksDB db : new RocksDB[] {oracle, live}) {
          if (op < 40) {
            db.put(wo, k, v);
          } else if (op < 50) {
            db.merge(wo, k, v);
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
            // (RocksDB's TransactionDB and OptimisticTransactionDB refuse DeleteRange: NotSupported.)
            if (!(live instanceof TransactionDB) && !(live instanceof OptimisticTransactionDB)) {
              db.deleteRange(wo, k, key(Math.min(keys, i + 20)));
            }
          } else if (op < 96) {
            db.flush(fo);
          } else if (n % 7 == 0) {
            try (CompactRangeOptions c = new CompactRangeOptions()) {
              db.compactRange(db.getDefaultColumnFamily(), null, null, c);
            }
          }
        }
        written[i] = true;
        if (op >= 75 && op < 90) written[(i + 1) % keys] = true;
      }
      for (RocksDB db : new RocksDB[] {oracle, live}) {
        db.flush(fo);
        try (CompactRangeOptions c = new CompactRangeOptions()) {
          db.compactRange(db.getDefaultColumnFamily(), null, null, c);
        }
      }
    }
  }

  // The child JVM of the crash check: writes keys to a LiveKeyDB at `dir`, says "ready" once
  // `n` keys are written and keeps writing until it is killed.
  private static void child(String dir, int n) throws Exception {
    try (Options o = new Options().setCreateIfMissing(true); WriteOptions wo = new WriteOptions()) {
      final LiveKeyDB db = LiveKeyDB.open(o, new LiveKeyIndexOptions().setExpectedKeys(100000)
          .set("checkpoint_interval_seconds", 0.05), dir);
      for (int i = 0; ; ++i) {
        db.put(wo, key(i % 50000), ("c" + i).getBytes(StandardCharsets.UTF_8));
        if (i % 3 == 0) db.delete(wo, key((i / 3) % 50000));
        if (i % 5000 == 0) db.flush(new FlushOptions());
        if (i == n) {
          System.out.println("ready");
          System.out.flush();
        }
      }
    }
  }

  // A child JVM writes and is killed (SIGKILL); the DB is read as a plain RocksDB (the oracle),
  // then through LiveKeyDB: every key the DB holds must be found.
  private static int crash(Path work, int rounds) throws Exception {
    final Path dir = work.resolve("crash");
    int lost = 0;
    for (int r = 0; r < rounds; ++r) {
      final ProcessBuilder pb = new ProcessBuilder(Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
          "-Djava.library.path=" + System.getProperty("java.library.path"), "-cp",
          System.getProperty("java.class.path"), "LiveKeyJavaCheck", "--child", dir.toString(), String.valueOf(20000 + 7919 * r));
      pb.redirectErrorStream(true);
      final Process p = pb.start();
      final java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()));
      String line;
      while ((line = out.readLine()) != null && !line.equals("ready")) System.out.println("  child: " + line);
      Thread.sleep(100 + 50 * r);
      p.destroyForcibly();
      p.waitFor();
      if (line == null) fail("the crash child ended before it was ready");
      // The oracle reads a copy (its Open replays the WAL); LiveKeyDB recovers the original.
      final Path copy = work.resolve("crash-copy");
      wipe(copy);
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path f : (Iterable<Path>) files::iterator) Files.copy(f, copy.resolve(dir.relativize(f).toString()));
      }
      final List<byte[]> held = new ArrayList<>();
      try (Options o = new Options()) {
        try (RocksDB plain = RocksDB.open(o, copy.toString())) {
          for (int i = 0; i < 50000; ++i) if (plain.get(key(i)) != null) held.add(key(i));
        }
        int miss = 0;
        final LiveKeyDB live = LiveKeyDB.open(o, new LiveKeyIndexOptions().setExpectedKeys(100000)
            .setBackgroundOpenBuild(false), dir.toString());
        for (byte[] k : held) if (live.get(k) == null) ++miss;
        final LiveKeyStats st = live.getLiveKeyStats();
        System.out.printf("  crash %d: killed, %d keys held, %d answered absent (index file loads %d)%n", r + 1,
            held.size(), miss, st.indexFileLoads);
        live.close();
        lost += miss;
      }
    }
    return lost;
  }

  public static void main(String[] args) throws Exception {
    if (args.length >= 3 && args[0].equals("--child")) {
      child(args[1], Integer.parseInt(args[2]));
      return;
    }
    final Path work = Paths.get(args[0]);
    final int ops = args.length > 1 && !args[1].startsWith("--") ? Integer.parseInt(args[1]) : 20000;
    final boolean negative = Arrays.asList(args).contains("--negative");
    RocksDB.loadLibrary();
    wipe(work);
    Files.createDirectories(work);
    final int keys = 2000;
    final Random rnd = new Random(20261129);

    // The README's example: open, write, read an absent key (answered by the index alone).
    final String path = work.resolve("readme").toString();
    // [readme-snippet:livekey_java]
    try (Options options = new Options().setCreateIfMissing(true)) {
      LiveKeyIndexOptions indexOptions = new LiveKeyIndexOptions().setExpectedKeys(1_000_000);
      try (RocksDB db = LiveKeyDB.open(options, indexOptions, path)) {  // RocksJava's own type
        db.put("user:alice".getBytes(StandardCharsets.UTF_8), "1".getBytes(StandardCharsets.UTF_8));
        byte[] bob = db.get("user:bob".getBytes(StandardCharsets.UTF_8));  // null: RocksDB not touched
        System.out.println("reads answered by the index alone: " + LiveKeyStats.of(db).shortCircuited);
      }
    }
    // [/readme-snippet]
    try (Options options = new Options(); RocksDB db = LiveKeyDB.open(options, new LiveKeyIndexOptions(), path)) {
      if (db.get("user:bob".getBytes(StandardCharsets.UTF_8)) != null) fail("the README's absent key is there");
      if (db.get("user:alice".getBytes(StandardCharsets.UTF_8)) == null) fail("the README's key is lost");
    }

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
    try (Options o = new Options().setCreateIfMissing(true)) {
      LiveKeyDB.open(o, new LiveKeyIndexOptions().set("expected_keys", 0), work.resolve("bad").toString()).close();
      fail("expected_keys=0 was accepted by open");
    } catch (RocksDBException e) {
      if (!e.getMessage().contains("expected_keys")) fail("open's error does not name the field: " + e.getMessage());
    }

    final LiveKeyIndexOptions io = new LiveKeyIndexOptions().setExpectedKeys(10000).setBackgroundOpenBuild(false)
        .set("trust_comparator", negative);
    int lostTotal = 0;
    try (ComparatorOptions co = new ComparatorOptions();
         CaseInsensitive ci = new CaseInsensitive(co);
         Options o = (negative ? new Options().setComparator(ci) : new Options()).setCreateIfMissing(true)
             .setMergeOperatorName("stringappend")) {
      RocksDB oracle = RocksDB.open(o, work.resolve("oracle").toString());
      LiveKeyDB live = LiveKeyDB.open(o, io, work.resolve("live").toString());
      workload(oracle, live, keys, ops, negative, rnd, work);
      lostTotal += lost(oracle, live, keys, negative);
      final long sc0 = live.getLiveKeyStats().shortCircuited;
      for (int i = keys; i < keys + 1000; ++i) live.get(key(i));
      final long shortCircuited = live.getLiveKeyStats().shortCircuited - sc0;
      System.out.println("  absent keys answered by the index: " + shortCircuited + " of 1000");
      if (!negative && shortCircuited < 900) fail("the index answered too few absent keys: " + shortCircuited);
      System.out.println(live.getLiveKeyStats().dump());
      live.close();
      live = LiveKeyDB.open(o, io, work.resolve("live").toString());
      System.out.println("  reopened: index file loads " + live.getLiveKeyStats().indexFileLoads);
      lostTotal += lost(oracle, live, keys, negative);
      live.close();
      oracle.close();
      if (!negative) {
        // The transaction routes, each against its own oracle.
        try (TransactionDBOptions to = new TransactionDBOptions()) {
          final RocksDB o2 = RocksDB.open(o, work.resolve("oracle-txn").toString());
          final TransactionDB t = LiveKeyDB.openTransactionDB(o, to, io, work.resolve("live-txn").toString());
          workload(o2, t, keys, ops / 2, false, rnd, work);
          System.out.println("  TransactionDB:");
          lostTotal += lost(o2, t, keys, false);
          final LiveKeyStats st = LiveKeyStats.of(t);
          System.out.println("  TransactionDB short-circuited " + st.shortCircuited + " of " + st.lookups + " lookups");
          t.close();
          o2.close();
        }
        final RocksDB o3 = RocksDB.open(o, work.resolve("oracle-occ").toString());
        final OptimisticTransactionDB ot =
            LiveKeyDB.openOptimisticTransactionDB(o, io, work.resolve("live-occ").toString());
        workload(o3, ot, keys, ops / 2, false, rnd, work);
        System.out.println("  OptimisticTransactionDB:");
        lostTotal += lost(o3, ot, keys, false);
        System.out.println("  OptimisticTransactionDB short-circuited " + LiveKeyStats.of(ot).shortCircuited
            + " of " + LiveKeyStats.of(ot).lookups + " lookups");
        ot.close();
        o3.close();
        // The column-family form: writes to a second family, read back through its handle.
        try (DBOptions dbo = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true);
             ColumnFamilyOptions cfo = new ColumnFamilyOptions()) {
          final List<ColumnFamilyDescriptor> d = Arrays.asList(
              new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfo),
              new ColumnFamilyDescriptor("cf1".getBytes(StandardCharsets.UTF_8), cfo));
          final List<ColumnFamilyHandle> hl = new ArrayList<>(), ho = new ArrayList<>();
          final LiveKeyDB lc = LiveKeyDB.open(dbo, io, work.resolve("live-cf").toString(), d, hl);
          final RocksDB oc = RocksDB.open(dbo, work.resolve("oracle-cf").toString(), d, ho);
          int cfLost = 0;
          try (WriteOptions wo = new WriteOptions()) {
            for (int i = 0; i < keys; ++i) {
              for (int j = 0; j < 2; ++j) {
                final RocksDB db = j == 0 ? oc : lc;
                final ColumnFamilyHandle h = (j == 0 ? ho : hl).get(1);
                if (i % 3 == 0) db.delete(h, wo, key(i / 2)); else db.put(h, wo, key(i), key(i));
              }
            }
            for (int i = 0; i < keys; ++i) {
              if (oc.get(ho.get(1), key(i)) != null && lc.get(hl.get(1), key(i)) == null) ++cfLost;
            }
          }
          final LiveKeyStats before = lc.getLiveKeyStats();
          for (int i = keys; i < keys + 1000; ++i) lc.get(hl.get(1), key(i));
          final long sc = lc.getLiveKeyStats().shortCircuited - before.shortCircuited;
          System.out.printf("  column family 'cf1': %d keys lost; absent keys answered by its index: %d of 1000%n",
              cfLost, sc);
          if (sc < 900) fail("cf1's index answered too few absent keys: " + sc);
          // A family created through the Java object, its handle closed early while
          // checks are pending: LiveKeyDB uses the handle until Close, so that close
          // must be a no-op, not a delete. (After the reads above: a family created
          // keeps reads off the indexes for 1 s, WorldWatch::kSettleAfter.)
          final ColumnFamilyHandle c2 = lc.createColumnFamily(
              new ColumnFamilyDescriptor("cf2".getBytes(StandardCharsets.UTF_8), cfo));
          final ColumnFamilyHandle o2h = oc.createColumnFamily(
              new ColumnFamilyDescriptor("cf2".getBytes(StandardCharsets.UTF_8), cfo));
          try (WriteOptions wo = new WriteOptions()) {
            for (int i = 0; i < keys; ++i) {
              lc.put(c2, wo, key(i), key(i));
              oc.put(o2h, wo, key(i), key(i));
              if (i % 2 == 0) {
                lc.put(c2, wo, key(i / 2), key(i));  // overwrites: deferred checks through the handle
                oc.put(o2h, wo, key(i / 2), key(i));
              }
            }
          }
          c2.close();
          lostTotal += cfLost;
          lc.close();
          oc.close();
          // Reopened with all three families: cf2's keys, as the oracle's.
          final List<ColumnFamilyDescriptor> d3 = new ArrayList<>(d);
          d3.add(new ColumnFamilyDescriptor("cf2".getBytes(StandardCharsets.UTF_8), cfo));
          final List<ColumnFamilyHandle> hl3 = new ArrayList<>(), ho3 = new ArrayList<>();
          final LiveKeyDB lc3 = LiveKeyDB.open(dbo, io, work.resolve("live-cf").toString(), d3, hl3);
          final RocksDB oc3 = RocksDB.open(dbo, work.resolve("oracle-cf").toString(), d3, ho3);
          int cf2Lost = 0;
          for (int i = 0; i < keys; ++i) {
            final byte[] want = oc3.get(ho3.get(2), key(i));
            if (want != null && !Arrays.equals(lc3.get(hl3.get(2), key(i)), want)) ++cf2Lost;
          }
          System.out.printf("  column family 'cf2' (created, its handle closed early), reopened: %d keys lost%n", cf2Lost);
          lostTotal += cf2Lost;
          lc3.close();
          for (ColumnFamilyHandle h : ho3) h.close();
          oc3.close();
        }
        try (RocksDB plain = RocksDB.open(o, work.resolve("plain").toString())) {
          LiveKeyStats.of(plain);
          fail("LiveKeyStats.of accepted a DB LiveKeyDB did not open");
        } catch (RocksDBException e) {
          System.out.println("  LiveKeyStats.of(a plain DB): " + e.getMessage());
        }
      }
    }
    if (!negative) lostTotal += crash(work, 3);
    if (negative) {
      if (lostTotal == 0) fail("negative control: a trusted case-insensitive comparator lost no key (the check cannot fail)");
      System.out.println("livekey-java PASSED (negative control: " + lostTotal + " keys lost, as the contract says)");
    } else {
      if (lostTotal != 0) fail(lostTotal + " keys lost");
      System.out.println("livekey-java PASSED (" + ops + " ops, transactions, 3 crashes; 0 keys lost)");
    }
  }
}
