#!/usr/bin/env bash
# Installs dependencies, then builds and tests kgpu the way CI does (.ci/run execs this script),
# each phase in its own build folder:
#   build  -O2 -g1, warnings as errors; kgpu, the benchmarks and every test but the unit tests
#          (e2e with the grpc-go peer, deploy), so the e2e tests drive the optimised binary we ship
#   asan   ASan+UBSan on every target (kgpu, the fake NVML, the tests); every unit and e2e test,
#          four at once so the e2e tests also run concurrently, under load (orderings like issue 19).
#          The unit tests are compiled here only: compiling them twice cost CI ~10 of its minutes
#   tsan   TSan on kgpu only, driven by phase build's e2e tests (KGPU_E2E_BINARY): the daemon runs no
#          gRPC runtime (src/rpc), so every report is about kgpu's own code (needs phase build)
#   image  the container image from deploy/Dockerfile (buildah), kgpu version and demo inside it
#   fuzz   clang + libFuzzer; every target in tests/fuzz for KGPU_FUZZ_SECONDS (default 20)
# KGPU_CI_PHASES picks phases (default: build image asan tsan fuzz), e.g. KGPU_CI_PHASES="build asan" ./scripts/test.sh.
# Sanitizer builds are Debug at -O1 -g1: line numbers in every report, tests fast enough for CI's
# 2 cores, and compiles only ~1.4x as long as the plain -O2 -g build (instrumentation included).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/install-deploy-deps.sh

jobs=$(nproc)
phases=${KGPU_CI_PHASES:-build image asan tsan fuzz}
sanitizer_flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1")

# Runs one phase and prints its wall time (the CI budget is 90 minutes on 2 cores).
phase() {
  local name=$1
  shift
  case " $phases " in *" $name "*) ;; *) echo "== $name: skipped (KGPU_CI_PHASES)"; return 0 ;; esac
  echo "== $name"
  local start=$SECONDS
  "phase_$name"
  echo "== $name: done in $((SECONDS - start)) s wall"
}

phase_build() {
  # KGPU_GRPC_GO_INTEROP=ON, KGPU_CDI_INTEROP=ON: a machine without grpc-go or the CDI library fails
  # here instead of skipping the tests that check kgpu against the kubelet's own gRPC and against
  # the library container runtimes read CDI specs with.
  # -g1 (line tables, not full debug info): backtraces keep their lines, the compile is faster,
  # and the image strips the binary anyway.
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKGPU_WERROR=ON -DKGPU_GRPC_GO_INTEROP=ON -DKGPU_CDI_INTEROP=ON \
    -DKGPU_UNIT_TESTS=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
  cmake --build build -j"$jobs"
  ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300
}

phase_asan() {
  cmake -S . -B build-asan "${sanitizer_flags[@]}" -DKGPU_WERROR=ON -DKGPU_BUILD_BENCH=OFF \
    -DKGPU_SANITIZE=address,undefined
  cmake --build build-asan -j"$jobs"
  # Deploy checks run no C++ code: phase build covers them.
  ctest --test-dir build-asan --output-on-failure -j4 --timeout 600 -LE deploy
}

phase_tsan() {
  # Only kgpu is instrumented; the e2e tests of phase build drive it (KGPU_E2E_BINARY), so every
  # report is about the daemon (and `kgpu demo`'s in-process simulator), not about gRPC C++ in the
  # test process. Reports go to files: any file fails the phase, whatever the test saw.
  cmake -S . -B build-tsan "${sanitizer_flags[@]}" -DKGPU_WERROR=ON -DKGPU_BUILD_BENCH=OFF -DKGPU_BUILD_TESTS=OFF \
    -DKGPU_SANITIZE=thread -DKGPU_STATIC_GRPC=OFF
  cmake --build build-tsan -j"$jobs" --target kgpu
  local reports failed
  reports=$(mktemp -d)
  KGPU_E2E_BINARY="$PWD/build-tsan/src/cli/kgpu" \
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp:log_path=$reports/tsan" \
    ctest --test-dir build --output-on-failure -j"$jobs" --timeout 600 -L e2e || failed=1
  # A report makes kgpu exit 66 and so fails its test too: print the reports either way, or the
  # log shows only the exit code.
  if compgen -G "$reports/tsan*" >/dev/null; then
    cat "$reports"/tsan*
    echo "tsan: ThreadSanitizer reports from kgpu (above)" >&2
    return 1
  fi
  return "${failed:-0}"
}

phase_image() {
  # The shipped image (issue 16): built from deploy/Dockerfile with buildah around the binary phase
  # build made (no second compile), then `kgpu version` and `kgpu demo` run inside it.
  ./scripts/ci-image.sh build
}

phase_fuzz() {
  # Warnings are not errors here: gcc is the project's compiler (phase build has -Werror); clang
  # warns about other things (e.g. the C casts inside NVML's own version macros).
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKGPU_WERROR=OFF \
    -DKGPU_BUILD_BENCH=OFF -DKGPU_FUZZ=ON -DKGPU_FUZZ_SECONDS="${KGPU_FUZZ_SECONDS:-20}"
  cmake --build build-fuzz -j"$jobs" --target kgpu_fuzzers
  ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -L fuzz
}

phase build
phase image
phase asan
phase tsan
phase fuzz
