#!/usr/bin/env bash
# Rank the bundled example's candidates with the offline committee:
#   bash examples/run.sh [extra dei rank flags, e.g. --json -]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=target/example/textkit.git
[ -d "$repo" ] || bash examples/make-repo.sh "$repo" >/dev/null
exec cargo run --quiet -- rank examples/candidates \
  --tasks examples/tasks.jsonl --issue example__textkit-1 --repo "$repo" "$@"
