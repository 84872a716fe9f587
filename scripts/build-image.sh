#!/usr/bin/env bash
# Builds the kgpu image from deploy/Dockerfile with Debian's buildah, the way `docker build -f
# deploy/Dockerfile .` does it (same Dockerfile, same context, same .dockerignore), without a
# Docker engine and without a registry: when docker.io cannot be reached, the Debian base images
# the Dockerfile names are made locally with debootstrap from the Debian mirror and tagged
# docker.io/library/debian:bookworm and :bookworm-slim.
#
# Usage: scripts/build-image.sh [--binary PATH] [--tag NAME:TAG]
#   --binary PATH  ship this kgpu (built on Debian bookworm, e.g. build/src/cli/kgpu; a stripped
#                  copy is used) instead of compiling it in the Dockerfile's build stage. CI does
#                  this: compiling again from scratch would cost more CPU than the rest of the image.
#   --tag NAME     image name (default kgpu/kgpu:<version from CMakeLists.txt>)
# Environment: KGPU_STORAGE_DRIVER (default vfs: works everywhere, no fuse/overlay needed),
#   BUILDAH_ISOLATION (default chroot: no runc, works inside containers), DEBIAN_MIRROR,
#   KGPU_BASE_CACHE (where the debootstrapped root is kept between runs).
# Needs root (debootstrap, buildah with chroot isolation) and the buildah and debootstrap packages
# (scripts/ci-image.sh installs them). Prints the image name on the last line of stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
version=$(sed -n 's/^project(kgpu VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
tag="kgpu/kgpu:${version}"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    *) echo "build-image: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done

driver="${KGPU_STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
base_cache="${KGPU_BASE_CACHE:-/var/tmp/kgpu-debootstrap-bookworm}"
bh() { buildah --storage-driver "$driver" "$@"; }
log() { echo "build-image: $*" >&2; }

for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || { log "$tool is missing (apt-get install buildah debootstrap)"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { log "run as root (debootstrap and buildah --isolation chroot need it)"; exit 1; }

have_image() { bh inspect --type image "$1" >/dev/null 2>&1; }

# A bookworm root from the Debian mirror, as the official image has it: minbase, the same apt
# sources (bookworm, -updates, -security), no package lists or caches.
debootstrap_base() {
  if [ ! -x "$base_cache/usr/bin/apt-get" ]; then
    log "making a Debian bookworm base with debootstrap from $mirror (into $base_cache)"
    rm -rf "$base_cache.partial"
    debootstrap --variant=minbase bookworm "$base_cache.partial" "$mirror" >&2
    rm -f "$base_cache.partial/etc/apt/sources.list"
    cat >"$base_cache.partial/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: ${mirror}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    rm -rf "$base_cache.partial"/var/lib/apt/lists/* "$base_cache.partial"/var/cache/apt/*.bin \
           "$base_cache.partial"/var/cache/apt/archives/*.deb
    mv "$base_cache.partial" "$base_cache"
  fi
  local ctr mnt
  ctr=$(bh from scratch)
  mnt=$(bh mount "$ctr")
  tar -C "$base_cache" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . | tar -C "$mnt" -xf -
  bh umount "$ctr" >/dev/null
  bh config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  bh commit --quiet "$ctr" docker.io/library/debian:bookworm >/dev/null
  bh rm "$ctr" >/dev/null
  # The runtime stage only gathers libraries from it, so the full root serves as -slim too.
  bh tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
}

# The bases the Dockerfile names: already here, else pulled, else made with debootstrap.
bases=(debian:bookworm-slim)
[ -n "$binary" ] || bases+=(debian:bookworm)
for base in "${bases[@]}"; do
  ref="docker.io/library/$base"
  have_image "$ref" && continue
  if timeout 120 buildah --storage-driver "$driver" pull --quiet "$ref" >/dev/null 2>&1; then
    log "pulled $ref"
  else
    log "cannot pull $ref (no registry reachable?)"
    debootstrap_base
  fi
done

args=(bud --layers --pull=false -f deploy/Dockerfile --ignorefile deploy/Dockerfile.dockerignore
      --build-arg "KGPU_VERSION=$version" -t "$tag")
if [ -n "$binary" ]; then
  [ -x "$binary" ] || { log "--binary $binary is not an executable"; exit 1; }
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  # Stripped like the build stage's install -s; the build tree keeps its debug info.
  strip --strip-all -o "$ctx/kgpu" "$binary"
  args+=(--build-context "kgpu-binary=$ctx")
  log "using the prebuilt $binary (stripped: $(stat -c %s "$ctx/kgpu") bytes)"
fi
bh "${args[@]}" . >&2
echo "$tag"
