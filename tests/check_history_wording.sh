#!/usr/bin/env bash
# The repository speaks of the product, never of how it was made: a figure
# or a fix is dated by its date, machine, commit or command, not by a
# numbered or "this/earlier" round of work. Fails when such wording appears
# in a tracked source or document (the patterns the before-stop hook of
# shared/hooks uses). Usage: check_history_wording.sh <source dir>
set -u
src="${1:?usage: check_history_wording.sh <source dir>}"
cd "$src" || exit 2
pattern='session [0-9]|this session|earlier session|last session|in an earlier (session|round)'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits=$(git grep -n -I -i -E "$pattern" -- . ':!tests/data' ':!tests/check_history_wording.sh' 2>/dev/null)
else
  echo "note: $src is not a git checkout; scanning its files instead"
  hits=$(grep -rnIiE "$pattern" --exclude-dir=.git --exclude-dir='build*' --exclude-dir=data \
         --exclude=check_history_wording.sh . 2>/dev/null)
fi
if [ -n "$hits" ]; then
  echo "FAIL: wording about the project's own history (say the date, machine, commit or command):"
  echo "$hits" | head -20
  exit 1
fi
echo "PASS: no wording about the project's own history"
