#!/usr/bin/env bash
# tools/run.sh — the one entry point for building, testing and demoing.
#
#   tools/run.sh demo    install missing packages, build (Release), run the demo
#   tools/run.sh test    install missing packages, build (Release), run ctest
#   tools/run.sh build   install missing packages and build only
#   tools/run.sh asan    ASan+UBSan build (ASAN_BUILD_DIR) and its ctest suite
#   tools/run.sh tsan    TSan build (TSAN_BUILD_DIR), concurrency + oracle
#                        tests only (ctest -R "$TSAN_TESTS", see below)
#   tools/run.sh fuzz    clang/libFuzzer build (FUZZ_BUILD_DIR), each target
#                        FUZZ_SECONDS (default 600) from its seed corpus
#   tools/run.sh crash   SIGKILL crash-recovery test, CRASH_CYCLES (default 60)
#   tools/run.sh rocksdb-source <rocksdb-source-dir>
#                        build that RocksDB (a verified release: 9.10.0,
#                        10.10.1, 11.8.1) with this project as its in-tree
#                        plugin (tools/rocksdb_plugin/), run our
#                        RocksDB-facing tests against it, its own db_bench
#                        and db_stress (DB_STRESS_SECONDS, default 600) with
#                        dlcbf:10 + dlcbf_index, optionally its blackbox
#                        crash test (CRASHTEST_SECONDS), and the
#                        cross-version SST checks (never part of `test`/CI:
#                        the RocksDB build alone takes 8-60 min)
#
# `test` (= CI) = Release suite, then the ASan/UBSan suite, then the TSan
# suite, then every fuzz target for FUZZ_SECONDS=30. Each stage can be
# switched off (below); a switched-off stage is logged as SKIPPED.
#
# Environment:
#   BUILD_DIR        build directory (default: build)
#   ASAN_BUILD_DIR   (default: build-asan)    TSAN_BUILD_DIR (default: build-tsan)
#   FUZZ_BUILD_DIR   (default: build-fuzz)
#   JOBS             parallel build jobs (default: nproc)
#   DLCBF_CI_ASAN=0  `test` skips the ASan/UBSan suite
#   DLCBF_CI_TSAN=0  `test` skips the TSan suite (on by default)
#   DLCBF_CI_FUZZ=0  `test` skips the short fuzz runs
#   DLCBF_TEST_SCALE iteration multiplier for the slow tests (default 1;
#                    the sanitizer suites use 0.25, see tests/test_scale.h)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
BUILD_DIR="${BUILD_DIR:-build}"
ASAN_BUILD_DIR="${ASAN_BUILD_DIR:-build-asan}"
TSAN_BUILD_DIR="${TSAN_BUILD_DIR:-build-tsan}"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"
JOBS="${JOBS:-$(nproc)}"

log() { printf '\n== %s\n' "$*"; }

# run_ctest DIR CMD...: runs CMD (a ctest command line, maybe behind `env`)
# in DIR. When tests fail, each failed test's last lines are printed again
# at the very end: a CI log keeps its head and tail, and a long suite puts a
# failure's own lines in the middle, where they would be cut.
run_ctest() {
  local dir="$1" rc=0
  shift
  (cd "$dir" && "$@") || rc=$?
  [ "$rc" = 0 ] || ctest_failure_digest "$dir"
  return "$rc"
}

ctest_failure_digest() {
  local out="$1/Testing/Temporary/LastTest.log" failed="$1/Testing/Temporary/LastTestsFailed.log"
  [ -f "$out" ] && [ -f "$failed" ] || { echo "(no ctest logs under $1/Testing/Temporary)"; return 0; }
  local name
  while IFS=: read -r _ name; do
    echo
    echo "==== FAILED: $name (its output's last ${DIGEST_LINES:-40} lines, from $out)"
    # A test's block in LastTest.log: "N/M Test: <name>", ..., "Output:",
    # a dashed line, the output, "<end of output>".
    awk -v t="$name" '
      $0 ~ /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); inside = ($0 == t); printing = 0; next }
      inside && $0 == "<end of output>" { inside = 0; printing = 0; next }
      inside && printing { print; next }
      inside && /^-+$/ { printing = 1 }' "$out" | tail -n "${DIGEST_LINES:-40}"
  done < "$failed"
}

# Debian packages the project needs. Each entry: "<package>".
# gnuplot-nox: tools/bench/peer_bench --plot_dir draws its frontier plots with it.
PACKAGES=(librocksdb-dev rocksdb-tools libgtest-dev libgmock-dev libgflags-dev
          libsnappy-dev libxxhash-dev libbenchmark-dev cmake g++ make pkg-config
          gnuplot-nox)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  # One line on the terminal; apt's own output goes to a log, shown on failure.
  local SUDO="" aptlog
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  aptlog="$(mktemp /tmp/dlcbf-apt.XXXXXX.log)"
  printf '== installing %d missing Debian package(s): %s ... ' "${#missing[@]}" "${missing[*]}"
  if { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
       $SUDO apt-get install -y -qq "${missing[@]}"; } >"$aptlog" 2>&1; then
    echo "done (log: $aptlog)"
  else
    echo "FAILED"
    tail -n 30 "$aptlog" >&2
    echo "apt-get failed; full log: $aptlog" >&2
    return 1
  fi
}

build() {
  log "configuring into $BUILD_DIR (Release)"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  log "building with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# ---- sanitizers, fuzzing, crash test ------------------------------
# Tests that drive stock db_bench with LD_PRELOAD=libdlcbf_plugin.so cannot
# run in sanitizer builds (the uninstrumented db_bench would have to load the
# sanitizer runtime first); they run in the Release suite.
# The long transaction/disableWAL stress regression runs in the Release stage only
# (livekey_stress_short mixes the same mechanisms under the sanitizers):
# CI stays under 30 minutes.
SANITIZER_CTEST_EXCLUDE='db_bench|livekey_stress_txn_disablewal_checkpoint'
# Concurrency suites for TSan (ctest -R, matched against Suite.Test names):
# dlCBF thread-safe mode and its long relocation chains, CBF readers/writer,
# elastic filter migration, filter block readers, memtable index (writers,
# readers, reclaim), LiveKeyDB's concurrent / linearizability oracle, and
# the memtable-index oracle tests (RocksDB flushes run beside the writer).
TSAN_TESTS='Concurrency|Concurrent|Oracle|Linearizab|Stress|Reclaim|livekey_stress'
# ... except DLeftGeometryTest.OracleMultiset: one thread, no RocksDB, so
# TSan has nothing to check, and it is the slowest test under TSan (~5 min
# of CPU for its six geometries).
TSAN_EXCLUDE='^Geometries/DLeftGeometryTest\.'
# Sanitizer and fuzz builds compile at -O1 (the level ASan recommends) with
# line tables (-g1, from CMakeLists.txt): a test TU compiles in 0.6x the
# time of -O2 -g (GCC 12: tests/live_key_db_test.cc 68 s -> 40 s), which
# keeps CI under 30 minutes.
SANITIZER_OPT="${SANITIZER_OPT:--O1 -DNDEBUG}"
FUZZERS=(fuzz_filter_block_reader fuzz_deserialize fuzz_ops fuzz_option_strings)

asan_suite() {
  log "ASan+UBSan build into $ASAN_BUILD_DIR"
  # examples/ run in the Release suite (their find_package consumer
  # configures and builds a project of its own: minutes saved per stage).
  cmake -S . -B "$ASAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$SANITIZER_OPT" \
        -DDLCBF_SANITIZE=address \
        -DDLCBF_BUILD_BENCHMARKS=OFF -DDLCBF_BUILD_EXAMPLES=OFF -DDLCBF_BUILD_PAPER_TOOLS=OFF >/dev/null
  cmake --build "$ASAN_BUILD_DIR" -j "$JOBS"
  log "running tests under ASan+UBSan (not the db_bench tests: stock db_bench cannot preload an ASan plugin; they ran in the Release suite)"
  run_ctest "$ASAN_BUILD_DIR" env \
   DLCBF_TEST_SCALE="${DLCBF_TEST_SCALE:-0.25}" \
   ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}" \
   UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
   ctest --output-on-failure -j "$JOBS" -E "$SANITIZER_CTEST_EXCLUDE" "$@"
}

