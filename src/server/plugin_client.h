#pragma once
// The kubelet's side of one call, for operator tools: read the device list a running plugin is
// advertising right now (the first ListAndWatch message) from its socket.
#include <chrono>
#include <string>

#include "core/result.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace kgpu::server {

// Unavailable when nothing serves `socket` or it sends no list within `timeout`.
Result<v1beta1::ListAndWatchResponse> read_device_list(const std::string& socket, std::chrono::milliseconds timeout);

}  // namespace kgpu::server
