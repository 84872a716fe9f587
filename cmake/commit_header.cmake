# Writes OUTPUT (a header defining KGPU_COMMIT) with the commit SOURCE_DIR is checked out at, for
# `kgpu version`. Run at every build (a custom target), the file is rewritten only when the commit
# changed, so nothing recompiles otherwise. COMMIT, when given (an image built without .git), wins.
if(NOT COMMIT)
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR COMMIT STREQUAL "")
    set(COMMIT "unknown")
  endif()
endif()
file(WRITE "${OUTPUT}.tmp" "#pragma once\n#define KGPU_COMMIT \"${COMMIT}\"\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