TSAN_TARGETS=(dense_dleft_filter_test dense_dleft_filter_bmi2_test fast_dleft_filter_test dleft_test
              elastic_filter_test counting_bloom_filter_test autoscaling_bloom_filter_test filter_policy_test
              memtable_index_test live_key_db_oracle_test live_key_db_exactness_test
              live_key_db_transactions_test live_key_db_seek_test livekey_stress)

# Every test the Release build runs under TSAN_TESTS must exist in the TSan
# build too (else it would be skipped without a word).
tsan_check_targets() {
  [ -d "$BUILD_DIR" ] || { log "no Release build at $BUILD_DIR: TSan target list not checked"; return 0; }
  local names='s/^ *Test *#[0-9]*: \([^ ]*\).*/\1/p'  # (the name alone: a parameter's bytes differ per build)
  local missing
  missing=$(comm -23 \
    <(cd "$BUILD_DIR" && ctest -N -R "$TSAN_TESTS" -E "$SANITIZER_CTEST_EXCLUDE|$TSAN_EXCLUDE" | sed -n "$names" | sort) \
    <(cd "$TSAN_BUILD_DIR" && ctest -N -R "$TSAN_TESTS" -E "$SANITIZER_CTEST_EXCLUDE|$TSAN_EXCLUDE" | sed -n "$names" | sort))
  if [ -n "$missing" ]; then
    echo "FAILED: concurrency tests missing from the TSan build (add their binary to TSAN_TARGETS in tools/run.sh):"
    echo "$missing" | head -20
    return 1
  fi
}

tsan_suite() {
  log "TSan build into $TSAN_BUILD_DIR"
  cmake -S . -B "$TSAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$SANITIZER_OPT" \
        -DDLCBF_SANITIZE=thread \
        -DDLCBF_BUILD_BENCHMARKS=OFF -DDLCBF_BUILD_TOOLS=OFF -DDLCBF_BUILD_EXAMPLES=OFF >/dev/null
  # Only the binaries that hold TSAN_TESTS (minutes of a full TSan build
  # saved); tsan_check_targets below fails if a concurrency test of the
  # Release build lives in a binary not listed here.
  cmake --build "$TSAN_BUILD_DIR" -j "$JOBS" --target "${TSAN_TARGETS[@]}"
  tsan_check_targets
  # The TSan build links the shared librocksdb (not instrumented), whose own
  # accesses are ignored (ignore_noninstrumented_modules=1; see the top-level
  # CMakeLists.txt). Suppressions name frames inside librocksdb only.
  local supp="$here/tests/memtable_index_tsan.supp"
  local opts="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$supp}"
  log "running the concurrency tests under TSan (-R '$TSAN_TESTS', LiveKeyDB apart)"
  run_ctest "$TSAN_BUILD_DIR" env \
   DLCBF_TEST_SCALE="${DLCBF_TEST_SCALE:-0.25}" TSAN_OPTIONS="$opts" \
   ctest --output-on-failure -j "$JOBS" -R "$TSAN_TESTS" -E "$SANITIZER_CTEST_EXCLUDE|$TSAN_EXCLUDE|^LiveKeyDB" "$@"
  # LiveKeyDB's rebuild holds all its stripe mutexes at once (LockAll), more
  # than the 64 locks per thread TSan's deadlock detector can track (it
  # aborts with "CHECK failed: sanitizer_deadlock_detector.h:67"), so its
  # tests run with detect_deadlocks=0: data races are still reported, lock
  # order inversions are not.
  log "running LiveKeyDB's concurrency tests under TSan (detect_deadlocks=0)"
  run_ctest "$TSAN_BUILD_DIR" env \
   DLCBF_TEST_SCALE="${DLCBF_TEST_SCALE:-0.25}" TSAN_OPTIONS="$opts:detect_deadlocks=0" \
   ctest --output-on-failure -j "$JOBS" -R "^LiveKeyDB.*($TSAN_TESTS)" -E "$SANITIZER_CTEST_EXCLUDE" "$@"
}

fuzz_build() {
  install_packages clang libclang-rt-14-dev
  log "libFuzzer build (clang, ASan+UBSan) into $FUZZ_BUILD_DIR"
  CC=clang CXX=clang++ cmake -S . -B "$FUZZ_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$SANITIZER_OPT" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$SANITIZER_OPT" \
        -DDLCBF_SANITIZE=address -DDLCBF_BUILD_FUZZERS=ON -DDLCBF_WERROR=OFF \
        -DDLCBF_BUILD_TESTS=OFF -DDLCBF_BUILD_BENCHMARKS=OFF -DDLCBF_BUILD_TOOLS=OFF >/dev/null
  # Only the fuzzers: clang does not link sanitizer runtimes into shared
  # objects, so libdlcbf_plugin.so (-Wl,--no-undefined) is not built here.
  cmake --build "$FUZZ_BUILD_DIR" -j "$JOBS" --target "${FUZZERS[@]}"
}

# fuzz_run SECONDS: every target from its committed seed corpus; new inputs
# go to $FUZZ_BUILD_DIR/corpus/<target> (the committed corpus is read-only
# here), crashes to $FUZZ_BUILD_DIR/artifacts/. Prints inputs fuzzed.
fuzz_run() {
  local secs="$1" t rc=0
  mkdir -p "$FUZZ_BUILD_DIR/artifacts"
  for t in "${FUZZERS[@]}"; do
    mkdir -p "$FUZZ_BUILD_DIR/corpus/$t"
    log "fuzzing $t for ${secs}s"
    if ! ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}" \
         UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
         "$FUZZ_BUILD_DIR/tests/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 \
           -artifact_prefix="$FUZZ_BUILD_DIR/artifacts/$t-" \
           "$FUZZ_BUILD_DIR/corpus/$t" "tests/fuzz/corpus/$t" >"$FUZZ_BUILD_DIR/$t.log" 2>&1; then
      tail -n 60 "$FUZZ_BUILD_DIR/$t.log"
      echo "FAILED: $t (log: $FUZZ_BUILD_DIR/$t.log)"
      rc=1
      continue
    fi
    echo "$t: $(grep -m1 'stat::number_of_executed_units' "$FUZZ_BUILD_DIR/$t.log" | awk '{print $2}') inputs fuzzed in ${secs}s, no failure"
  done
  return $rc
}

