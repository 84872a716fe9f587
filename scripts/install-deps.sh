#!/usr/bin/env bash
# Installs every Debian (bookworm) package kgpu needs to build, test and benchmark.
# clang-14 + libclang-rt-14-dev (libclang_rt.fuzzer, the sanitizer runtimes): the fuzz targets. The
# sanitizer builds use gcc's own runtimes (libasan8, libubsan1, libtsan2: build-essential brings them).
# Go packages are built offline in GOPATH mode from /usr/share/gocode: Sprig for the Helm renderer
# (tests/deploy), grpc-go for the kubelet-side interop peer and the CDI library for the spec checker
# (tests/interop).
# Idempotent: re-running it on a machine that has everything is quick.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libcpp-httplib-dev libnghttp2-dev
  libssl-dev  # libssl.a and libcrypto.a: src/http links OpenSSL statically
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev
  python3 python3-yaml
  python3-h2  # HTTP/2 from the client side for raw edge cases: tests/interop/h2 (issues 26, 27)
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev golang-github-xeipuuv-gojsonschema-dev
  golang-google-grpc-dev  # grpc-go, the kubelet's gRPC: the e2e tests' interop peer (tests/interop)
  golang-github-container-orchestrated-devices-container-device-interface-dev  # the CDI library: judges kgpu's CDI specs (tests/interop)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
