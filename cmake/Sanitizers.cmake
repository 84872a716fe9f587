# KGPU_SANITIZE: build every target (libraries, the kgpu binary, the fake NVML, tests) with
# sanitizers, so that the code under test and the daemon the e2e tests spawn are both checked.
#   address,undefined  ASan + UBSan; any report ends the process (-fno-sanitize-recover)
#   thread             TSan
# The flags go on every target through add_compile_options/add_link_options, so no module has to
# opt in. The runtime options CTest hands the tests are in KGPU_SANITIZER_ENV (tests/CMakeLists.txt).
set(KGPU_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined | thread | empty (none)")
set_property(CACHE KGPU_SANITIZE PROPERTY STRINGS "" "address,undefined" "address" "undefined" "thread")

set(KGPU_SANITIZER_LOG_DIR "" CACHE PATH
    "Sanitized builds: reports go to <dir>/<sanitizer>.<pid> instead of stderr; the test still fails (empty: stderr)")

set(KGPU_SANITIZER_ENV "")
if(KGPU_SANITIZE)
  string(REPLACE "," ";" kgpu_sanitizers "${KGPU_SANITIZE}")
  foreach(s ${kgpu_sanitizers})
    if(NOT s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "KGPU_SANITIZE: unknown sanitizer '${s}' (choose address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST kgpu_sanitizers AND "address" IN_LIST kgpu_sanitizers)
    message(FATAL_ERROR "KGPU_SANITIZE: thread and address cannot be combined; use two build folders")
  endif()

  set(kgpu_san_flags -fsanitize=${KGPU_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options(${kgpu_san_flags})
  # GCC 12 reports -Wmaybe-uninitialized false positives inside libstdc++ (<regex>, std::function)
  # once the sanitizers' instrumentation changes inlining; the plain -Werror build keeps the check.
  add_compile_options(-Wno-maybe-uninitialized)
  add_link_options(${kgpu_san_flags})

  # Reports must fail the test that caused them: stop at the first one, with a stack.
  # A spawned kgpu inherits these through the e2e harness (it passes the environment on).
  set(kgpu_supp ${PROJECT_SOURCE_DIR}/tests/sanitizers)
  set(log_asan "")
  set(log_tsan "")
  set(log_ubsan "")
  if(KGPU_SANITIZER_LOG_DIR)
    file(MAKE_DIRECTORY ${KGPU_SANITIZER_LOG_DIR})
    foreach(s asan tsan ubsan)
      set(log_${s} ":log_path=${KGPU_SANITIZER_LOG_DIR}/${s}")
    endforeach()
  endif()
  if("thread" IN_LIST kgpu_sanitizers)
    list(APPEND KGPU_SANITIZER_ENV
         "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${kgpu_supp}/tsan.supp${log_tsan}")
  endif()
  if("address" IN_LIST kgpu_sanitizers)
    list(APPEND KGPU_SANITIZER_ENV
         "ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:detect_leaks=1${log_asan}"
         "LSAN_OPTIONS=suppressions=${kgpu_supp}/lsan.supp")
  endif()
  if("undefined" IN_LIST kgpu_sanitizers)
    list(APPEND KGPU_SANITIZER_ENV "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1${log_ubsan}")
  endif()
  message(STATUS "kgpu: sanitizers ${KGPU_SANITIZE} on every target")
endif()