# The in-tree plugin directory <rocksdb>/plugin/dlcbf: our dlcbf.mk and
# CMakeLists.txt (copied only on change: no needless reconfigure) and the
# dlcbf_repo symlink to this checkout.
install_plugin_dir() {
  local src="$1" f
  mkdir -p "$src/plugin/dlcbf"
  for f in dlcbf.mk CMakeLists.txt; do
    cmp -s "tools/rocksdb_plugin/$f" "$src/plugin/dlcbf/$f" || cp "tools/rocksdb_plugin/$f" "$src/plugin/dlcbf/$f"
  done
  ln -sfn "$here" "$src/plugin/dlcbf/dlcbf_repo"
}

# "<major>.<minor>.<patch>" of the RocksDB source tree $1.
rocksdb_tree_version() {
  local h="$1/include/rocksdb/version.h"
  printf '%s.%s.%s\n' "$(sed -n 's/^#define ROCKSDB_MAJOR \([0-9]*\).*/\1/p' "$h")" \
    "$(sed -n 's/^#define ROCKSDB_MINOR \([0-9]*\).*/\1/p' "$h")" \
    "$(sed -n 's/^#define ROCKSDB_PATCH \([0-9]*\).*/\1/p' "$h")"
}

# ---- rocksdb-java: RocksJava (librocksdbjni + jar) with the plugin -----
# The releases whose Java route is verified (docs/VERIFIED_RELEASES.md,
# Java column).
ROCKSDB_JAVA_VERSIONS="8.10.2 11.8.1"

