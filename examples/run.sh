#!/usr/bin/env bash
# Rank the bundled example's candidates with the offline committee:
#   bash examples/run.sh [extra dei rank flags, e.g. --json -]
# dei is built in release mode first (the first time takes several minutes on 2 cores); cargo's
# progress goes to stderr, so stdout holds only what dei prints (pure JSON with --json -).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
bin="$target/release/dei"
repo="$target/example/textkit.git"
[ -d "$repo" ] || bash examples/make-repo.sh "$repo" >/dev/null
if [ ! -x "$bin" ]; then
  echo "examples/run.sh: first run, building dei in release mode (several minutes on 2 cores; cargo's progress follows)" >&2
fi
cargo build --release --bin dei >&2
exec "$bin" rank examples/candidates \
  --tasks examples/tasks.jsonl --issue example__textkit-1 --repo "$repo" "$@"
