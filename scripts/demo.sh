#!/usr/bin/env bash
# Installs dependencies, builds kgpu and runs the demo: the plugin serving a simulated DGX A100 node
# to the built-in kubelet simulator, showing what two pods get.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target kgpu fake_nvml
exec ./build/src/cli/kgpu demo "$@"
