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
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;
import org.dlcbf.rocksdb.LiveKeyDB;
import org.dlcbf.rocksdb.LiveKeyIndexOptions;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.WriteOptions;

public final class LiveKeyJavaBench {
  private static byte[] key(String p, long i) { return String.format("%s%010d", p, i).getBytes(StandardCharsets.UTF_8); }

  private static void wipe(Path p) throws Exception {
    if (!Files.exists(p)) return;
    try (Stream<Path> s = Files.walk(p)) {
      s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }

  private static Options options() {
    final BlockBasedTableConfig t = new BlockBasedTableConfig();
    t.setFilterPolicy(new BloomFilter(10, false));
    return new Options().setCreateIfMissing(true).setWriteBufferSize(2 << 20).setMaxBytesForLevelBase(8 << 20)
        .setTargetFileSizeBase(2 << 20).setLevel0FileNumCompactionTrigger(40).setLevel0SlowdownWritesTrigger(60)
        .setLevel0StopWritesTrigger(80).setTableFormatConfig(t);
  }

  // Loads `keys` keys (the oldest 90 % compacted into levels, the newest 10 % in L0 files),
  // then deletes `deleted` of them (their tombstones in L0).
  private static void load(RocksDB db, long keys, long deleted) throws Exception {
    final byte[] v = new byte[100];
    try (WriteOptions wo = new WriteOptions().setDisableWAL(true); FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
      final long old = keys * 9 / 10;
      for (long i = 0; i < old; ++i) db.put(wo, key("k", i * 2), v);
      db.flush(fo);
      db.compactRange();
      for (long i = old; i < keys; ++i) {
        db.put(wo, key("k", i * 2), v);
        if ((i - old) % ((keys - old) / 10 + 1) == 0) db.flush(fo);
      }
      for (long i = 0; i < deleted; ++i) db.delete(wo, key("k", i * 2 * (keys / deleted)));
      db.flush(fo);
    }
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
      load(plain, keys, deleted);
      load(live, keys, deleted);
      final String[] names = {"missing", "deleted", "put"};
      final double[][] ratio = new double[3][rounds];
      final double[][] nsPlain = new double[3][rounds], nsLive = new double[3][rounds];
      long sink = 0, next = 0;
      for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < 3; ++w) {
          final double[] ns = new double[2];
          final RocksDB[] dbs = (r % 2 == 0) ? new RocksDB[] {plain, live} : new RocksDB[] {live, plain};
          for (RocksDB db : dbs) {
            final long t0 = System.nanoTime();
            if (w == 0) {
              for (long i = 0; i < reads; ++i) if (db.get(key("k", (i * 7919 % keys) * 2 + 1)) != null) ++sink;
            } else if (w == 1) {
              for (long i = 0; i < reads; ++i) {
                if (db.get(key("k", ((i % deleted) * 2 * (keys / deleted)))) != null) ++sink;
              }
            } else {
              final byte[] v = new byte[100];
              final long base = next;
              for (long i = 0; i < puts; ++i) db.put(wo, key("n" + r, base + i), v);
            }
            final double per = (System.nanoTime() - t0) / (double) (w == 2 ? puts : reads);
            ns[db == plain ? 0 : 1] = per;
          }
          next += puts;
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
      System.out.println(live.getLiveKeyStatsString());
      if (sink == 42) System.out.println();
      live.close();
      plain.close();
    }
  }
}
