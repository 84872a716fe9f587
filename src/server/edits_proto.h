#pragma once
// ContainerEdits <-> v1beta1.ContainerAllocateResponse, and Error <-> grpc::Status: the only place
// where our vendor-neutral values meet the wire types.
#include <grpcpp/support/status.h>

#include "core/container_edits.h"
#include "core/result.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace kgpu::server {

void to_proto(const ContainerEdits& edits, v1beta1::ContainerAllocateResponse* out);
ContainerEdits from_proto(const v1beta1::ContainerAllocateResponse& response);

grpc::Status to_grpc_status(const Error& error);
Error from_grpc_status(const grpc::Status& status);

}  // namespace kgpu::server
