#pragma once
// ResourceClaim objects for the DRA claim tests, built from the inputs the test names (so the
// expectations are derived, not pasted), and a scratch folder.
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/inventory.h"
#include "dra/model/device_names.h"

namespace kgpu::testing {

struct ResultSpec {
  ResultSpec(std::string request_name, std::string device_name, std::string driver_name = "gpu.nvidia.com",
             std::string pool_name = "node-1", bool admin_access = false, std::string share = "")
      : request(std::move(request_name)), device(std::move(device_name)), driver(std::move(driver_name)),
        pool(std::move(pool_name)), admin(admin_access), share_id(std::move(share)) {}
  std::string request;
  std::string device;
  std::string driver;
  std::string pool;
  bool admin;
  std::string share_id;
};

inline nlohmann::json claim_json(const std::string& uid, const std::vector<ResultSpec>& results,
                                 const nlohmann::json& configs = nlohmann::json::array(),
                                 const std::string& api_version = "resource.k8s.io/v1") {
  nlohmann::json r = nlohmann::json::array();
  for (const auto& s : results) {
    nlohmann::json j = {{"request", s.request}, {"driver", s.driver}, {"pool", s.pool}, {"device", s.device}};
    if (s.admin) j["adminAccess"] = true;
    if (!s.share_id.empty()) j["shareID"] = s.share_id;
    r.push_back(j);
  }
  return {{"apiVersion", api_version},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", "claim-" + uid}, {"namespace", "team-a"}, {"uid", uid}}},
          {"spec", {{"devices", {{"requests", nlohmann::json::array()}}}}},
          {"status",
           {{"allocation",
             {{"devices", {{"results", r}, {"config", configs}}},
              {"nodeSelector", {{"nodeSelectorTerms", nlohmann::json::array()}}}}}}}};
}

// An opaque config entry of status.allocation.devices.config.
inline nlohmann::json opaque_config(const nlohmann::json& parameters, const std::vector<std::string>& requests = {},
                                    const std::string& source = "FromClaim",
                                    const std::string& driver = "gpu.nvidia.com") {
  nlohmann::json c = {{"source", source}, {"opaque", {{"driver", driver}, {"parameters", parameters}}}};
  if (!requests.empty()) c["requests"] = requests;
  return c;
}

inline nlohmann::json gpu_sharing(const nlohmann::json& sharing, const std::string& kind = "GpuConfig") {
  return {{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", kind}, {"sharing", sharing}};
}

// Device names as the slice builder publishes them.
inline std::string gpu_name(const Inventory& inv, size_t g) { return dra::gpu_device_name(inv.gpus[g]); }
inline std::string mig_name(const Inventory& inv, size_t g, size_t m) {
  return dra::mig_device_name(inv.gpus[g], inv.gpus[g].mig_devices[m]);
}

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kgpu-claims-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

}  // namespace kgpu::testing