rocksdb_java() {
  local src="${1:-}" t0 t
  [ -n "$src" ] || { echo "usage: tools/run.sh rocksdb-java <rocksdb-source-dir>" >&2; return 2; }
  src="$(cd "$src" 2>/dev/null && pwd)" || { echo "error: $1: no such directory" >&2; return 2; }
  if [ ! -f "$src/include/rocksdb/version.h" ] || [ ! -f "$src/java/CMakeLists.txt" ]; then
    echo "error: $src is not a RocksDB source tree with its java/ directory" >&2
    return 2
  fi
  local ver; ver="$(rocksdb_tree_version "$src")"
  if ! printf ' %s ' $ROCKSDB_JAVA_VERSIONS | grep -q " $ver "; then
    echo "error: RocksJava $ver has not been verified with rocksdb-java; verified releases: $ROCKSDB_JAVA_VERSIONS" >&2
    return 2
  fi
  local jbuild="${ROCKSDB_JAVA_BUILD_DIR:-$src/build-java}"
  local work="${ROCKSDB_JAVA_WORK:-$here/build-rocksdb-java-$ver}"
  trap 'echo "rocksdb-java: FAILED at: $current_step" >&2' ERR
  local current_step
  jstep() { log "[rocksdb-java $ver] $*"; }

  current_step="1/4 packages and the plugin directory"
  jstep "$current_step"
  install_packages ccache python3 default-jdk-headless
  install_plugin_dir "$src"
  # RocksDB's java/CMakeLists.txt downloads five test jars (junit, hamcrest,
  # mockito, cglib, assertj) at configure time, and the JNI library needs
  # the headers generated from its test classes, compiled against them.
  # Where a jar is missing (no access to RocksDB's S3 bucket), Debian's
  # stands in under the expected name: junit 4.13.2 for 4.13.1, hamcrest
  # 2.2, mockito-core 2.23 for mockito-all 1.10.19, cglib 3.3.0, assertj
  # 3.14 for 2.9 (only compiled against, never run here).
  install_packages junit4 libhamcrest-java libmockito-java libcglib-java libassertj-core-java
  local jv lib want have
  mkdir -p "$src/java/test-libs"
  for lib in junit:JAVA_JUNIT_VERSION:junit4.jar hamcrest:JAVA_HAMCR_VERSION:hamcrest.jar \
             mockito-all:JAVA_MOCKITO_VERSION:mockito-core.jar cglib:JAVA_CGLIB_VERSION:cglib.jar \
             assertj-core:JAVA_ASSERTJ_VERSION:assertj-core.jar; do
    IFS=: read -r want jv have <<<"$lib"
    jv="$(sed -n "s/^set($jv \"\(.*\)\")/\1/p" "$src/java/CMakeLists.txt")"
    local jar_path="$src/java/test-libs/$want-$jv.jar"
    if [ ! -s "$jar_path" ] || [ "$(stat -c %s "$jar_path")" -lt 4096 ]; then
      cp "/usr/share/java/$have" "$jar_path"
      echo "$(basename "$jar_path"): Debian's /usr/share/java/$have"
    fi
  done

  current_step="2/4 RocksJava build (librocksdbjni + rocksdbjni jar; ROCKSDB_PLUGINS=dlcbf, WITH_JNI=ON)"
  jstep "$current_step into $jbuild, $JOBS jobs, ccache (log: $jbuild/dlcbf-build.log)"
  mkdir -p "$jbuild"
  t0="$(date -u +%s)"
  # (ROCKSDB_BUILD_SHARED=OFF: the JNI library links the static library;
  # with it on, librocksdb.so would be compiled as well, doubling the build.)
  cmake -S "$src" -B "$jbuild" -DCMAKE_BUILD_TYPE=Release -DPORTABLE=1 -DROCKSDB_PLUGINS=dlcbf -DWITH_JNI=ON \
        -DROCKSDB_BUILD_SHARED=OFF \
        -DWITH_TESTS=OFF -DWITH_TOOLS=OFF -DWITH_CORE_TOOLS=OFF -DWITH_BENCHMARK_TOOLS=OFF \
        -DWITH_GFLAGS=OFF -DWITH_SNAPPY=ON -DFAIL_ON_WARNINGS=OFF \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
        >"$jbuild/dlcbf-configure.log" 2>&1 ||
    { tail -n 30 "$jbuild/dlcbf-configure.log" >&2; false; }
  # 11.x: target rocksdbjava, a jar holding librocksdbjni-linux64.so.
  # 8.10: no such target; librocksdbjni.so and rocksdbjni_classes.jar, the
  # library found through java.library.path.
  local jar so libpath=()
  if grep -q 'add_custom_target(rocksdbjava' "$src/java/CMakeLists.txt"; then
    cmake --build "$jbuild" -j "$JOBS" --target rocksdbjava >"$jbuild/dlcbf-build.log" 2>&1 ||
      { grep -E "error|Error" "$jbuild/dlcbf-build.log" | head -n 30 >&2; false; }
    jar="$(ls "$jbuild"/java/rocksdbjni-*-linux64.jar | head -n 1)"
    so="$(ls "$jbuild"/java/librocksdbjni-linux64.so | head -n 1)"
  else
    cmake --build "$jbuild" -j "$JOBS" --target rocksdbjni rocksdbjni_classes >"$jbuild/dlcbf-build.log" 2>&1 ||
      { grep -E "error|Error" "$jbuild/dlcbf-build.log" | head -n 30 >&2; false; }
    jar="$jbuild/java/rocksdbjni_classes.jar"
    so="$jbuild/java/librocksdbjni.so"
    libpath=("-Djava.library.path=$jbuild/java")
  fi
  t=$(( $(date -u +%s) - t0 ))
  echo "built $jar and $(basename "$so") in ${t}s"
  [ "$(nm -D --defined-only "$so" | grep -c ' dlcbf_register_all$')" -ge 1 ] ||
    { echo "$so does not define dlcbf_register_all: the plugin was not built in" >&2; false; }
  [ "$(nm -D --defined-only "$so" | grep -c ' Java_org_dlcbf_rocksdb_LiveKeyDB_openNative$')" -ge 1 ] ||
    { echo "$so does not define LiveKeyDB's JNI functions: the plugin's CMakeLists.txt did not add them" >&2; false; }

  current_step="3/4 compile tools/java/DlcbfJavaCheck.java, LiveKeyDB's binding (java/) and tools/java/LiveKeyJavaCheck.java (javac, no Maven)"
  jstep "$current_step"
  rm -rf "$work"; mkdir -p "$work/classes"
  # (8.10's CMake jar lacks AbstractComparatorJniBridge, which its own
  # AbstractComparator needs from native code: compiled from the same tree.)
  local bridge=()
  jar tf "$jar" | grep -q '^org/rocksdb/AbstractComparatorJniBridge.class$' ||
    bridge=("$src/java/src/main/java/org/rocksdb/AbstractComparatorJniBridge.java")
  javac -cp "$jar" -d "$work/classes" tools/java/DlcbfJavaCheck.java java/org/dlcbf/rocksdb/*.java \
        tools/java/LiveKeyJavaCheck.java tools/java/LiveKeyJavaBench.java "${bridge[@]}"

  current_step="4/4 DlcbfJavaCheck: dlcbf:10 + dlcbf_index through the properties and OPTIONS-file routes"
  jstep "$current_step"
  java "${libpath[@]}" -cp "$jar:$work/classes" DlcbfJavaCheck "$work/db" "${JAVA_CHECK_KEYS:-20000}" |
    tee "$work/java-check.log"
  grep -q '^dlcbf-java PASSED' "$work/java-check.log"
  current_step="4/4 LiveKeyJavaCheck: LiveKeyDB through RocksJava against a plain DB, and its negative control"
  jstep "$current_step"
  java "${libpath[@]}" -cp "$jar:$work/classes" LiveKeyJavaCheck "$work/livekey" "${JAVA_LIVEKEY_OPS:-20000}" |
    tee "$work/livekey-check.log"
  grep -q '^livekey-java PASSED' "$work/livekey-check.log"
  java "${libpath[@]}" -cp "$jar:$work/classes" LiveKeyJavaCheck "$work/livekey-negative" 4000 --negative |
    tee "$work/livekey-negative.log"
  grep -q '^livekey-java PASSED (negative control' "$work/livekey-negative.log"
  if [ -n "${JAVA_LIVEKEY_BENCH_KEYS:-}" ]; then
    jstep "LiveKeyJavaBench, $JAVA_LIVEKEY_BENCH_KEYS keys (JAVA_LIVEKEY_BENCH_KEYS)"
    java "${libpath[@]}" -cp "$jar:$work/classes" LiveKeyJavaBench "$work/bench" "$JAVA_LIVEKEY_BENCH_KEYS" |
      tee "$work/livekey-bench.log"
  fi
  trap - ERR
  log "rocksdb-java $ver: PASSED (build ${t}s; log $work/java-check.log)"
}

# ---- rocksdb-source: the in-tree plugin on a RocksDB source tree ----
# The RocksDB releases verified end to end (docs/VERIFIED_RELEASES.md);
# others are refused. The version guards in the code name what
# differs between them (ROCKSDB_MAJOR/ROCKSDB_MINOR, beside the code).
ROCKSDB_SOURCE_VERSIONS="8.10.2 9.10.0 10.10.1 11.8.1"

# "<passed> passed of <total>, <skipped> skipped" from a gtest log.
gtest_counts() {
  awk '/^\[==========\] [0-9]+ tests? from .* ran/ {t=$2}
       /^\[  PASSED  \] [0-9]+ test/ {p=$4}
       /^\[  SKIPPED \] [0-9]+ test/ {k=$4}
       END {printf "%d passed of %d, %d skipped\n", p, t, k}' "$1"
}

# An OPTIONS file for RocksDB $2 naming our filter policy and memtable rep,
# with small memtables and files ($3 bytes each, levels of 4x that) so that
# short runs flush and compact.
dlcbf_options_file() {
  cat >"$1" <<OPT
[Version]
  rocksdb_version=$2
  options_file_version=1.1
[DBOptions]
  create_if_missing=true
  create_missing_column_families=true
[CFOptions "default"]
  write_buffer_size=$3
  target_file_size_base=$3
  max_bytes_for_level_base=$(( 4 * $3 ))
  memtable_factory=dlcbf_index
[TableOptions/BlockBasedTable "default"]
  filter_policy=dlcbf:10
OPT
}

# db_stress on the in-tree build, with an OPTIONS file that names our
# filter policy and memtable rep, until $2 seconds have passed: runs of
# 4 threads with reopens, flushes, compactions, deletes, single deletes and
# range deletes, each verified against the expected state kept across runs.
# Prints one line per run and a total; fails on any verification failure.
db_stress_runs() {
  local db_stress="$1" seconds="$2" ver="$3" dir="$4"
  rm -rf "$dir"; mkdir -p "$dir/exp"
  dlcbf_options_file "$dir/OPTIONS-dlcbf" "$ver" 262144
  local t0 run=0 ops=0 useful=0 found=0 reads=0 destroy=1 out extra=()
  # 10.x runs remote compactions in 2 threads by default, which db_stress
  # refuses with the WAL on; older releases do not know the flag.
  local flags; flags="$("$db_stress" --helpfull 2>&1 || true)"  # (--helpfull exits 1)
  if grep -q -- '-remote_compaction_worker_threads' <<<"$flags"; then
    extra+=(--remote_compaction_worker_threads=0)
  fi
  # Fault injection off, flag by flag where this db_stress has it (8.10
  # has no metadata_*_fault_one_in).
  local fault
  for fault in read_fault_one_in metadata_read_fault_one_in metadata_write_fault_one_in; do
    if grep -q -- "-$fault " <<<"$flags"; then extra+=("--$fault=0"); fi
  done
  t0="$(date -u +%s)"
  while [ $(( $(date -u +%s) - t0 )) -lt "$seconds" ]; do
    run=$((run + 1))
    out="$dir/run-$run.log"
    # (fault injection off: db_stress refuses it in release builds; the
    # column family is not cleared: that is incompatible with keeping the
    # expected state across runs; one --seed for every run: it picks the
    # keys that are never overwritten, the only ones db_stress SingleDeletes,
    # and another seed would mix SingleDelete and Delete on one key, which
    # RocksDB reports as Corruption)
    if ! "$db_stress" --options_file="$dir/OPTIONS-dlcbf" --db="$dir/db" \
          --expected_values_dir="$dir/exp" --destroy_db_initially=$destroy \
          --column_families=1 --clear_column_family_one_in=0 \
          --threads=4 --max_key=50000 --ops_per_thread=100000 --reopen=4 \
          --readpercent=40 --prefixpercent=0 --writepercent=30 --delpercent=10 \
          --delrangepercent=5 --iterpercent=15 --use_multiget=1 --flush_one_in=2000 \
          --compact_range_one_in=20000 --statistics=1 --seed=1729 "${extra[@]}" >"$out" 2>&1; then
      tail -n 30 "$out" >&2
      echo "db_stress run $run FAILED (log: $out)" >&2
      return 1
    fi
    grep -q "Verification successful" "$out" || { tail -n 30 "$out" >&2; echo "db_stress run $run: no successful verification" >&2; return 1; }
    grep -Eq "Got errors 0 times" "$out" || { grep -E "Got errors" "$out" >&2; return 1; }
    local u r f
    u="$(awk '/^rocksdb.bloom.filter.useful COUNT/ {print $4}' "$out")"
    read -r r f < <(sed -n 's/.*: \([0-9]*\) read and \([0-9]*\) found the key.*/\1 \2/p' "$out" | tail -n 1)
    ops=$((ops + 4 * 100000)); useful=$((useful + ${u:-0})); reads=$((reads + ${r:-0})); found=$((found + ${f:-0}))
    echo "db_stress run $run: verification successful, 0 errors, $(( $(date -u +%s) - t0 ))s elapsed, filter useful ${u:-0}, ${r:-0} reads (${f:-0} found)"
    destroy=0
  done
  [ "$useful" -gt 0 ] || { echo "db_stress: rocksdb.bloom.filter.useful stayed 0: the dlcbf filter was not used" >&2; return 1; }
  DB_STRESS_SUMMARY="db_stress: $run runs, $(( ($(date -u +%s) - t0) / 60 )) min, $ops ops (4 threads x 100000 per run), 0 verification failures, filter useful $useful, $reads reads ($found found)"
  echo "$DB_STRESS_SUMMARY"
}

