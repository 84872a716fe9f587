// Attribute value rules: PCI bus IDs, semver versions, quantities, NVIDIA's spellings and NVLink
// islands.
#include <algorithm>
#include <cctype>
#include <numeric>
#include <string_view>
#include <utility>

#include "dra/model/publication.h"

namespace kgpu::dra {

std::string normalize_pci_bus_id(const std::string& bus_id) {
  std::string id = bus_id;
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // NVML's form has an 8-digit domain ("00000000:07:00.0"); the kernel's has 4.
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4 && id.find(':', colon + 1) != std::string::npos)
    id = id.substr(colon - 4);
  return id;
}

std::optional<std::string> to_semver(const std::string& version) {
  std::vector<uint64_t> parts;
  size_t start = 0;
  while (start <= version.size()) {
    const size_t dot = std::min(version.find('.', start), version.size());
    const std::string part = version.substr(start, dot - start);
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    parts.push_back(std::stoull(part));  // drops leading zeros, which semver forbids
    start = dot + 1;
  }
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  parts.resize(3, 0);
  return std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]);
}

std::string binary_si_quantity(uint64_t value) {
  // The canonical form the API server would store: the largest binary suffix that divides exactly.
  static const char* const kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  size_t s = 0;
  while (value != 0 && value % 1024 == 0 && s + 1 < std::size(kSuffixes)) {
    value /= 1024;
    ++s;
  }
  return std::to_string(value) + kSuffixes[s];
}

namespace {

using Spelling = std::pair<std::string_view, std::string_view>;  // inventory -> go-nvlib

// go-nvlib's GetBrandAsString / GetArchitectureAsString, keyed by the inventory's names
// (nvml/mig_facts.cpp brand_name / architecture_name).
constexpr Spelling kBrands[] = {
    {"quadro", "Quadro"},           {"tesla", "Tesla"},
    {"nvs", "NVS"},                 {"grid", "Grid"},
    {"geforce", "GeForce"},         {"titan", "Titan"},
    {"nvidia-vapps", "NvidiaVApps"}, {"nvidia-vpc", "NvidiaVPC"},
    {"nvidia-vcs", "NvidiaVCS"},    {"nvidia-vws", "NvidiaVWS"},
    {"nvidia-cloud-gaming", "NvidiaCloudGaming"}, {"quadro-rtx", "QuadroRTX"},
    {"nvidia-rtx", "NvidiaRTX"},    {"nvidia", "Nvidia"},
    {"geforce-rtx", "GeForceRTX"},  {"titan-rtx", "TitanRTX"},
};
constexpr Spelling kArchitectures[] = {
    {"kepler", "Kepler"}, {"maxwell", "Maxwell"},           {"pascal", "Pascal"}, {"volta", "Volta"},
    {"turing", "Turing"}, {"ampere", "Ampere"},             {"ada-lovelace", "Ada Lovelace"},
    {"hopper", "Hopper"}, {"blackwell", "Blackwell"},       {"rubin", "Rubin"},
};

template <size_t N>
std::string respell(const std::string& name, const Spelling (&table)[N]) {
  if (name.empty()) return "Unknown";
  for (const auto& [ours, theirs] : table)
    if (name == ours) return std::string(theirs);
  // A name go-nvlib has no entry for (a compute-capability fallback such as "fermi"): its
  // capitalised form, the convention of every entry above.
  std::string out = name;
  out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

}  // namespace

std::string nvidia_dra_brand(const std::string& inventory_brand) { return respell(inventory_brand, kBrands); }

std::string nvidia_dra_architecture(const std::string& inventory_architecture) {
  return respell(inventory_architecture, kArchitectures);
}

std::vector<std::string> nvlink_islands(const Inventory& inventory) {
  const size_t n = inventory.gpus.size();
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  const auto& topo = inventory.topology;
  const bool have_links = topo.links.size() == n;
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      const bool both_nvidia = inventory.gpus[a].vendor == Vendor::Nvidia && inventory.gpus[b].vendor == Vendor::Nvidia;
      const bool linked = have_links && topo.links[a].size() == n && topo.link(a, b).nvlinks > 0;
      const bool joined = linked || (topo.nvswitch && both_nvidia);
      if (joined) parent[find(a)] = find(b);
    }
  std::vector<int> lowest_index(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int& low = lowest_index[find(i)];
    if (low < 0 || inventory.gpus[i].index < low) low = inventory.gpus[i].index;
  }
  std::vector<std::string> islands(n);
  for (size_t i = 0; i < n; ++i) {
    const Gpu& g = inventory.gpus[i];
    if (!g.fabric_cluster_uuid.empty() && g.fabric_clique)
      islands[i] = g.fabric_cluster_uuid + "." + std::to_string(*g.fabric_clique);
    else
      islands[i] = "nvlink-" + std::to_string(lowest_index[find(i)]);
  }
  return islands;
}

}  // namespace kgpu::dra
