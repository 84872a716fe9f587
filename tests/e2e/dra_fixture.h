#pragma once
// The DRA end-to-end tests' common ground: `kgpu plugin --dra` on the simulated node against the
// fake API server, and what they read back (published devices, claims, files).
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "e2e/sim_fixture.h"
#include "support/fake_api_server.h"

namespace kgpu::test {

inline const std::string kDraGpuDriver = "gpu.nvidia.com";

class DraSimE2E : public SimE2E {
 protected:
  // DRA on the GPUs `gpus` names (the device-plugin API keeps the others).
  PluginOptions dra_options(const FakeApiServer& api, const std::string& gpus) {
    PluginOptions options;
    options.env = {{"NODE_NAME", "node-1"}, {"KGPU_KUBE_API", api.url()}};
    options.extra_args = {"--dra", "--dra-gpus", gpus, "--cdi-spec-dir", cdi_dir};
    return options;
  }
  // dra_options() with the GPUs `shared` published for memory shares, whose daemons live under
  // `mps_root` (default: work's mps/).
  PluginOptions share_options(const FakeApiServer& api, const std::string& gpus, const std::string& shared,
                              std::string mps_root = "") {
    PluginOptions options = dra_options(api, gpus);
    if (mps_root.empty()) mps_root = work.file("mps");
    options.extra_args.insert(options.extra_args.end(), {"--mps-root", mps_root, "--dra-share-memory-gpus", shared});
    return options;
  }
  // Device names of the published slices (all slices of the NVIDIA driver).
  static std::set<std::string> published(const FakeApiServer& api) {
    std::set<std::string> names;
    for (const auto& [name, slice] : api.slices())
      if (slice["spec"].value("driver", "") == kDraGpuDriver)
        for (const auto& d : slice["spec"].value("devices", nlohmann::json::array())) names.insert(d.value("name", ""));
    return names;
  }
  // Device name -> the GPU UUID it publishes.
  static std::map<std::string, std::string> published_uuids(const FakeApiServer& api) {
    std::map<std::string, std::string> out;
    for (const auto& [name, slice] : api.slices())
      if (slice["spec"].value("driver", "") == kDraGpuDriver)
        for (const auto& d : slice["spec"].value("devices", nlohmann::json::array()))
          out[d.value("name", "")] = d["attributes"]["uuid"].value("string", "");
    return out;
  }
  // An allocated claim team-a/<name> for one device, request "gpu".
  static nlohmann::json claim(const std::string& uid, const std::string& device, const std::string& name = "train") {
    nlohmann::json result = {{"request", "gpu"}, {"driver", kDraGpuDriver}, {"pool", "node-1"}, {"device", device}};
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}}},
            {"spec", {{"devices", {{"requests", nlohmann::json::array()}}}}},
            {"status", {{"allocation", {{"devices", {{"results", {result}}, {"config", nlohmann::json::array()}}}}}}}};
  }
  std::string read_text(const std::string& path) const {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string cdi_dir = work.file("cdi");
};

}  // namespace kgpu::test
