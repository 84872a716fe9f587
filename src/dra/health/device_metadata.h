#pragma once
// Device metadata for prepared claims (KEP-5304, alpha; k8s.io/dynamic-resource-allocation
// kubeletplugin/metadata.go and api/metadata): per request of a claim, a JSON document the
// container reads at
//   /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/<driver>-metadata.json
// (resourceclaimtemplates/<pod claim name>/... for a claim made from a template), bind-mounted
// read-only by a CDI device of kind "<driver>/metadata" that the prepare answer adds to the first
// device of the request. The host file lives in the plugin's folder:
//   <kubelet root>/plugins/<driver>/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json
// and the CDI spec in the CDI folder as <driver>_metadata_<claim UID>_<request>.json, as the Go
// helper names them, so a workload finds kgpu's files where it would find any driver's.
// The document is a stream of one object per API version (only metadata.resource.k8s.io/v1alpha1
// exists): the claim's identity, the request and its devices with their ResourceSlice attributes,
// plus what only the node knows: a MIG device's placement, a memory share's size, the MPS pipe
// folder the container uses. Pure: texts and paths; metadata_files.h writes them.
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.h"
#include "dra/model/claim.h"
#include "dra/model/dra_device.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra::health {

inline constexpr std::string_view kMetadataApiVersion = "metadata.resource.k8s.io/v1alpha1";
inline constexpr std::string_view kMetadataContainerDir = "/var/run/kubernetes.io/dra-device-attributes";

// Where one driver's files go.
struct MetadataLayout {
  std::string driver;           // "gpu.nvidia.com"
  std::string plugin_data_dir;  // <kubelet root>/plugins/<driver>
  std::string cdi_dir;          // /var/run/cdi
};

// The files of one request of a prepared claim.
struct MetadataFile {
  std::string request;        // base request name
  std::string metadata_path;  // host path of the document
  std::string metadata_text;
  std::string cdi_path;
  std::string cdi_text;
  std::string cdi_device_id;  // "gpu.nvidia.com/metadata=<uid>_<request>", added to the prepare answer
  bool operator==(const MetadataFile&) const = default;
};

// <plugin data dir>/dra-device-metadata/<namespace>_<name>: a claim's documents (removed whole).
std::string claim_metadata_dir(const MetadataLayout& layout, const std::string& ns, const std::string& name);
// "<driver>_metadata_<uid>_": the start of a claim's CDI spec file names.
std::string metadata_cdi_prefix(const MetadataLayout& layout, const std::string& claim_uid);
// The in-container path of a request's document.
std::string metadata_container_path(const std::string& driver, const std::string& claim_name,
                                    const std::optional<std::string>& pod_claim_name, const std::string& request);

// One file per request of `claim` (requests in name order), its devices described from `pool` (the
// published devices: their attributes) and `inventory` (MIG placement). `pod_claim_name`: the
// claim's resource.kubernetes.io/pod-claim-name annotation, when it has one. A device `pool` does
// not hold (a recovered claim) is listed with its pool and name only. Request names become path
// parts: one that is not a DNS label (as the API requires) gets no file.
std::vector<MetadataFile> claim_metadata(const MetadataLayout& layout, const PreparedClaim& claim,
                                         const std::optional<std::string>& pod_claim_name, const DriverPool& pool,
                                         const Inventory& inventory);

// `devices` with each request's metadata CDI device added to the first device serving it (as the
// Go helper does), so the runtime mounts the document into the request's containers.
std::vector<PreparedDevice> with_metadata_devices(std::vector<PreparedDevice> devices,
                                                  const std::vector<MetadataFile>& files);

}  // namespace kgpu::dra::health
