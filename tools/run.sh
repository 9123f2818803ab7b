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
SANITIZER_CTEST_EXCLUDE='db_bench'
# Concurrency suites for TSan (ctest -R, matched against Suite.Test names):
# dlCBF thread-safe mode and its long relocation chains, CBF readers/writer,
# elastic filter migration, filter block readers, memtable index (writers,
# readers, reclaim), LiveKeyDB's concurrent / linearizability oracle, and
# the memtable-index oracle tests (RocksDB flushes run beside the writer).
TSAN_TESTS='Concurrency|Concurrent|Oracle|Linearizab|Stress|Reclaim'
# ... except DLeftGeometryTest.OracleMultiset: one thread, no RocksDB, so
# TSan has nothing to check, and it is the slowest test under TSan (~5 min
# of CPU for its six geometries).
TSAN_EXCLUDE='^Geometries/DLeftGeometryTest\.'
FUZZERS=(fuzz_filter_block_reader fuzz_deserialize fuzz_ops fuzz_option_strings)

asan_suite() {
  log "ASan+UBSan build into $ASAN_BUILD_DIR"
  cmake -S . -B "$ASAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLCBF_SANITIZE=address \
        -DDLCBF_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$ASAN_BUILD_DIR" -j "$JOBS"
  log "running tests under ASan+UBSan (not the db_bench tests: stock db_bench cannot preload an ASan plugin; they ran in the Release suite)"
  (cd "$ASAN_BUILD_DIR" &&
   DLCBF_TEST_SCALE="${DLCBF_TEST_SCALE:-0.25}" \
   ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}" \
   UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
   ctest --output-on-failure -j "$JOBS" -E "$SANITIZER_CTEST_EXCLUDE" "$@")
}

tsan_suite() {
  log "TSan build into $TSAN_BUILD_DIR"
  cmake -S . -B "$TSAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLCBF_SANITIZE=thread \
        -DDLCBF_BUILD_BENCHMARKS=OFF -DDLCBF_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$TSAN_BUILD_DIR" -j "$JOBS"
  # The TSan build links the shared librocksdb (not instrumented), whose own
  # accesses are ignored (ignore_noninstrumented_modules=1; see the top-level
  # CMakeLists.txt). Suppressions name frames inside librocksdb only.
  local supp="$here/tests/memtable_index_tsan.supp"
  local opts="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$supp}"
  log "running the concurrency tests under TSan (-R '$TSAN_TESTS', LiveKeyDB apart)"
  (cd "$TSAN_BUILD_DIR" &&
   DLCBF_TEST_SCALE="${DLCBF_TEST_SCALE:-0.25}" TSAN_OPTIONS="$opts" \
   ctest --output-on-failure -j "$JOBS" -R "$TSAN_TESTS" -E "$SANITIZER_CTEST_EXCLUDE|$TSAN_EXCLUDE|^LiveKeyDB" "$@")
  # LiveKeyDB's rebuild holds all its stripe mutexes at once (LockAll), more
  # than the 64 locks per thread TSan's deadlock detector can track (it
  # aborts with "CHECK failed: sanitizer_deadlock_detector.h:67"), so its
  # tests run with detect_deadlocks=0: data races are still reported, lock
  # order inversions are not.
  log "running LiveKeyDB's concurrency tests under TSan (detect_deadlocks=0)"
  (cd "$TSAN_BUILD_DIR" &&
   DLCBF_TEST_SCALE="${DLCBF_TEST_SCALE:-0.25}" TSAN_OPTIONS="$opts:detect_deadlocks=0" \
   ctest --output-on-failure -j "$JOBS" -R "^LiveKeyDB.*($TSAN_TESTS)" -E "$SANITIZER_CTEST_EXCLUDE" "$@")
}

fuzz_build() {
  install_packages clang libclang-rt-14-dev
  log "libFuzzer build (clang, ASan+UBSan) into $FUZZ_BUILD_DIR"
  CC=clang CXX=clang++ cmake -S . -B "$FUZZ_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
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
    (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" "$@")
    if [ "${DLCBF_CI_ASAN:-1}" != 0 ]; then asan_suite "$@"; else log "DLCBF_CI_ASAN=0: ASan/UBSan suite SKIPPED"; fi
    if [ "${DLCBF_CI_TSAN:-1}" != 0 ]; then tsan_suite "$@"; else log "DLCBF_CI_TSAN=0: TSan suite SKIPPED"; fi
    if [ "${DLCBF_CI_FUZZ:-1}" != 0 ]; then fuzz_build; fuzz_run "${FUZZ_SECONDS:-30}"; else log "DLCBF_CI_FUZZ=0: fuzz runs SKIPPED"; fi
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
    ;;
  *)
    echo "usage: tools/run.sh {demo|test|build|asan|tsan|fuzz|crash} [args...]" >&2
    exit 2
    ;;
esac