rocksdb_source() {
  local src="${1:-}" t0 t
  [ -n "$src" ] || { echo "usage: tools/run.sh rocksdb-source <rocksdb-source-dir>" >&2; return 2; }
  src="$(cd "$src" 2>/dev/null && pwd)" || { echo "error: $1: no such directory" >&2; return 2; }
  if [ ! -f "$src/include/rocksdb/version.h" ]; then
    echo "error: $src is not a RocksDB source tree (no include/rocksdb/version.h)" >&2
    return 2
  fi
  local ver major
  ver="$(rocksdb_tree_version "$src")"
  major="${ver%%.*}"
  if ! printf ' %s ' $ROCKSDB_SOURCE_VERSIONS | grep -q " $ver "; then
    echo "error: RocksDB $ver in $src has not been verified with rocksdb-source; verified releases: $ROCKSDB_SOURCE_VERSIONS" >&2
    echo "       (Debian's packaged 7.8.3 is the other supported build: tools/run.sh test)" >&2
    return 2
  fi
  local gccmaj; gccmaj="$(g++ -dumpversion | cut -d. -f1)"
  if [ "$major" -ge 10 ] && [ "$gccmaj" -lt 11 ]; then
    echo "error: RocksDB $major.x needs C++20 (g++ >= 11); g++ is $gccmaj" >&2; return 2
  fi
  local rbuild="${ROCKSDB_BUILD_DIR:-$src/build}"
  local ourbuild="${INTREE_BUILD_DIR:-build-rocksdb-$ver}"
  local work="${ROCKSDB_SOURCE_WORK:-$here/$ourbuild/rocksdb-source-run}"
  local NUM="${DB_BENCH_NUM:-100000}"
  local stress_seconds="${DB_STRESS_SECONDS:-600}"
  local crash_seconds="${CRASHTEST_SECONDS:-0}"
  local started; started="$(date -u +%s)"
  step() { log "[rocksdb-source $ver] $*"; }
  # Each failing step stops the run with its name.
  trap 'echo "rocksdb-source: FAILED at: $current_step" >&2' ERR
  local current_step

  current_step="1/9 plugin directory"
  step "$current_step: $src/plugin/dlcbf (dlcbf.mk, CMakeLists.txt, dlcbf_repo -> $here)"
  install_plugin_dir "$src"

  current_step="2/9 RocksDB build (librocksdb.so, db_bench, db_stress; ROCKSDB_PLUGINS=dlcbf)"
  install_packages ccache python3
  step "$current_step into $rbuild, $JOBS jobs, ccache (log: $rbuild/dlcbf-build.log)"
  mkdir -p "$rbuild"
  t0="$(date -u +%s)"
  cmake -S "$src" -B "$rbuild" -DCMAKE_BUILD_TYPE=Release -DPORTABLE=1 -DROCKSDB_PLUGINS=dlcbf \
        -DWITH_TESTS=OFF -DWITH_TOOLS=ON -DWITH_CORE_TOOLS=OFF -DWITH_BENCHMARK_TOOLS=ON \
        -DWITH_GFLAGS=ON -DWITH_SNAPPY=ON -DFAIL_ON_WARNINGS=OFF \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
        >"$rbuild/dlcbf-configure.log" 2>&1 ||
    { tail -n 30 "$rbuild/dlcbf-configure.log" >&2; false; }
  cmake --build "$rbuild" -j "$JOBS" --target rocksdb-shared db_bench db_stress >"$rbuild/dlcbf-build.log" 2>&1 ||
    { grep -E "error|Error" "$rbuild/dlcbf-build.log" | head -n 30 >&2; false; }
  t=$(( $(date -u +%s) - t0 ))
  echo "built $(ls "$rbuild"/librocksdb.so.* | head -n 1), $rbuild/db_bench and $rbuild/db_stress_tool/db_stress in ${t}s"
  # (no `nm | grep -q`: with pipefail, grep's early exit fails nm by SIGPIPE)
  [ "$(nm -D --defined-only "$rbuild/librocksdb.so" | grep -c ' dlcbf_register_all$')" -ge 1 ] ||
    { echo "librocksdb.so does not define dlcbf_register_all: the plugin was not built in" >&2; false; }
  local summary=("RocksDB build (librocksdb.so, db_bench, db_stress): ${t}s")

  current_step="3/9 our tests, in-tree mode (RocksDB $ver headers, DLCBF_ROCKSDB_IN_TREE)"
  step "$current_step into $ourbuild"
  cmake -S . -B "$ourbuild" -DCMAKE_BUILD_TYPE=Release -DDLCBF_ROCKSDB_SOURCE_DIR="$src" \
        -DDLCBF_ROCKSDB_BUILD_DIR="$rbuild" -DDLCBF_BUILD_BENCHMARKS=OFF >/dev/null
  local suites=(filter_policy_test memtable_index_test live_key_db_test live_key_db_oracle_test
                live_key_db_workload_test live_key_db_closed_world_test live_key_db_transactions_test
                live_key_db_seek_test hostile_config_test)
  cmake --build "$ourbuild" -j "$JOBS" --target "${suites[@]}" crash_test sst_compat livekey_stress

  current_step="4/9 RocksDB-facing suites against librocksdb $ver"
  step "$current_step"
  local s
  for s in "${suites[@]}"; do
    if ! "$ourbuild/tests/$s" --gtest_brief=1 >"$ourbuild/$s.log" 2>&1; then
      tail -n 40 "$ourbuild/$s.log" >&2; false
    fi
    summary+=("$s: $(gtest_counts "$ourbuild/$s.log")")
    echo "${summary[-1]}"
  done
  (cd "$ourbuild" && ctest --output-on-failure -R '^crash_test_(short|negative_control)$|^sst_fixture_|^live_key_db_surface_test$') |
    tee "$ourbuild/ctest-crash-fixtures.log" | tail -n 12
  summary+=("ctest crash_test_short + crash_test_negative_control + SST fixtures (every committed tests/data/*.sst read by $ver) + live_key_db_surface_test ($ver headers): $(grep -o '[0-9]*% tests passed.*' "$ourbuild/ctest-crash-fixtures.log")")
  # LiveKeyDB's differential stress, its foreign mix included, against
  # this librocksdb.so (the short CI mode; its hooks are absent here)
  rm -rf "$ourbuild/livekey-stress"
  "$ourbuild/tools/livekey_stress" --seed=20261127 --duration="${LIVEKEY_STRESS_SECONDS:-45}" --crash \
      --db="$ourbuild/livekey-stress" >"$ourbuild/livekey_stress.log" 2>&1 ||
    { tail -n 30 "$ourbuild/livekey_stress.log" >&2; false; }
  summary+=("livekey_stress --crash, ${LIVEKEY_STRESS_SECONDS:-45}s: $(grep -E '^livekey_stress: seed=[0-9]+ rounds=' "$ourbuild/livekey_stress.log" | tail -n 1 |
      grep -oE '\b(rounds|ops|kills|txn_commits|foreign_puts|foreign_ingests|at_seqno_0|delete_files|opens_hash_memtable|opens_avoid_flush_during_recovery|lost)=[0-9]+' | tr '\n' ' ')$(tail -n 1 "$ourbuild/livekey_stress.log")")
  echo "${summary[-1]}"

  current_step="5/9 RocksDB $ver db_bench with filter_policy=dlcbf:10, memtable_factory=dlcbf_index"
  step "$current_step"
  rm -rf "$work"; mkdir -p "$work"
  dlcbf_options_file "$work/OPTIONS-dlcbf" "$ver" 1048576
  local bench=("$rbuild/db_bench" --db="$work/db" --options_file="$work/OPTIONS-dlcbf"
               --benchmarks=filluniquerandom,readrandom --num="$NUM" --reads="$NUM"
               --value_size=100 --statistics --threads=1 --seed=1)
  echo "\$ ${bench[*]}"
  "${bench[@]}" >"$work/db_bench.log" 2>&1 || { tail -n 30 "$work/db_bench.log" >&2; false; }
  grep -E '^(filluniquerandom|readrandom) ' "$work/db_bench.log"
  local useful pos tpos
  useful="$(awk '/^rocksdb.bloom.filter.useful COUNT/ {print $4}' "$work/db_bench.log")"
  pos="$(awk '/^rocksdb.bloom.filter.full.positive COUNT/ {print $4}' "$work/db_bench.log")"
  tpos="$(awk '/^rocksdb.bloom.filter.full.true.positive COUNT/ {print $4}' "$work/db_bench.log")"
  grep -E '^rocksdb.bloom.filter.(useful|full.positive|full.true.positive) COUNT' "$work/db_bench.log"
  echo "SST filter end-to-end FPR = (full.positive - true.positive) / (that + useful) = $(awk -v p="$pos" -v t="$tpos" -v u="$useful" 'BEGIN{fp=p-t; if (fp+u>0) printf "%.4f", fp/(fp+u); else print "n/a"}')"
  local opts_written; opts_written="$(ls -t "$work"/db/OPTIONS-* | head -n 1)"
  echo "the DB's own $(basename "$opts_written"): $(grep -E '^ *(filter_policy|memtable_factory)=' "$opts_written" | tr -s ' \n' ' ')"
  [ "${useful:-0}" -gt 0 ] || { echo "rocksdb.bloom.filter.useful is 0: the dlcbf filter was not used" >&2; false; }
  grep -Eq "\( ?$NUM of $NUM found\)" "$work/db_bench.log" ||
    { echo "readrandom did not find $NUM of $NUM keys" >&2; false; }
  grep -Eq '^ *filter_policy=dlcbf' "$opts_written" && grep -Eq '^ *memtable_factory=dlcbf_index' "$opts_written" ||
    { echo "the DB did not run with dlcbf:10 + dlcbf_index (see $opts_written)" >&2; false; }
  summary+=("db_bench: $(grep -Eo '\( ?[0-9]+ of [0-9]+ found\)' "$work/db_bench.log"), filter useful=$useful")

  current_step="6/9 RocksDB $ver db_stress with dlcbf:10 + dlcbf_index, ${stress_seconds}s"
  step "$current_step"
  DB_STRESS_SUMMARY=""
  db_stress_runs "$rbuild/db_stress_tool/db_stress" "$stress_seconds" "$ver" "$work/stress"
  summary+=("$DB_STRESS_SUMMARY")

  current_step="7/9 RocksDB $ver blackbox crash test (db_crashtest.py), ${crash_seconds}s"
  if [ "$crash_seconds" -gt 0 ]; then
    step "$current_step"
    local cdir="$work/crash"
    rm -rf "$cdir"; mkdir -p "$cdir"
    cp "$work/stress/OPTIONS-dlcbf" "$cdir/OPTIONS-dlcbf"
    # (and, where this db_stress knows them: no remote compaction, which
    # needs the WAL off; no custom compression manager, which needs table
    # format_version 7 while the OPTIONS file keeps the release's default)
    local crash_extra=() flags
    flags="$("$rbuild/db_stress_tool/db_stress" --helpfull 2>&1 || true)"  # (--helpfull exits 1)
    if grep -q -- '-remote_compaction_worker_threads' <<<"$flags"; then
      crash_extra+=(--remote_compaction_worker_threads=0)
    fi
    if grep -q -- '-compression_manager' <<<"$flags"; then
      crash_extra+=(--compression_manager=none)
    fi
    # Fault injection off, flag by flag where this db_stress has it (8.10
    # lacks the metadata_* and open_* ones).
    local fault
    for fault in read_fault_one_in metadata_read_fault_one_in metadata_write_fault_one_in \
                 write_fault_one_in open_metadata_write_fault_one_in open_write_fault_one_in \
                 open_read_fault_one_in open_metadata_read_fault_one_in sync_fault_injection; do
      if grep -q -- "-$fault " <<<"$flags"; then crash_extra+=("--$fault=0"); fi
    done
    # db_crashtest.py kills db_stress every --interval seconds and
    # restarts it; every restart verifies the DB against the expected state.
    # Its random parameters are overridden where they conflict with an
    # OPTIONS file: with --options_file, db_stress (9.10, 10.10) installs no
    # compaction filter factory and no merge operator (it does so only when
    # it builds the options from its flags), so --enable_compaction_filter=1
    # dereferences a null factory in StressTest::FinishInitDb (SIGSEGV) and
    # merges have no operator. Compression: the build has Snappy only
    # (WITH_SNAPPY), and a random LZ4 or ZSTD choice fails the Open.
    (cd "$src" && TEST_TMPDIR="$cdir" python3 tools/db_crashtest.py blackbox \
        --stress_cmd="$rbuild/db_stress_tool/db_stress" --duration="$crash_seconds" --interval=30 \
        --options_file="$cdir/OPTIONS-dlcbf" --column_families=1 --clear_column_family_one_in=0 \
        --disable_wal=0 --test_batches_snapshots=0 --enable_compaction_filter=0 --use_merge=0 \
        --use_full_merge_v1=0 --compression_type=snappy --bottommost_compression_type=disable \
        --wal_compression=none "${crash_extra[@]}") >"$cdir/crashtest.log" 2>&1 ||
      { tail -n 40 "$cdir/crashtest.log" >&2; false; }
    local iters; iters="$(grep -c 'Running db_stress with pid' "$cdir/crashtest.log" || true)"
    summary+=("db_crashtest.py blackbox: ${crash_seconds}s, $iters db_stress runs (killed and restarted; each restart verifies), passed")
    echo "${summary[-1]}"
  else
    step "$current_step: SKIPPED (CRASHTEST_SECONDS=0)"
  fi

  current_step="8/9 cross-version SST format (Debian 7.8.3 build <-> RocksDB $ver build)"
  step "$current_step"
  install_packages
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS" --target sst_compat >/dev/null
  local deb="$here/$BUILD_DIR/tools/sst_compat" cur="$here/$ourbuild/tools/sst_compat"
  "$deb" write "$work/by-debian-7.8.3.sst" 4000
  "$cur" verify "$work/by-debian-7.8.3.sst" 4000
  "$cur" write "$work/by-rocksdb-$ver.sst" 4000
  "$deb" verify "$work/by-rocksdb-$ver.sst" 4000
  summary+=("cross-version: 7.8.3 -> $ver and $ver -> 7.8.3 verified (zero false negatives, filter used); the committed fixtures: step 4")
  if [ "${SAVE_FIXTURE:-0}" = 1 ]; then
    # sst_compat writes dlcbf:10, whose default block is format version 3
    cp "$work/by-rocksdb-$ver.sst" "$here/tests/data/dlcbf_v3_rocksdb_$ver.sst"
    echo "saved tests/data/dlcbf_v3_rocksdb_$ver.sst (SAVE_FIXTURE=1)"
  fi

  current_step="9/9 summary"
  step "summary (RocksDB $ver, $src, $(( $(date -u +%s) - started ))s in all)"
  printf '  %s\n' "${summary[@]}"
  trap - ERR
}

