#!/usr/bin/env bash
# CI step for the container image: builds it from deploy/Dockerfile with buildah
# (scripts/build-image.sh, no Docker engine, no registry) around the kgpu that CI has already
# built, then checks the image:
#   - `kgpu version` and `kgpu demo` run inside it (`buildah run`; the demo's simulated NVML and
#     fleet file are test artifacts, so they are mounted read-only, not shipped);
#   - it runs as the documented non-root user 65532 (image config, and the owner of the files the
#     demo creates in a host folder mounted at /tmp);
#   - its uncompressed size is under KGPU_IMAGE_MAX_MB (default 60).
# Prints the size and the CPU time this step took.
#
# Usage: scripts/ci-image.sh [BUILD_DIR]   (default: build; builds kgpu and fake_nvml there if missing)
# Needs root (apt-get, debootstrap, buildah --isolation chroot).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
max_mb="${KGPU_IMAGE_MAX_MB:-60}"
tag="kgpu/kgpu:ci"
export KGPU_STORAGE_DRIVER="${KGPU_STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
bh() { buildah --storage-driver "$KGPU_STORAGE_DRIVER" "$@"; }
fail() { echo "ci-image: FAIL: $*" >&2; exit 1; }

missing=()
for p in buildah debootstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

binary="$build/src/cli/kgpu"
fake_nvml="$build/tests/fake-nvml"
if [ ! -x "$binary" ] || [ ! -f "$fake_nvml/libnvidia-ml.so.1" ]; then
  cmake --build "$build" -j"$(nproc)" --target kgpu fake_nvml
fi

scripts/build-image.sh --binary "$binary" --tag "$tag" >/dev/null

ctr=$(bh from --quiet "$tag")
demo_tmp=$(mktemp -d)
cleanup() {
  bh umount "$ctr" >/dev/null 2>&1 || true
  bh rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$demo_tmp" "$demo_tmp.nvml"
}
trap cleanup EXIT

user=$(bh inspect --type image --format '{{.OCIv1.Config.User}}' "$tag")
[ "$user" = "65532:65532" ] || fail "the image's user is '$user', not 65532:65532 (see deploy/Dockerfile)"

echo "ci-image: kgpu version (in the image):"
bh run "$ctr" -- /usr/bin/kgpu version

# The simulated NVML is a test artifact, mounted rather than shipped; the shared libraries it needs
# that the image does not have (kgpu links yaml-cpp from its archive, the fake NVML cannot: Debian's
# archive is not position-independent) travel with it.
demo_nvml="$demo_tmp.nvml"
mkdir -p "$demo_nvml"
cp -a "$fake_nvml"/. "$demo_nvml"/
rootfs=$(bh mount "$ctr")
for lib in $(ldd "$fake_nvml/libnvidia-ml.so.1" | grep -o '/[^ ]*'); do
  [ -e "$rootfs$lib" ] || cp -L "$lib" "$demo_nvml/"
done
bh umount "$ctr" >/dev/null

echo "ci-image: kgpu demo (in the image, simulated NVML mounted from $fake_nvml):"
chmod 1777 "$demo_tmp"
bh run --volume "$demo_nvml:/opt/kgpu-fake-nvml:ro" \
       --volume "$PWD/tests/fixtures/fleets:/opt/kgpu-fleets:ro" \
       --volume "$demo_tmp:/tmp" \
       "$ctr" -- /usr/bin/kgpu demo --fake-nvml-dir /opt/kgpu-fake-nvml \
                                    --fleet /opt/kgpu-fleets/dgx-a100.yaml --keep
owners=$(find "$demo_tmp" -mindepth 1 -printf '%U\n' | sort -u | tr '\n' ' ')
[ "$owners" = "65532 " ] || fail "the demo's files are owned by uid(s) '$owners', not 65532 only"
echo "ci-image: the demo ran as uid 65532 (owner of every file it created)"

mnt=$(bh mount "$ctr")
bytes=$(du -sb "$mnt" | cut -f1)
kgpu_bytes=$(stat -c %s "$mnt/usr/bin/kgpu")
libs=$(find "$mnt" -name '*.so*' -type f | wc -l)
mb=$(( (bytes + 1048575) / 1048576 ))
echo "ci-image: $tag is ${mb} MB uncompressed ($bytes bytes: kgpu $kgpu_bytes bytes stripped, $libs shared libraries)"
[ "$mb" -le "$max_mb" ] || fail "the image is ${mb} MB, over the ${max_mb} MB budget"

echo "ci-image: CPU time (user system) of this script, then of everything it ran:"
times
