#pragma once
// PodResourcesSim: the kubelet's PodResources API (v1 List and GetAllocatableResources) for the
// kubelet simulator, answering from a table of running pods the test or tool keeps. Serves
// <kubelet root>/pod-resources/kubelet.sock like the kubelet.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace kgpu::sim {

struct SimPod {
  std::string pod_namespace;
  std::string name;
  // One container ("main") with these devices per resource.
  std::map<std::string, std::vector<std::string>> devices;
};

class PodResourcesSim {
 public:
  explicit PodResourcesSim(std::string socket_path);
  ~PodResourcesSim();  // stop()
  PodResourcesSim(const PodResourcesSim&) = delete;
  PodResourcesSim& operator=(const PodResourcesSim&) = delete;

  Status start();  // creates the socket's folder when missing
  void stop();     // removes the socket
  const std::string& socket_path() const { return socket_path_; }

  // Adds `ids` of `resource` to the pod (creating it), as the kubelet does after Allocate.
  void add(const std::string& pod_namespace, const std::string& name, const std::string& resource,
           const std::vector<std::string>& ids);
  void remove(const std::string& pod_namespace, const std::string& name);  // the pod ended
  std::vector<SimPod> pods() const;

 private:
  struct Service;
  std::string socket_path_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, SimPod> pods_;
  std::unique_ptr<Service> service_;
};

}  // namespace kgpu::sim
