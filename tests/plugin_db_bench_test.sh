#!/bin/sh
# Checks that libdlcbf_plugin.so registers the dlcbf filter policy when it
# is preloaded into a stock RocksDB tool: db_bench builds SSTs with
# filter_policy=dlcbf:10 from an OPTIONS file, the filter says "no" to
# absent keys (rocksdb.bloom.filter.useful > 0) and sst_dump shows the
# policy name. Exit 77 (skipped) when db_bench/sst_dump are not installed.
# Usage: plugin_db_bench_test.sh <path to libdlcbf_plugin.so>
set -eu
PLUGIN=$1
DB_BENCH=$(command -v db_bench || true)
SST_DUMP=$(command -v sst_dump || true)
if [ -z "$DB_BENCH" ] || [ -z "$SST_DUMP" ]; then
  echo "SKIP: db_bench/sst_dump not installed (package rocksdb-tools)"
  exit 77
fi
DIR=$(mktemp -d "${TMPDIR:-/tmp}/dlcbf_plugin_XXXXXX")
trap 'rm -rf "$DIR"' EXIT
cat > "$DIR/OPTIONS" <<'OPT'
[Version]
  rocksdb_version=7.8.3
  options_file_version=1.1
[DBOptions]
  create_if_missing=true
[CFOptions "default"]
  write_buffer_size=1048576
[TableOptions/BlockBasedTable "default"]
  filter_policy=dlcbf:10
OPT
LD_PRELOAD="$PLUGIN" "$DB_BENCH" --options_file="$DIR/OPTIONS" --db="$DIR/db" \
  --benchmarks=fillrandom,readrandom --num=20000 --reads=20000 --statistics \
  > "$DIR/out.txt" 2>&1 || { cat "$DIR/out.txt"; exit 1; }
USEFUL=$(sed -n 's/^rocksdb.bloom.filter.useful COUNT : //p' "$DIR/out.txt")
echo "rocksdb.bloom.filter.useful = ${USEFUL:-missing}"
[ -n "$USEFUL" ] && [ "$USEFUL" -gt 0 ] || { echo "FAIL: filter never used"; exit 1; }
grep -q "filter_policy=dlcbf:10" "$DIR"/db/OPTIONS-* || { echo "FAIL: OPTIONS file lacks dlcbf:10"; exit 1; }
"$SST_DUMP" --file="$DIR/db" --show_properties 2>/dev/null | grep -q "filter policy name: dlcbf" \
  || { echo "FAIL: sst_dump does not show the dlcbf policy"; exit 1; }
echo "PASS"
