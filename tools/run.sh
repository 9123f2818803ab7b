#!/usr/bin/env bash
# tools/run.sh — the one entry point for building, testing and demoing.
#
#   tools/run.sh demo    install missing packages, build (Release), run the demo
#   tools/run.sh test    install missing packages, build (Release), run ctest
#   tools/run.sh build   install missing packages and build only
#
# Environment:
#   BUILD_DIR   build directory (default: build)
#   JOBS        parallel build jobs (default: nproc)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc)}"

log() { printf '\n== %s\n' "$*"; }

# Debian packages the project needs. Each entry: "<package>".
PACKAGES=(librocksdb-dev rocksdb-tools libgtest-dev libgmock-dev libgflags-dev
          libsnappy-dev libxxhash-dev libbenchmark-dev cmake g++ make pkg-config)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing Debian packages: ${missing[*]}"
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
}

build() {
  log "configuring into $BUILD_DIR (Release)"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  log "building with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS"
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
    echo "usage: tools/run.sh {demo|test|build} [args...]" >&2
    exit 2
    ;;
esac
