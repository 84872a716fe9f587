# Run as a script (cmake -P) by kgpu_room_rules(): fails when a file of ROOM includes a header of a
# room of ROOMS_FAMILY that is neither ROOM itself nor one of ALLOWED. Rooms are folders under src/
# ("dra/claims"); a header directly in a family's top folder ("dra/kubelet_plugin.h") belongs to
# the family's top room (FAMILY itself, "dra").
# Headers that are not under SRC (generated ones, such as the DRA protos' "dra/v1/dra.pb.h") are
# no room's.
#   -DSRC=<src dir> -DROOM=dra/claims -DFAMILY=dra "-DALLOWED=dra/model;dra/sharing" "-DFILES=<abs paths>"
#   -DSTAMP=<file>
set(violations "")
foreach(file IN LISTS FILES)
  file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"${FAMILY}/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[^\"]*\"([^\"]*)\".*$" "\\1" header "${line}")
    get_filename_component(room "${header}" DIRECTORY)
    if(room STREQUAL ROOM OR NOT EXISTS "${SRC}/${header}")
      continue()
    endif()
    list(FIND ALLOWED "${room}" at)
    if(at EQUAL -1)
      string(APPEND violations "\n  ${file}: includes \"${header}\" (room ${room})")
    endif()
  endforeach()
endforeach()
if(violations)
  string(REPLACE ";" ", " allowed_text "${ALLOWED}")
  message(FATAL_ERROR "room ${ROOM} may include only itself and: ${allowed_text}${violations}")
endif()
file(TOUCH "${STAMP}")
