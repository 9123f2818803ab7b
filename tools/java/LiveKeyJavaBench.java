// LiveKeyJavaBench: LiveKeyDB through RocksJava against plain RocksJava on a
// deep LSM (both with bloomfilter:10), side by side in one JVM, interleaved
// rounds, medians. Workloads: get of missing keys, get of recently deleted
// keys, put of new keys. Prints one line per workload and the goal lines of
// issue #58 (missing >= 5x, deleted >= 4x, put cost <= 1.15x).
//
// Usage: java -cp rocksdbjni.jar:classes LiveKeyJavaBench <work-dir> [keys] [rounds]
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
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompactionOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.LiveFileMetaData;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.WriteOptions;

public final class LiveKeyJavaBench {

  private static void wipe(Path p) throws Exception {
    if (!Files.exists(p)) return;
    try (Stream<Path> s = Files.walk(p)) {
      s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }

  // The deep LSM of tools/bench/deep_lsm.h (live_key_bench's): keys spread over the key space
  // (16 hex digits of a mix of the id; even ids loaded, odd ids never written); auto compactions
  // off; 50 % of the keys in L4, 20 % in L3, 12 % in L2, 8 % in L1 (each moved with compactFiles),
  // the newest 10 % in 12 L0 files; then `deleted` keys spread over every level deleted, their
  // tombstones in one more L0 file. A lookup that misses probes every L0 file and every level.
  private static byte[] key(long id) {
    long z = id + 0x5EED + 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    z = z ^ (z >>> 31);
    return String.format("%016x", z).getBytes(StandardCharsets.UTF_8);
  }
  private static byte[] loaded(long i) { return key(2 * i); }
  private static byte[] missing(long i) { return key(2 * i + 1); }

  private static Options options() {
    final BlockBasedTableConfig t = new BlockBasedTableConfig();
    t.setFilterPolicy(new BloomFilter(10, false));
    t.setBlockCache(new LRUCache(32L << 20));
    return new Options().setCreateIfMissing(true).setDisableAutoCompactions(true)
        .setLevel0FileNumCompactionTrigger(1000).setLevel0SlowdownWritesTrigger(1000).setLevel0StopWritesTrigger(1000)
        .setWriteBufferSize(512L << 20).setMaxWriteBufferNumber(4).setTargetFileSizeBase(32L << 20).setNumLevels(7)
        .setTableFormatConfig(t);
  }

  private static void flushAndMove(RocksDB db, int level) throws Exception {
    try (FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
      db.flush(fo);
    }
    if (level <= 0) return;
    final List<String> l0 = new ArrayList<>();
    for (LiveFileMetaData f : db.getLiveFilesMetaData()) {
      if (f.level() == 0) l0.add(f.fileName());
    }
    try (CompactionOptions co = new CompactionOptions()) {
      db.compactFiles(co, l0, level, 0, null);
    }
  }

  // Returns the deleted keys.
  private static byte[][] load(RocksDB db, long keys, long deleted) throws Exception {
    final byte[] v = new byte[100];
    final long[] ids = new long[(int) keys];
    for (int i = 0; i < keys; ++i) ids[i] = i;
    final Random rnd = new Random(8);
    for (int i = (int) keys - 1; i > 0; --i) {
      final int j = rnd.nextInt(i + 1);
      final long t = ids[i];
      ids[i] = ids[j];
      ids[j] = t;
    }
    final double[] fraction = {0.50, 0.20, 0.12, 0.08, 0.10};
    final int[] level = {4, 3, 2, 1, 0};
    final int l0Files = 12;
    final byte[][] gone = new byte[(int) deleted][];
    try (WriteOptions wo = new WriteOptions()) {
      int pos = 0;
      for (int b = 0; b < fraction.length; ++b) {
        final int n = b + 1 == fraction.length ? (int) keys - pos : (int) (fraction[b] * keys);
        final int perFile = level[b] == 0 ? (n + l0Files - 1) / l0Files : n;
        for (int i = 0; i < n; ++i) {
          db.put(wo, loaded(ids[pos + i]), v);
          if ((i + 1) % perFile == 0 && level[b] == 0) flushAndMove(db, 0);
        }
        pos += n;
        flushAndMove(db, level[b]);
      }
      for (int i = 0; i < deleted; ++i) {
        gone[i] = loaded(ids[(int) (i * (keys / deleted))]);
        db.delete(wo, gone[i]);
      }
      flushAndMove(db, 0);
    }
    return gone;
  }

  private static double median(double[] a) {
    final double[] b = a.clone();
    Arrays.sort(b);
    return b[b.length / 2];
  }

  public static void main(String[] args) throws Exception {
    final Path work = Paths.get(args[0]);
    final long keys = args.length > 1 ? Long.parseLong(args[1]) : 1000000;
    final int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    final long deleted = keys / 10, reads = 100000, puts = 50000;
    RocksDB.loadLibrary();
    wipe(work);
    Files.createDirectories(work);
    System.out.printf("# java %s, %s; rocksdbjni; cores %d; load %s%n", System.getProperty("java.version"),
        System.getProperty("java.vm.name"), Runtime.getRuntime().availableProcessors(),
        new String(Files.readAllBytes(Paths.get("/proc/loadavg")), StandardCharsets.US_ASCII).trim());
    try (Options o = options(); Options ol = options(); WriteOptions wo = new WriteOptions()) {
      final RocksDB plain = RocksDB.open(o, work.resolve("plain").toString());
      final LiveKeyDB live = LiveKeyDB.open(ol, new LiveKeyIndexOptions().setExpectedKeys(keys * 2)
          .setBackgroundOpenBuild(false), work.resolve("live").toString());
      final byte[][] deletedKeys = load(plain, keys, deleted);
      load(live, keys, deleted);
      final String[] names = {"missing", "deleted", "put"};
      final double[][] ratio = new double[3][rounds];
      final double[][] nsPlain = new double[3][rounds], nsLive = new double[3][rounds];
      // Keys made before the timing: the rounds time the DBs, not String.format.
      final byte[][] missingKeys = new byte[(int) reads][];
      for (int i = 0; i < reads; ++i) missingKeys[i] = missing((i * 7919L) % keys);
      final byte[][][] newKeys = new byte[rounds][(int) puts][];
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < puts; ++i) newKeys[r][i] = loaded(keys + (long) r * puts + i);
      }
      final long[] hits = new long[2];  // per DB: both must find the same keys
      for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < 3; ++w) {
          final double[] ns = new double[2];
          final RocksDB[] dbs = (r % 2 == 0) ? new RocksDB[] {plain, live} : new RocksDB[] {live, plain};
          for (RocksDB db : dbs) {
            final long t0 = System.nanoTime();
            if (w == 0) {
              for (int i = 0; i < reads; ++i) if (db.get(missingKeys[i]) != null) ++hits[db == plain ? 0 : 1];
            } else if (w == 1) {
              for (long i = 0; i < reads; ++i) {
                if (db.get(deletedKeys[(int) (i % deleted)]) != null) ++hits[db == plain ? 0 : 1];
              }
            } else {
              final byte[] v = new byte[100];
              for (int i = 0; i < puts; ++i) db.put(wo, newKeys[r][i], v);
            }
            final double per = (System.nanoTime() - t0) / (double) (w == 2 ? puts : reads);
            ns[db == plain ? 0 : 1] = per;
          }
          nsPlain[w][r] = ns[0];
          nsLive[w][r] = ns[1];
          ratio[w][r] = w == 2 ? ns[1] / ns[0] : ns[0] / ns[1];
        }
      }
      for (int w = 0; w < 3; ++w) {
        System.out.printf("livekey_java_bench workload=%-7s plain_ns_per_op=%9.1f livekey_ns_per_op=%9.1f %s=%.3fx (median of %d interleaved rounds)%n",
            names[w], median(nsPlain[w]), median(nsLive[w]), w == 2 ? "cost" : "speedup", median(ratio[w]), rounds);
      }
      final double m = median(ratio[0]), d = median(ratio[1]), p = median(ratio[2]);
      System.out.printf("livekey_java_bench goal missing livekey %.2fx plain (throughput, goal >= 5x) %s%n", m, m >= 5 ? "PASS" : "FAIL");
      System.out.printf("livekey_java_bench goal deleted livekey %.2fx plain (throughput, goal >= 4x) %s%n", d, d >= 4 ? "PASS" : "FAIL");
      System.out.printf("livekey_java_bench goal put     livekey %.3fx plain (cost, goal <= 1.15x) %s%n", p, p <= 1.15 ? "PASS" : "FAIL");
      System.out.println(live.getLiveKeyStats().dump());
      if (hits[0] != hits[1]) {
        System.out.println("livekey_java_bench FAILED: the DBs found different keys (" + hits[0] + " vs " + hits[1] + ")");
        System.exit(1);
      }
      live.close();
      plain.close();
    }
  }
}
