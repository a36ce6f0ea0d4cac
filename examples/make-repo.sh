#!/usr/bin/env bash
# Build the example repository (a bare git dir) from examples/textkit with a fixed
# author and date, so its commit id is the same on every machine:
#   bash examples/make-repo.sh target/example/textkit.git
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:?usage: make-repo.sh DEST}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -R "$here/textkit/." "$work/"
export GIT_AUTHOR_NAME="dei example" GIT_AUTHOR_EMAIL="example@dei.invalid"
export GIT_COMMITTER_NAME="dei example" GIT_COMMITTER_EMAIL="example@dei.invalid"
export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
export GIT_CONFIG_NOSYSTEM=1 HOME="$work"
git -C "$work" init -q -b main
git -C "$work" config core.autocrlf false
git -C "$work" config core.fileMode false
git -C "$work" add -A
git -C "$work" update-index --chmod=-x $(git -C "$work" ls-files)
git -C "$work" commit -q -m "textkit 0.1"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
git clone -q --bare "$work" "$dest"
git -C "$dest" rev-parse HEAD
