#pragma once
// DraKubeletSim: the kubelet's DRA side, for tests, the demo and `kgpu kubelet-sim --dra`. Like the
// kubelet's plugin watcher it looks for sockets in <kubelet root>/plugins_registry, calls GetInfo,
// checks type and versions the way a kubelet of the chosen release does, answers
// NotifyRegistrationStatus, and then calls NodePrepareResources / NodeUnprepareResources on the
// endpoint in the version it picked. gRPC C++ on this side, so the tests check kgpu's own
// transport against the reference implementation.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"

namespace kgpu::sim {

struct DraClaim {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

struct DraPrepared {
  std::string error;  // the plugin's per-claim error; empty on success
  struct Device {
    std::vector<std::string> requests;
    std::string pool;
    std::string device;
    std::vector<std::string> cdi_device_ids;
  };
  std::vector<Device> devices;
};

struct DraPlugin {
  std::string driver;
  std::string endpoint;
  std::string service;  // the version picked: "v1.DRAPlugin" or "v1beta1.DRAPlugin"
  std::string registration_socket;
  bool health = false;  // advertised v1alpha1.DRAResourceHealth (watch it with sim/dra_health_watch.h)
};

class DraKubeletSim {
 public:
  // `kubelet_minor`: the kubelet release to act as (32 and 33 speak v1beta1 only; 34+ prefer v1).
  explicit DraKubeletSim(std::string kubelet_root, int kubelet_minor = 34);

  // Looks for registration sockets until one for a new driver registers or the timeout passes.
  // A plugin the kubelet would refuse (wrong type, no version it speaks) is told so and is an error.
  Result<DraPlugin> wait_for_plugin(std::chrono::milliseconds timeout);
  const std::map<std::string, DraPlugin>& plugins() const { return plugins_; }

  Result<std::map<std::string, DraPrepared>> prepare(const std::string& driver, const std::vector<DraClaim>& claims,
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Per claim UID: the plugin's error (empty on success).
  Result<std::map<std::string, std::string>> unprepare(const std::string& driver, const std::vector<DraClaim>& claims,
                                                       std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  Result<DraPlugin> register_plugin(const std::string& socket);
  std::string root_;
  int minor_;
  std::map<std::string, DraPlugin> plugins_;  // by driver
};

}  // namespace kgpu::sim
