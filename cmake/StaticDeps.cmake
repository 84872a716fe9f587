# protobuf, yaml-cpp and nghttp2 for kgpu's own code, from Debian's archives by default: loading
# their shared libraries cost ~2 ms per exec of `kgpu` (the dynamic loader's symbol lookups; an empty
# program linked to libprotobuf.so and libyaml-cpp.so: 3.9 ms, to the archives: 1.8 ms), and the
# daemon's start -> Register budget is 10 ms. protobuf follows KGPU_STATIC_GRPC: with gRPC's shared
# libraries (which load libprotobuf.so themselves) one protobuf must serve both.
option(KGPU_STATIC_DEPS "Link protobuf, yaml-cpp and nghttp2 from their archives" ON)
add_library(kgpu_protobuf INTERFACE)
add_library(kgpu_yaml INTERFACE)
add_library(kgpu_nghttp2 INTERFACE)

function(kgpu_archive var name)
  find_library(${var} NAMES lib${name}.a NO_CACHE)
  if(NOT ${var})
    message(FATAL_ERROR "KGPU_STATIC_DEPS: lib${name}.a not found (install its -dev package, or -DKGPU_STATIC_DEPS=OFF)")
  endif()
  set(${var} ${${var}} PARENT_SCOPE)
endfunction()

if(KGPU_STATIC_DEPS AND KGPU_STATIC_GRPC)
  kgpu_archive(protobuf_archive protobuf)
  target_link_libraries(kgpu_protobuf INTERFACE ${protobuf_archive} Threads::Threads z)
  target_include_directories(kgpu_protobuf INTERFACE ${Protobuf_INCLUDE_DIRS})
else()
  target_link_libraries(kgpu_protobuf INTERFACE protobuf::libprotobuf)
endif()

if(KGPU_STATIC_DEPS)
  kgpu_archive(yaml_archive yaml-cpp)
  get_target_property(yaml_includes yaml-cpp INTERFACE_INCLUDE_DIRECTORIES)
  target_link_libraries(kgpu_yaml INTERFACE ${yaml_archive})
  if(yaml_includes)
    target_include_directories(kgpu_yaml INTERFACE ${yaml_includes})
  endif()
  kgpu_archive(nghttp2_archive nghttp2)
  target_link_libraries(kgpu_nghttp2 INTERFACE ${nghttp2_archive})
  target_include_directories(kgpu_nghttp2 INTERFACE ${NGHTTP2_INCLUDE_DIRS})
else()
  target_link_libraries(kgpu_yaml INTERFACE yaml-cpp)
  target_link_libraries(kgpu_nghttp2 INTERFACE PkgConfig::NGHTTP2)
endif()
