#pragma once
// Registration with the kubelet (v1beta1.Registration/Register) and the capped exponential backoff
// used while the kubelet is not up. The plugin must already serve its endpoint when it registers.
#include <chrono>
#include <functional>
#include <string>

#include "core/result.h"
#include "rpc/transport_log.h"

namespace kgpu::server {

struct RegisterRequestInfo {
  std::string kubelet_socket;  // full path of kubelet.sock
  std::string endpoint;        // our socket's file name, relative to the device-plugin directory
  std::string resource;
  bool preferred_allocation_available = true;
  bool pre_start_required = false;
};

// One Register call with a deadline. Error::Unavailable when the kubelet is not reachable, other
// codes as the kubelet answered (e.g. InvalidArgument for an unsupported version). `on_kubelet`
// (optional) hears who owns kubelet.sock (SO_PEERCRED) once connected, before Register is sent:
// the kubelet dials back as it accepts it, and its connection must be known as the kubelet's.
Status register_with_kubelet(const RegisterRequestInfo& info, std::chrono::milliseconds timeout,
                             const std::function<void(const rpc::Peer&)>& on_kubelet = {});

// Capped exponential backoff: initial, 2x, 4x ... up to max. Pure.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max) : initial_(initial), max_(max), next_(initial) {}
  std::chrono::milliseconds next() {
    auto current = next_;
    next_ = std::min(max_, next_ * 2);
    return current;
  }
  void reset() { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_, max_, next_;
};

}  // namespace kgpu::server
