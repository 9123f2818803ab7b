#!/bin/sh
# Checks that libdlcbf_plugin.so registers the dlcbf_index memtable rep
# factory when preloaded into stock db_bench (-memtablerep=<id>, which
# db_bench hands to MemTableRepFactory::CreateFromString):
#   - the run uses it (Memtablerep line, OPTIONS file memtable_factory=),
#     the index skips searches (LOG line written when the memtable flushes);
#   - a bad parameter is refused with InvalidArgument naming the field;
#   - without the plugin the id is refused (no silent fallback).
# Exit 77 (skipped) when db_bench is not installed.
# Usage: memtable_index_db_bench_test.sh <path to libdlcbf_plugin.so>
set -eu
PLUGIN=$1
DB_BENCH=$(command -v db_bench || true)
if [ -z "$DB_BENCH" ]; then
  echo "SKIP: db_bench not installed (package rocksdb-tools)"
  exit 77
fi
DIR=$(mktemp -d "${TMPDIR:-/tmp}/dlcbf_memtable_XXXXXX")
trap 'rm -rf "$DIR"' EXIT

LD_PRELOAD="$PLUGIN" "$DB_BENCH" -memtablerep=dlcbf_index:50000 --db="$DIR/db" \
  --benchmarks=fillrandom,readrandom,readmissing,flush --num=20000 --reads=20000 \
  --write_buffer_size=67108864 > "$DIR/out.txt" 2>&1 || { cat "$DIR/out.txt"; exit 1; }
grep -q "Memtablerep: dlcbf_index:50000" "$DIR/out.txt" || { cat "$DIR/out.txt"; echo "FAIL: memtablerep"; exit 1; }
grep -q "memtable_factory=dlcbf_index:50000" "$DIR"/db/OPTIONS-* || { echo "FAIL: OPTIONS file"; exit 1; }
LINE=$(grep "\[dlcbf_index\] cf 0: memtable flushed" "$DIR/db/LOG" | head -1)
echo "LOG: ${LINE#*\] }"
SKIPPED=$(echo "$LINE" | sed -n 's/.* skipped=\([0-9]*\).*/\1/p')
[ -n "$SKIPPED" ] && [ "$SKIPPED" -gt 0 ] || { echo "FAIL: no skipped searches in the LOG"; exit 1; }

if LD_PRELOAD="$PLUGIN" "$DB_BENCH" -memtablerep=dlcbf_index:r99 --db="$DIR/db2" \
     --benchmarks=fillseq --num=10 > "$DIR/bad.txt" 2>&1; then
  echo "FAIL: a bad parameter was accepted"; exit 1
fi
grep -q "Invalid argument: dlcbf_index: remainder_bits" "$DIR/bad.txt" || { cat "$DIR/bad.txt"; exit 1; }

if "$DB_BENCH" -memtablerep=dlcbf_index --db="$DIR/db3" --benchmarks=fillseq --num=10 \
     > "$DIR/noplugin.txt" 2>&1; then
  echo "FAIL: dlcbf_index accepted without the plugin"; exit 1
fi
echo "PASS"
