# kgpu_grpcpp: the gRPC C++ library for the code that still uses it (the kubelet simulator,
# `kgpu probe`, generated stubs and the tests); the daemon speaks gRPC through src/rpc.
#
# Linked statically by default (Debian ships the archives), in its insecure flavour (unix sockets
# only), so that merely loading `kgpu` does not cost what the dynamic loader spends on libgrpc++,
# libgrpc, OpenSSL and ~45 abseil libraries: measured 10.7 ms per exec for a program linked to
# libgrpc++.so against 1.6 ms with the archives.
option(KGPU_STATIC_GRPC "Link gRPC C++ and abseil statically (archives from Debian's -dev packages)" ON)
add_library(kgpu_grpcpp INTERFACE)
if(NOT KGPU_STATIC_GRPC)
  target_link_libraries(kgpu_grpcpp INTERFACE gRPC::grpc++)
  return()
endif()

pkg_check_modules(GRPCPP_UNSECURE REQUIRED grpc++_unsecure)
# Libraries the archives need that the .pc files leave to their own Requires.private.
set(grpc_static_names ${GRPCPP_UNSECURE_STATIC_LIBRARIES} upb address_sorting re2 cares)
list(REMOVE_DUPLICATES grpc_static_names)
set(grpc_archives "")
set(grpc_shared "")
foreach(name IN LISTS grpc_static_names)
  if(name MATCHES "^(pthread|dl|m|rt|z|atomic|c)$")
    list(APPEND grpc_shared ${name})
    continue()
  endif()
  find_library(archive_${name} NAMES lib${name}.a NO_CACHE)
  if(NOT archive_${name})
    message(FATAL_ERROR "KGPU_STATIC_GRPC: lib${name}.a not found (install libgrpc++-dev, or -DKGPU_STATIC_GRPC=OFF)")
  endif()
  list(APPEND grpc_archives ${archive_${name}})
endforeach()
# A group: abseil's archives refer to one another in no fixed order.
target_link_libraries(kgpu_grpcpp INTERFACE "-Wl,--start-group" ${grpc_archives} "-Wl,--end-group" ${grpc_shared} z
                      Threads::Threads)
target_include_directories(kgpu_grpcpp INTERFACE ${GRPCPP_UNSECURE_INCLUDE_DIRS})
