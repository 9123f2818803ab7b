#!/bin/sh
# Checks that test hooks exist only in the test builds of the library.
#   check_no_test_hooks.sh shipped <lib>...   every lib must have NO hook symbol
#                                             and no DLCBF_NO_MEMBARRIER string
#   check_no_test_hooks.sh testing <lib>...   every lib together must have the
#                                             hooks (the check's own negative
#                                             control: it can see them)
set -u
mode=$1
shift
# Hook symbols of filter_policy/testing/*_testing.h and the code they guard.
pattern='ForTesting|dense_testing::|g_skip_mirror_for_testing|TestReaderPause|UpsertWithFault'
found=0
for lib in "$@"; do
  hits=$(nm -C "$lib" 2>/dev/null | grep -E "$pattern" | sort -u)
  env=$(strings "$lib" | grep -c 'DLCBF_NO_MEMBARRIER')
  if [ -n "$hits" ] || [ "$env" -gt 0 ]; then
    found=$((found + 1))
    if [ "$mode" = shipped ]; then
      echo "FAIL: $lib carries test hooks:"
      echo "$hits" | head -20
      [ "$env" -gt 0 ] && echo "  and reads DLCBF_NO_MEMBARRIER"
    fi
  else
    echo "$lib: no test hook symbols, no DLCBF_NO_MEMBARRIER"
  fi
done
if [ "$mode" = shipped ]; then
  [ "$found" -eq 0 ] && echo "PASS: no test hooks in $# shipped libraries" && exit 0
  exit 1
fi
if [ "$found" -gt 0 ]; then
  echo "PASS: the test builds carry the hooks, so the shipped check can see them"
  exit 0
fi
echo "FAIL: no hook found in the test builds: the pattern no longer matches the hooks"
exit 1
