#include "server/edits_proto.h"

namespace kgpu::server {

void to_proto(const ContainerEdits& edits, v1beta1::ContainerAllocateResponse* out) {
  for (const auto& [k, v] : edits.envs) (*out->mutable_envs())[k] = v;
  for (const auto& [k, v] : edits.annotations) (*out->mutable_annotations())[k] = v;
  for (const auto& m : edits.mounts) {
    auto* pm = out->add_mounts();
    pm->set_container_path(m.container_path);
    pm->set_host_path(m.host_path);
    pm->set_read_only(m.read_only);
  }
  for (const auto& d : edits.devices) {
    auto* pd = out->add_devices();
    pd->set_container_path(d.container_path);
    pd->set_host_path(d.host_path);
    pd->set_permissions(d.permissions);
  }
  for (const auto& name : edits.cdi_devices) out->add_cdi_devices()->set_name(name);
}

ContainerEdits from_proto(const v1beta1::ContainerAllocateResponse& response) {
  ContainerEdits edits;
  for (const auto& [k, v] : response.envs()) edits.envs[k] = v;
  for (const auto& [k, v] : response.annotations()) edits.annotations[k] = v;
  for (const auto& m : response.mounts()) edits.mounts.push_back({m.container_path(), m.host_path(), m.read_only()});
  for (const auto& d : response.devices()) edits.devices.push_back({d.container_path(), d.host_path(), d.permissions()});
  for (const auto& c : response.cdi_devices()) edits.cdi_devices.push_back(c.name());
  return edits;
}

grpc::Status to_grpc_status(const Error& error) {
  switch (error.code) {
    case Error::Code::InvalidArgument: return {grpc::StatusCode::INVALID_ARGUMENT, error.message};
    case Error::Code::NotFound: return {grpc::StatusCode::NOT_FOUND, error.message};
    case Error::Code::FailedPrecondition: return {grpc::StatusCode::FAILED_PRECONDITION, error.message};
    case Error::Code::Unavailable: return {grpc::StatusCode::UNAVAILABLE, error.message};
    case Error::Code::Internal: return {grpc::StatusCode::INTERNAL, error.message};
  }
  return {grpc::StatusCode::UNKNOWN, error.message};
}

Error from_grpc_status(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: return Error::invalid(status.error_message());
    case grpc::StatusCode::NOT_FOUND: return Error::not_found(status.error_message());
    case grpc::StatusCode::FAILED_PRECONDITION: return Error::precondition(status.error_message());
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED: return Error::unavailable(status.error_message());
    default: return Error::internal(status.error_message());
  }
}

}  // namespace kgpu::server
