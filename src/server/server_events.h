#pragma once
// ServerEvents: what the serving side reports as it works (Allocate answered, registration done),
// for observers such as the metrics registry. The server module knows nothing about Prometheus;
// the composition root (`kgpu plugin`) plugs an implementation in. Every method may be called
// concurrently from gRPC threads and must be cheap and non-blocking.
#include <cstddef>
#include <string>
#include <vector>

namespace kgpu::server {

class ServerEvents {
 public:
  virtual ~ServerEvents() = default;
  // One Allocate RPC answered; one entry per container request: the number of IDs it was given.
  virtual void allocated(const std::string& resource, double seconds, const std::vector<size_t>& devices) = 0;
  virtual void allocate_refused(const std::string& resource, double seconds) = 0;
  virtual void preferred(const std::string& resource, double seconds) = 0;
  // A Register call finished (ok or not); `registered` false also when our socket was lost.
  virtual void registration(const std::string& resource, bool ok) = 0;
  virtual void unregistered(const std::string& resource) = 0;
  // A config reload (SIGHUP or file change) was applied (ok) or refused as invalid.
  virtual void config_reloaded(bool ok) = 0;
};

}  // namespace kgpu::server
