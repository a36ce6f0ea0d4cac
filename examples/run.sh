#!/usr/bin/env bash
# Rank the bundled example's candidates with the offline committee:
#   bash examples/run.sh [extra dei rank flags, e.g. --json -]
#   bash examples/run.sh --exec   # also run them in the sandbox: the machine's python3, no PyPI
# dei is built in release mode first (the first time takes several minutes on 2 cores); cargo's
# progress goes to stderr, so stdout holds only what dei prints (pure JSON with --json -).
# DEI_BIN=PATH runs that dei instead, building nothing (one installed with `cargo install`).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
repo="$target/example/textkit.git"
[ -d "$repo" ] || bash examples/make-repo.sh "$repo" >/dev/null
if [ -n "${DEI_BIN:-}" ]; then
  bin="$DEI_BIN"
else
  bin="$target/release/dei"
  if [ ! -x "$bin" ]; then
    echo "examples/run.sh: first run, building dei in release mode (several minutes on 2 cores; cargo's progress follows)" >&2
  fi
  cargo build --release --bin dei >&2
fi
# --exec without a test command: the example's tests run with python3 and examples/minitest.py,
# a stand-in for `pytest -rA` (dei ships no environment for this made-up repository).
extra=()
case " $* " in
  *" --exec "*)
    case " $* " in
      *" --test-cmd"*) ;;
      *) extra=(--python python3 --test-cmd "python '$PWD/examples/minitest.py'") ;;
    esac ;;
esac
exec "$bin" rank examples/candidates \
  --tasks examples/tasks.jsonl --issue example__textkit-1 --repo "$repo" ${extra[@]+"${extra[@]}"} "$@"
