// DlcbfJavaCheck: the ids dlcbf:<bits> (SST filter policy) and dlcbf_index
// (memtable factory) from Java, through RocksJava, the way Kafka Streams
// (RocksDBConfigSetter) and Flink (RocksDBOptionsFactory) configure
// RocksDB. Run by `tools/run.sh rocksdb-java <rocksdb-source-dir>` against
// a rocksdbjni jar whose native library was built with ROCKSDB_PLUGINS=dlcbf.
//
// RocksJava has no Filter.createFromString (facebook/rocksdb PR #11205 is
// open), so the ids reach C++ as option strings. Two routes, each checked:
//   props        ColumnFamilyOptions.getColumnFamilyOptionsFromProps with
//                block_based_table_factory={filter_policy=dlcbf:10} and
//                memtable_factory=dlcbf_index (parsed by RocksDB's C++
//                option parser through its object registry)
//   options_file OptionsUtil.loadOptionsFromFile on an OPTIONS file that
//                names them (as RocksDB writes one back)
// For each route: open a DB, write --keys keys, flush, read every key and
// as many absent ones, delete a tenth and read everything again. It fails
// (exit 1) unless no present key was missed, no deleted key was found, the
// SST filter answered (rocksdb.bloom.filter.useful > 0), every SST file's
// table properties name the dlcbf filter policy, and the OPTIONS file
// RocksDB wrote back names dlcbf:10 and dlcbf_index. If the library does
// not know the ids it says so and exits 2.
//
// Usage: java -cp rocksdbjni-<ver>-linux64.jar:. DlcbfJavaCheck <work-dir> [keys]
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.ConfigOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.OptionsUtil;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.Statistics;
import org.rocksdb.TableProperties;
import org.rocksdb.TickerType;

public final class DlcbfJavaCheck {
  private static final int EXIT_NOT_REGISTERED = 2;

  private static byte[] key(String prefix, int i) {
    return String.format("%s%08d", prefix, i).getBytes(StandardCharsets.UTF_8);
  }

  private static void fail(String why) {
    System.out.println("dlcbf-java FAILED: " + why);
    System.exit(1);
  }

  private static void notRegistered(String route, String detail) {
    System.out.println("dlcbf-java FAILED: route " + route + ": the ids dlcbf:10 / dlcbf_index are not "
        + "registered in this librocksdbjni (" + detail + "). Build it with the plugin: "
        + "tools/run.sh rocksdb-java <rocksdb-source-dir> (ROCKSDB_PLUGINS=dlcbf).");
    System.exit(EXIT_NOT_REGISTERED);
  }

