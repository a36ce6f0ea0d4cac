#!/usr/bin/env bash
# Make what `dei rank --exec --exec-backend podman` needs on a Debian/Ubuntu machine, without
# any container registry (docs/containers.md):
#   bash examples/container-base.sh            # then run the `export CONTAINERS_CONF=...` it prints
# - podman, runc and debootstrap, installed with apt when missing (as root only);
# - a containers.conf under dei's cache folder ($DEI_CACHE_DIR, else ~/.cache/dei): runc,
#   cgroupfs and nofile/nproc limits within the machine's hard ones (podman's defaults fail on
#   a cgroups-v1 host without systemd);
# - the base image localhost/dei-base:bookworm (override: DEI_BASE_IMAGE), made with
#   `debootstrap --variant=minbase bookworm` and `podman import`, with the libraries a pyenv or
#   Debian python needs, so that dei's own venvs (mounted read-only at their host paths) run in it
#   as on the host; an image already there is reused.
# MIRROR=URL picks the Debian mirror (default: the first one apt's sources name).
set -euo pipefail
image="${DEI_BASE_IMAGE:-localhost/dei-base:bookworm}"
cache="${DEI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dei}"
conf_dir="$cache/containers"
conf="$conf_dir/containers.conf"

need=()
for bin in podman runc debootstrap; do
  command -v "$bin" >/dev/null || need+=("$bin")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "container-base.sh: missing ${need[*]}; install them (as root: apt-get install -y podman runc debootstrap)" >&2
    exit 1
  fi
  echo "container-base.sh: installing ${need[*]} with apt" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap >&2
fi

mkdir -p "$conf_dir"
nofile="$(ulimit -Hn)"
[ "$nofile" = unlimited ] && nofile=1048576
nproc="$(ulimit -Hu)"
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
cat >"$conf" <<EOF
# Written by dei's examples/container-base.sh.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF="$conf"

if podman image exists "$image"; then
  echo "container-base.sh: $image is there already (podman rmi $image to build it again)" >&2
else
  if [ -z "${MIRROR:-}" ]; then
    MIRROR="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | grep -oE '^(URIs:|deb) +https?://[^ ]+/(debian|ubuntu)/?( |$)' | awk '{print $2}' | head -1 || true)"
    MIRROR="${MIRROR:-http://deb.debian.org/debian}"
  fi
  root="$(mktemp -d "${TMPDIR:-/tmp}/dei-base-XXXXXX")"
  trap 'rm -rf "$root"' EXIT
  echo "container-base.sh: debootstrap bookworm from $MIRROR (about a minute)" >&2
  debootstrap --variant=minbase \
    --include=python3,python3-venv,ca-certificates,libssl3,libffi8,libsqlite3-0,libreadline8,libncursesw6,libbz2-1.0,liblzma5,zlib1g,libexpat1,libgdbm6,libuuid1,libtk8.6 \
    bookworm "$root" "$MIRROR" >&2
  tar -C "$root" -c . | podman import - "$image" >&2
  echo "container-base.sh: made $image" >&2
fi
echo "export CONTAINERS_CONF=$conf"
