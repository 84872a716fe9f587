#pragma once
// A blocking gRPC call over a unix socket (HTTP/2 through nghttp2), on the caller's thread, with
// one deadline for the whole exchange: connect, request, answer. Unary, or the first message of a
// server stream (an operator tool's snapshot of ListAndWatch). A connection per call: the
// daemon calls the kubelet rarely (Register after a restart, PodResources at a config switch),
// and after a kubelet restart the socket is a new inode anyway.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "rpc/framing.h"
#include "rpc/status.h"
#include "rpc/transport_log.h"

namespace kgpu::rpc {

struct CallResult {
  RpcStatus status;     // the server's grpc-status, or what went wrong on the way
  std::string message;  // the response (serialized) when status is OK
};

// `path`: "/v1beta1.Registration/Register". Never throws; a connection failure is Unavailable,
// the deadline DeadlineExceeded, a malformed answer Internal. `on_connected` (optional) hears who
// owns the socket (SO_PEERCRED) as soon as the connection is made, before the request is sent.
CallResult call_unary(const std::string& socket_path, std::string_view path, std::string_view request,
                      std::chrono::milliseconds timeout, size_t max_response = kMaxMessageBytes,
                      const std::function<void(const Peer&)>& on_connected = {});

// A server-streaming call's first message (`path`: "/v1beta1.DevicePlugin/ListAndWatch"); the
// connection is closed once it is complete, which ends the call on the server. A stream that ends
// before its first message gives its status (Internal when that status is OK).
CallResult call_first_message(const std::string& socket_path, std::string_view path, std::string_view request,
                              std::chrono::milliseconds timeout, size_t max_response = kMaxMessageBytes);

}  // namespace kgpu::rpc
