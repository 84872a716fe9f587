#pragma once
// gRPC status codes and the mapping between them and kgpu's Error (core/result.h): the only place
// where the two meet.
#include <string>

#include "core/result.h"

namespace kgpu::rpc {

// Numbered as on the wire (grpc-status).
enum class Code : int {
  Ok = 0,
  Cancelled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
};

struct RpcStatus {
  Code code = Code::Ok;
  std::string message;
  bool ok() const { return code == Code::Ok; }
};

RpcStatus status_of(const Error& error);
// Unavailable, DeadlineExceeded and ResourceExhausted (a peer's rate limit) become
// Error::Unavailable: the caller retries those.
Error error_of(const RpcStatus& status);
const char* code_name(Code code);  // "UNAVAILABLE"

}  // namespace kgpu::rpc
