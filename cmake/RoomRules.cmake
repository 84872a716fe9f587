# kgpu_room_rules(<target> ROOM <dir under src> FAMILY <top dir> MAY_INCLUDE <rooms...>): the build
# of <target> first checks that the room's files include no header of another room of the family
# except those named, so the arrows between rooms (docs/design.md) cannot drift: a wrong include
# fails the build, naming the file and the header. Rechecked whenever a file of the room changes.
function(kgpu_room_rules target)
  cmake_parse_arguments(R "" "ROOM;FAMILY" "MAY_INCLUDE" ${ARGN})
  file(GLOB files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${R_ROOM}/*.h ${PROJECT_SOURCE_DIR}/src/${R_ROOM}/*.cpp)
  string(REPLACE "/" "_" name "${R_ROOM}")
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${name}.room-rules.stamp)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}/src -DROOM=${R_ROOM} -DFAMILY=${R_FAMILY} "-DALLOWED=${R_MAY_INCLUDE}" "-DFILES=${files}"
            -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/check_room_includes.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/check_room_includes.cmake
    COMMENT "Checking the include rules of room ${R_ROOM}"
    VERBATIM)
  add_custom_target(${target}_room_rules DEPENDS ${stamp})
  add_dependencies(${target} ${target}_room_rules)
endfunction()