cmd="${1:-}"
shift || true
case "$cmd" in
  build)
    install_packages
    build
    ;;
  test)
    install_packages
    build
    log "running tests (ctest)"
    run_ctest "$BUILD_DIR" ctest --output-on-failure -j "$JOBS" "$@"
    if [ "${DLCBF_CI_ASAN:-1}" != 0 ]; then asan_suite "$@"; else log "DLCBF_CI_ASAN=0: ASan/UBSan suite SKIPPED"; fi
    if [ "${DLCBF_CI_TSAN:-1}" != 0 ]; then tsan_suite "$@"; else log "DLCBF_CI_TSAN=0: TSan suite SKIPPED"; fi
    # 15 s per fuzzer here (CI's 30-minute budget); `tools/run.sh fuzz` runs 600 s each.
    if [ "${DLCBF_CI_FUZZ:-1}" != 0 ]; then fuzz_build; fuzz_run "${FUZZ_SECONDS:-15}"; else log "DLCBF_CI_FUZZ=0: fuzz runs SKIPPED"; fi
    ;;
  asan)
    install_packages
    asan_suite "$@"
    ;;
  tsan)
    install_packages
    tsan_suite "$@"
    ;;
  fuzz)
    fuzz_build
    fuzz_run "${FUZZ_SECONDS:-600}"
    ;;
  crash)
    install_packages
    build
    log "crash-recovery test: ${CRASH_CYCLES:-60} SIGKILL/reopen cycles"
    "$BUILD_DIR/tools/crash_test" --cycles="${CRASH_CYCLES:-60}" "$@"
    ;;
  demo)
    install_packages gnuplot-nox
    build
    log "demo: dlCBF paper reproduction (Bonomi et al. 2006, §5.1 Table 1 and §5.2), short"
    "$BUILD_DIR/tools/dlcbf_sim" --trials=8
    # args go to compare, e.g. `tools/run.sh demo --scale` (see db_bench_ext/compare --help)
    log "demo: no filter vs bloom/ribbon/dlcbf in stock db_bench (db_bench_ext/compare)"
    DLCBF_PLUGIN="$BUILD_DIR/libdlcbf_plugin.so" \
      python3 db_bench_ext/compare --out="$BUILD_DIR/compare-demo" "$@"
    log "demo: LiveKeyDB vs plain RocksDB (bloomfilter:10) on a deep LSM (tools/bench/live_key_bench, short:"
    log "      200k keys; per workload the median of 3 repetitions, with the fastest and slowest)"
    # A goal the bench misses is a measured figure of this run, not a
    # failure of the demo (live_key_bench exits nonzero only for wrong
    # answers): its PASS/FAIL read "met"/"missed" here.
    "$BUILD_DIR/tools/bench/live_key_bench" --db_dir="$BUILD_DIR/live-key-demo" --num_keys=200000 \
      --deleted_keys=20000 --reads=50000 --writes=10000 --repeats=3 --write_repeats=3 \
      | grep -v ' stats: \|^  cf ' \
      | sed -e '/ goal /{s/\bFAIL\b/missed/g;s/\bPASS\b/met/g}' \
            -e 's/^live_key_bench GOALS NOT MET/live_key_bench: some goals missed, each a measured shortfall above/' \
      | tee "$BUILD_DIR/live-key-demo.txt"
    log "demo: LiveKeyDB's iterators vs plain RocksDB: Seeks into deleted prefixes and a consumed queue"
    log "      (tools/bench/live_key_seek_bench, short: 20k-key prefix, 200k-key queue; medians of 3)"
    "$BUILD_DIR/tools/bench/live_key_seek_bench" --db_dir="$BUILD_DIR/live-key-seek-demo" --prefix_keys=20000 \
      --queue_keys=200000 --scan_keys=20000 --write_keys=30000 --seeks=50 --queue_seeks=3 --repeats=3 --scan_repeats=5 \
      | sed -e '/ goal /{s/\bFAIL\b/missed/g;s/\bPASS\b/met/g}' \
      | tee "$BUILD_DIR/live-key-seek-demo.txt"
    log "demo: what you just saw"
    python3 - "$BUILD_DIR/compare-demo/results.csv" "$BUILD_DIR/live-key-demo.txt" \
      "$BUILD_DIR/live-key-seek-demo.txt" <<'PY' | fold -s -w 78
