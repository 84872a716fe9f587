#include "plan/sharing.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "plan/device_ids.h"
#include "plan/message_size.h"

namespace kgpu::planner {

namespace {

bool is_number(std::string_view s) {
  return !s.empty() && s.size() < 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string canonical_index(std::string_view digits) { return std::to_string(std::stoi(std::string(digits))); }

// Every name a selector item may use for the devices of `base` (GPU index "i", MIG index "i:j",
// GPU-/MIG- UUID, legacy "MIG-GPU-<uuid>/<gi>/<ci>"), mapped to their positions. A whole-GPU name
// also names every MIG device of that GPU in the resource (useful with mig-strategy=single).
// Built once per entry, so a long `devices:` list costs O(items + devices), not O(items × devices).
std::unordered_map<std::string, std::vector<size_t>> selector_names(const Inventory& inventory, const Resource& base) {
  std::unordered_map<std::string, std::vector<size_t>> names;
  auto add = [&names](std::string name, size_t i) {
    auto& positions = names[std::move(name)];
    if (positions.empty() || positions.back() != i) positions.push_back(i);
  };
  for (size_t i = 0; i < base.devices.size(); ++i) {
    const AdvertisedDevice& d = base.devices[i];
    const Gpu& g = inventory.gpus[d.gpu];
    add(std::to_string(g.index), i);
    if (!g.uuid.empty()) add(g.uuid, i);
    if (!d.mig) continue;
    const MigDevice& m = g.mig_devices[*d.mig];
    add(std::to_string(g.index) + ":" + std::to_string(m.index), i);
    if (!m.uuid.empty()) add(m.uuid, i);
    add("MIG-" + g.uuid + "/" + std::to_string(m.gpu_instance_id) + "/" + std::to_string(m.compute_instance_id), i);
  }
  return names;
}

// A selector item in the spelling selector_names() uses: indices without leading zeros ("03:1" -> "3:1").
std::string canonical_item(std::string_view item) {
  if (is_number(item)) return canonical_index(item);
  if (const auto colon = item.find(':'); colon != std::string_view::npos) {
    const auto gi = item.substr(0, colon), mi = item.substr(colon + 1);
    if (is_number(gi) && is_number(mi)) return canonical_index(gi) + ":" + canonical_index(mi);
  }
  return std::string(item);
}

struct Entry {
  ReplicatedResource spec;
  SharingKind kind;
  bool rename_by_default;
  bool fail_requests_greater_than_one;
  const char* origin;  // for problem sentences: "MPS", "time-slicing", "device group replicas"
};

// MPS entries, then time-slicing ones, then the `replicas` of kgpu.deviceGroups: a device group's
// replicas are time-slicing of its devices (any number of pods open the node concurrently), and go
// through exactly the same code, so IDs, Allocate mapping, health and spreading are the same.
std::vector<Entry> entries_of(const Config& config) {
  std::vector<Entry> out;
  if (config.mps)
    for (const auto& r : config.mps->resources)
      out.push_back({r, SharingKind::Mps, config.mps->rename_by_default,
                     config.mps->fail_requests_greater_than_one.value_or(true), "MPS"});
  for (const auto& r : config.time_slicing.resources)
    out.push_back({r, SharingKind::TimeSlicing, config.time_slicing.rename_by_default,
                   config.time_slicing.fail_requests_greater_than_one.value_or(false), "time-slicing"});
  for (const auto& g : config.device_groups)
    if (g.replicas > 1)
      out.push_back({ReplicatedResource{g.resource, "", g.replicas, {}}, SharingKind::TimeSlicing, false, false,
                     "device group replicas"});
  return out;
}

// Bytes of the ListAndWatch message if `replicas` replicas of the chosen devices were advertised
// (unchosen devices stay once when they stay in this resource).
size_t shared_message_bytes(const Resource& base, const std::vector<bool>& chosen, bool keep_unchosen, int replicas) {
  size_t total = 0;
  for (size_t i = 0; i < base.devices.size(); ++i) {
    const AdvertisedDevice& d = base.devices[i];
    if (chosen[i]) total += replicated_entries_bytes(d, replicas);
    else if (keep_unchosen) total += device_entry_bytes(d.id.size(), d.numa_nodes);
  }
  return total;
}

// Why `replicas` replicas cannot be advertised (the kubelet would drop the whole message and see
// no device at all), naming the largest count that fits; empty when they fit.
std::string size_refusal(const Resource& base, const std::vector<bool>& chosen, bool keep_unchosen, int replicas,
                         const std::string& target) {
  const size_t bytes = shared_message_bytes(base, chosen, keep_unchosen, replicas);
  if (bytes <= kKubeletMaxMessageBytes) return {};
  int lo = 0, hi = replicas;  // size(lo) fits (or lo == 0), size(hi) does not
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (shared_message_bytes(base, chosen, keep_unchosen, mid) <= kKubeletMaxMessageBytes ? lo : hi) = mid;
  }
  std::string why = std::to_string(replicas) + " replicas would make the device list of " + target + " " +
                    std::to_string(bytes) + " bytes, over the kubelet's " + std::to_string(kKubeletMaxMessageBytes) +
                    "-byte gRPC message limit (the kubelet would see no " + target + " device at all); ";
  why += lo >= 2 ? "the largest replica count that fits is " + std::to_string(lo)
                 : "no replica count fits on this node";
  return why;
}

// Why MPS cannot share `base`, or empty. The resource then stays unshared: a pod gets a whole device,
// never less than it asked for.
std::string mps_refusal(const Config& config, const Inventory& inventory, const Resource& base, int replicas) {
  if (config.mps_root.empty()) return "MPS needs mpsRoot (--mps-root) to be set";
  if (base.vendor != Vendor::Nvidia) return "MPS exists only for NVIDIA GPUs";
  if (config.mig_strategy == MigStrategy::Mixed) return "MPS is not supported with mig-strategy=mixed";
  for (const auto& d : base.devices) {
    if (d.mig) return "MPS is not supported on MIG devices";
    const Gpu& g = inventory.gpus[d.gpu];
    if (replicas > mps_max_clients(g))
      return std::to_string(replicas) + " replicas exceed the " + std::to_string(mps_max_clients(g)) +
             " MPS clients " + describe_gpu(g) + " supports";
  }
  return {};
}

// Positions in base.devices that the entry's `devices` selector picks, in base order.
std::vector<bool> select(const Entry& e, const Inventory& inventory, const Resource& base,
                         std::vector<std::string>& problems) {
  std::vector<bool> chosen(base.devices.size(), false);
  const auto& sel = e.spec.devices.value;
  if (std::holds_alternative<DeviceSelector::All>(sel)) {
    chosen.assign(base.devices.size(), true);
  } else if (const int* count = std::get_if<int>(&sel)) {
    const size_t n = std::min(base.devices.size(), static_cast<size_t>(std::max(*count, 0)));
    if (static_cast<size_t>(std::max(*count, 0)) > base.devices.size())
      problems.push_back(std::string(e.origin) + " for " + base.name + " asks for " + std::to_string(*count) +
                         " devices but the node has " + std::to_string(base.devices.size()) + "; sharing all of them.");
    std::fill_n(chosen.begin(), n, true);
  } else {
    const auto names = selector_names(inventory, base);
    for (const auto& item : std::get<std::vector<std::string>>(sel)) {
      const auto it = names.find(canonical_item(item));
      if (it != names.end())
        for (size_t i : it->second) chosen[i] = true;
      else
        problems.push_back(std::string(e.origin) + " for " + base.name + " names device \"" + item +
                           "\", which is not part of that resource on this node; it is ignored.");
    }
  }
  return chosen;
}

}  // namespace

int mps_max_clients(const Gpu& gpu) {
  return (gpu.cc_major > 7 || (gpu.cc_major == 7 && gpu.cc_minor >= 5)) ? 48 : 16;
}

void apply_sharing(const Config& config, const Inventory& inventory, ResourceMap& resources,
                   std::vector<std::string>& problems) {
  std::set<std::string> base_names;
  for (const auto& [name, r] : resources) base_names.insert(name);
  std::set<std::string> shared;  // base resources already claimed by an entry

  for (const Entry& e : entries_of(config)) {
    const ReplicatedResource& spec = e.spec;
    const std::string label = std::string(e.origin) + " for " + spec.name;
    if (!base_names.contains(spec.name)) continue;
    if (!shared.insert(spec.name).second) {
      problems.push_back(label + " is configured more than once; only the first entry (MPS, then time-slicing, "
                         "then device group replicas) applies.");
      continue;
    }
    if (spec.replicas < 2) {
      problems.push_back(label + " has replicas " + std::to_string(spec.replicas) +
                         " (at least 2 needed); the resource is served unshared.");
      continue;
    }
    Resource& base = resources.at(spec.name);
    if (e.kind == SharingKind::Mps) {
      if (const auto why = mps_refusal(config, inventory, base, spec.replicas); !why.empty()) {
        problems.push_back(label + " is refused: " + why + "; the resource is served unshared.");
        continue;
      }
    }
    std::string target = spec.rename;
    if (target.empty()) target = e.rename_by_default ? spec.name + ".shared" : spec.name;
    if (target != spec.name && resources.contains(target)) {
      problems.push_back(label + " renames it to " + target +
                         ", which is already a resource on this node; the resource is served unshared.");
      continue;
    }
    const std::vector<bool> chosen = select(e, inventory, base, problems);
    if (std::none_of(chosen.begin(), chosen.end(), [](bool b) { return b; })) {
      problems.push_back(label + " selects no device on this node; the resource is served unshared.");
      continue;
    }
    // Checked before a single replica exists: the refused plan never costs memory or time.
    if (const auto why = size_refusal(base, chosen, target == spec.name, spec.replicas, target); !why.empty()) {
      problems.push_back(label + " is refused: " + why + "; the resource is served unshared.");
      continue;
    }

    Resource out;
    out.name = target;
    out.vendor = base.vendor;
    out.sharing = e.kind;
    out.replicas = spec.replicas;
    out.fail_requests_greater_than_one = e.fail_requests_greater_than_one;
    out.devices.reserve(base.devices.size() * static_cast<size_t>(spec.replicas));
    std::vector<AdvertisedDevice> rest;
    for (size_t i = 0; i < base.devices.size(); ++i) {
      const AdvertisedDevice& d = base.devices[i];
      if (!chosen[i]) {
        // Unselected devices stay under the original name; without a rename that is this same
        // resource, where they are advertised once, unreplicated.
        (target == spec.name ? out.devices : rest).push_back(d);
        continue;
      }
      for (int n = 0; n < spec.replicas; ++n) {
        AdvertisedDevice r = d;
        r.id = replica_id(d.id, n);
        r.replica = n;
        out.devices.push_back(std::move(r));
      }
    }
    if (target == spec.name) {
      base = std::move(out);
    } else {
      base.devices = std::move(rest);
      if (base.devices.empty()) resources.erase(spec.name);
      resources.emplace(target, std::move(out));
    }
  }
}

}  // namespace kgpu::planner
