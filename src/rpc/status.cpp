#include "rpc/status.h"

namespace kgpu::rpc {

RpcStatus status_of(const Error& error) {
  switch (error.code) {
    case Error::Code::InvalidArgument: return {Code::InvalidArgument, error.message};
    case Error::Code::NotFound: return {Code::NotFound, error.message};
    case Error::Code::FailedPrecondition: return {Code::FailedPrecondition, error.message};
    case Error::Code::Unavailable: return {Code::Unavailable, error.message};
    case Error::Code::Internal: return {Code::Internal, error.message};
  }
  return {Code::Unknown, error.message};
}

Error error_of(const RpcStatus& status) {
  switch (status.code) {
    case Code::InvalidArgument: return Error::invalid(status.message);
    case Code::NotFound: return Error::not_found(status.message);
    case Code::FailedPrecondition: return Error::precondition(status.message);
    case Code::Unavailable:
    case Code::DeadlineExceeded:
    case Code::ResourceExhausted: return Error::unavailable(status.message);
    default: return Error::internal(status.message);
  }
}

const char* code_name(Code code) {
  switch (code) {
    case Code::Ok: return "OK";
    case Code::Cancelled: return "CANCELLED";
    case Code::Unknown: return "UNKNOWN";
    case Code::InvalidArgument: return "INVALID_ARGUMENT";
    case Code::DeadlineExceeded: return "DEADLINE_EXCEEDED";
    case Code::NotFound: return "NOT_FOUND";
    case Code::AlreadyExists: return "ALREADY_EXISTS";
    case Code::PermissionDenied: return "PERMISSION_DENIED";
    case Code::ResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::FailedPrecondition: return "FAILED_PRECONDITION";
    case Code::Aborted: return "ABORTED";
    case Code::OutOfRange: return "OUT_OF_RANGE";
    case Code::Unimplemented: return "UNIMPLEMENTED";
    case Code::Internal: return "INTERNAL";
    case Code::Unavailable: return "UNAVAILABLE";
    case Code::DataLoss: return "DATA_LOSS";
    case Code::Unauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

}  // namespace kgpu::rpc