import csv, os, re, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]))) if os.path.exists(sys.argv[1]) else []
def med(cfg, wl, field):
    xs = [float(r[field]) for r in rows if r["config"] == cfg and r["workload"] == wl and r.get(field)]
    return statistics.median(xs) if xs else None
def pct(x):
    return f"{100 * x:.2f} %"
out = []
fb, fd = med("bloom:10", "readmissing", "fpr"), med("dlcbf:10", "readmissing", "fpr")
bb, bd = med("bloom:10", "load", "filter_bits_per_key"), med("dlcbf:10", "load", "filter_bits_per_key")
io_b, io_d = med("bloom:10", "readmissing-io", "ops_per_sec"), med("dlcbf:10", "readmissing-io", "ops_per_sec")
mb, md = med("bloom:10", "readmissing", "ops_per_sec"), med("dlcbf:10", "readmissing", "ops_per_sec")
fr = med("ribbon=dlcbfBits", "readmissing", "fpr")
if None not in (fb, fd, bb, bd):
    s = (f"In stock db_bench the SST filter dlcbf:10 let {pct(fd)} of missing keys through to a "
         f"data-block read, against {pct(fb)} for RocksDB's bloomfilter:10 in about the same "
         f"memory ({bd:.1f} and {bb:.1f} bits per key)")
    if io_b and io_d:
        s += f", so missing-key Gets that read from disk ran {io_d / io_b:.2f}x Bloom's speed"
    loses = []
    if fr is not None and fr < fd:
        loses.append(f"RocksDB's Ribbon filter in the same memory let through only {pct(fr)}")
    if mb and md and md < mb:
        loses.append(f"with the data in memory dlcbf:10's costlier probe made its missing-key "
                     f"Gets {md / mb:.2f}x Bloom's speed")
    if loses:
        s += "; where it loses, " + ", and ".join(loses)
    out.append(s + ".")