  private static void wipe(Path dir) throws IOException {
    if (!Files.exists(dir)) return;
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) Files.delete(p);
    }
  }

  // The OPTIONS file of the options_file route, in RocksDB's format.
  private static String optionsFile() {
    return "[Version]\n"
        + "  rocksdb_version=" + RocksDB.rocksdbVersion() + "\n"
        + "  options_file_version=1.1\n"
        + "[DBOptions]\n"
        + "  create_if_missing=true\n"
        + "[CFOptions \"default\"]\n"
        + "  write_buffer_size=1048576\n"
        + "  memtable_factory=dlcbf_index\n"
        + "[TableOptions/BlockBasedTable \"default\"]\n"
        + "  filter_policy=dlcbf:10\n";
  }

  private static void runRoute(String route, Path dir, int keys) throws Exception {
    wipe(dir);
    Files.createDirectories(dir);
    final Statistics stats = new Statistics();
    DBOptions dbOpts;
    ColumnFamilyOptions cfOpts;
    try (ConfigOptions cfg = new ConfigOptions().setIgnoreUnknownOptions(false)) {
      if (route.equals("props")) {
        final Properties p = new Properties();
        p.setProperty("block_based_table_factory", "{filter_policy=dlcbf:10}");
        p.setProperty("memtable_factory", "dlcbf_index");
        p.setProperty("write_buffer_size", "1048576");
        cfOpts = ColumnFamilyOptions.getColumnFamilyOptionsFromProps(cfg, p);
        if (cfOpts == null) notRegistered(route, "getColumnFamilyOptionsFromProps returned null");
        dbOpts = new DBOptions().setCreateIfMissing(true);
      } else {
        final Path file = dir.resolveSibling(dir.getFileName() + ".OPTIONS");
        Files.write(file, optionsFile().getBytes(StandardCharsets.UTF_8));
        dbOpts = new DBOptions();
        final List<ColumnFamilyDescriptor> descs = new ArrayList<>();
        try {
          OptionsUtil.loadOptionsFromFile(cfg, file.toString(), dbOpts, descs);
        } catch (RocksDBException e) {
          notRegistered(route, "loadOptionsFromFile: " + e.getMessage());
        }
        cfOpts = descs.get(0).getOptions();
      }
    }
    dbOpts.setStatistics(stats);
    final List<ColumnFamilyDescriptor> cfs = new ArrayList<>();
    cfs.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfOpts));
    final List<ColumnFamilyHandle> handles = new ArrayList<>();
    long missed = 0, resurrected = 0, absentFound = 0;
    try (RocksDB db = RocksDB.open(dbOpts, dir.toString(), cfs, handles)) {
      final ColumnFamilyHandle cf = handles.get(0);
      final byte[] value = new byte[100];
      for (int i = 0; i < keys; ++i) db.put(cf, key("k", i), value);
      for (int i = 0; i < keys; ++i) {  // in the memtable (dlcbf_index)
        if (db.get(cf, key("k", i)) == null) ++missed;
      }
      try (FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
        db.flush(fo, cf);
      }
      for (int i = 0; i < keys; ++i) {  // in SST files (dlcbf:10)
        if (db.get(cf, key("k", i)) == null) ++missed;
        if (db.get(cf, key("a", i)) != null) ++absentFound;
      }
      for (int i = 0; i < keys; i += 10) db.delete(cf, key("k", i));
      try (FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
        db.flush(fo, cf);
      }
      for (int i = 0; i < keys; ++i) {
        final boolean deleted = i % 10 == 0;
        final byte[] got = db.get(cf, key("k", i));
        if (got == null && !deleted) ++missed;
        if (got != null && deleted) ++resurrected;
      }
      final long useful = stats.getTickerCount(TickerType.BLOOM_FILTER_USEFUL);
      final long positive = stats.getTickerCount(TickerType.BLOOM_FILTER_FULL_POSITIVE);
      final long truePositive = stats.getTickerCount(TickerType.BLOOM_FILTER_FULL_TRUE_POSITIVE);
      final Map<String, TableProperties> props = db.getPropertiesOfAllTables(cf);
      int dlcbfFiles = 0;
      final StringBuilder names = new StringBuilder();
      for (TableProperties tp : props.values()) {
        final String name = tp.getFilterPolicyName();
        if (name != null && name.toLowerCase().contains("dlcbf")) ++dlcbfFiles;
        if (names.indexOf(String.valueOf(name)) < 0) names.append(names.length() == 0 ? "" : ",").append(name);
      }
      String written = "";
      try (Stream<Path> s = Files.list(dir)) {
        final Path latest = s.filter(f -> f.getFileName().toString().startsWith("OPTIONS-"))
                                .max(Comparator.comparing(Path::toString)).orElse(null);
        if (latest != null) written = new String(Files.readAllBytes(latest), StandardCharsets.UTF_8);
      }
      final boolean optFilter = written.matches("(?s).*\\n\\s*filter_policy=dlcbf[^\\n]*\\n.*");
      final boolean optMemtable = written.matches("(?s).*\\n\\s*memtable_factory=dlcbf_index[^\\n]*\\n.*");
      final double fpr = (positive - truePositive + useful) == 0
          ? 0 : (double) (positive - truePositive) / (positive - truePositive + useful);
      System.out.printf("dlcbf-java route=%-12s rocksdb=%s keys=%d missed=%d deleted_found=%d absent_found=%d "
              + "filter_useful=%d sst_fpr=%.4f sst_files=%d dlcbf_sst_files=%d filter_policy_names=%s "
              + "options_file_filter=%s options_file_memtable=%s%n",
          route, RocksDB.rocksdbVersion(), keys, missed, resurrected, absentFound, useful, fpr, props.size(),
          dlcbfFiles, names, optFilter, optMemtable);
      if (missed != 0) fail(route + ": " + missed + " present keys answered null");
      if (resurrected != 0) fail(route + ": " + resurrected + " deleted keys were found");
      if (absentFound != 0) fail(route + ": " + absentFound + " absent keys were found");
      if (useful == 0) fail(route + ": rocksdb.bloom.filter.useful is 0: the SST filter never answered");
      if (props.isEmpty() || dlcbfFiles != props.size()) {
        fail(route + ": " + dlcbfFiles + " of " + props.size() + " SST files carry the dlcbf filter (" + names + ")");
      }
      if (!optFilter || !optMemtable) {
        fail(route + ": the OPTIONS file RocksDB wrote does not name filter_policy=dlcbf:10 and "
            + "memtable_factory=dlcbf_index[:<options>]");
      }
      for (ColumnFamilyHandle h : handles) h.close();
    }
    cfOpts.close();
    dbOpts.close();
    stats.close();
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: DlcbfJavaCheck <work-dir> [keys]");
      System.exit(64);
    }
    final Path work = Paths.get(args[0]);
    final int keys = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
    RocksDB.loadLibrary();
    for (String route : new String[] {"props", "options_file"}) runRoute(route, work.resolve(route), keys);
    System.out.println("dlcbf-java PASSED: both routes, RocksDB " + RocksDB.rocksdbVersion());
  }
}
