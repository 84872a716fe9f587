# KGPU_FUZZ: libFuzzer targets (tests/fuzz). Needs clang (Debian: clang-14 and libclang-rt-14-dev,
# which ships libclang_rt.fuzzer). Every target is compiled with coverage instrumentation for the
# fuzzer plus ASan and UBSan, so a memory error or undefined behaviour is a crash the fuzzer keeps.
option(KGPU_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang: CC=clang CXX=clang++)" OFF)

if(KGPU_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KGPU_FUZZ needs clang (configure a fresh build folder with CC=clang CXX=clang++); "
                        "the C++ compiler is ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(KGPU_SANITIZE)
    message(FATAL_ERROR "KGPU_FUZZ brings its own sanitizers (address,undefined); leave KGPU_SANITIZE empty")
  endif()
  # Instrument everything we compile; only the fuzz executables link the fuzzer's main().
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  # Seconds CTest lets each target fuzz (CI); the long runs are done by hand (tests/fuzz/README.md).
  set(KGPU_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzz target runs under CTest")
  message(STATUS "kgpu: libFuzzer targets on (ASan+UBSan), ${KGPU_FUZZ_SECONDS} s each under CTest")
endif()