mi = [r["config"] for r in rows if r["workload"] == "mem-miss" and "+" in r["config"]]
if mi:
    a, b = med(mi[0], "mem-miss", "ops_per_sec"), med("dlcbf:10", "mem-miss", "ops_per_sec")
    if a and b:
        out.append(f"The dlcbf_index memtable answered missing keys {a / b:.1f}x as fast as the "
                   f"plain skiplist ({a / 1e3:,.0f}k against {b / 1e3:,.0f}k Gets/s).")
goals = {}
for line in open(sys.argv[2]) if os.path.exists(sys.argv[2]) else []:
    m = re.match(r"live_key_bench goal (\S+)\s+livekey ([\d.]+)x bloom10 \((?:[a-z]+, )?goal ([^)]*)\) (met|missed)", line)
    if m:
        goals[m.group(1)] = (m.group(2), m.group(3), m.group(4))
if "missing" in goals and "deleted" in goals:
    s = (f"LiveKeyDB answered Gets of missing keys {float(goals['missing'][0]):.1f}x and of deleted "
         f"keys {float(goals['deleted'][0]):.1f}x as fast as a plain RocksDB")
    if "new_puts" in goals:
        s += f", and paid on writes: a new-key Put cost {float(goals['new_puts'][0]):.2f}x a plain one"
    out.append(s + ".")
    what = {"missing": "missing-key Gets", "deleted": "deleted-key Gets", "new_puts": "new-key Put",
            "overwrites": "overwrite", "deletes": "Delete", "zipf_1t": "hot-key Put, 1 writer",
            "zipf_4t": "hot-key Put, 4 writers"}
    missed = [f"{what.get(k, k)} {x}x (goal {g})" for k, (x, g, v) in goals.items() if v == "missed"]
    if missed:
        out.append("Goals this short run missed, each a measured shortfall and not an error of the "
                   "demo: " + ", ".join(missed) + ".")
seek = {}
for line in open(sys.argv[3]) if os.path.exists(sys.argv[3]) else []:
    m = re.match(r"live_key_seek_bench goal (\S+)\s+livekey ([\d.]+)x \S+ \((?:[a-z]+, )?goal ([^)]*)\) (met|missed)", line)
    if m:
        seek[m.group(1)] = (float(m.group(2)), m.group(3), m.group(4))
if "prefix_dead" in seek and "queue_99" in seek:
    s = (f"LiveKeyDB's iterators answered a Seek into a prefix whose keys were all deleted "
         f"{seek['prefix_dead'][0]:,.0f}x as fast as a plain RocksDB, and moved a queue consumer's "
         f"Seek to its head past the consumed 99 % {seek['queue_99'][0]:,.0f}x as fast")
    if "scan" in seek and "writes" in seek:
        s += (f"; without deletes a Seek with 10 Nexts cost {seek['scan'][0]:.2f}x a plain one, and "
              f"the counts made Puts cost {seek['writes'][0]:.2f}x")
    out.append(s + ".")
    missed = [f"{k} {x:.3f}x (goal {g})" for k, (x, g, v) in seek.items() if v == "missed"]
    if missed:
        out.append("Seek goals this short run missed, each a measured shortfall: " + ", ".join(missed) + ".")
if not out:
    out.append("No figures to summarize: see the output above.")
print("\n".join(out))
print("These are one short run on this machine; the measured figures with their machines, "
      "dates and commands are in docs/BENCHMARKS.md.")
PY
    ;;
  rocksdb-source)
    rocksdb_source "$@"
    ;;
  rocksdb-java)
    rocksdb_java "$@"
    ;;
  *)
    echo "usage: tools/run.sh {demo|test|build|asan|tsan|fuzz|crash|rocksdb-source <dir>|rocksdb-java <dir>} [args...]" >&2
    exit 2
    ;;
esac
