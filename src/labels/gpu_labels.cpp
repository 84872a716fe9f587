#include "labels/gpu_labels.h"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "core/gpu_architecture.h"
#include "labels/sanitize.h"

namespace kgpu::labels {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
const std::string kGpuPrefix = "nvidia.com/gpu";
const std::string kModelPrefix = "kgpu.io/gpu-model.";
// Under migStrategy mixed: how many GPUs are not in MIG mode (nvidia.com/gpu.count counts all).
const std::string kFullGpuCountLabel = "kgpu.io/full-gpu.count";
// The longest suffix appended to a MIG resource name part (".sharing-strategy").
constexpr size_t kLongestSuffix = 17;

// GFD's family names from the CUDA compute capability; "undefined" where none is known, as GFD writes.
std::string family(int major, int minor) {
  std::string name = architecture_from_compute_capability(major, minor);
  return name.empty() ? "undefined" : name;
}

struct Sharing {
  int replicas = 1;
  SharingKind kind = SharingKind::None;
  bool renamed = false;
  bool shared() const { return replicas > 1; }
};

// How the plan shares the IDs that `matches` selects: the first replicated resource serving one of
// them. `base` is the unshared resource name; a shared resource under another name is renamed.
Sharing sharing_for(const ResourcePlan& plan, const std::string& base,
                    const std::function<bool(const AdvertisedDevice&)>& matches) {
  for (const auto& r : plan.resources)
    for (const auto& d : r.devices)
      if (d.replica >= 0 && matches(d)) return {r.replicas, r.sharing, r.name != base};
  return {};
}

void put_sharing(Labels& out, const std::string& prefix, const Sharing& s) {
  out[prefix + ".replicas"] = std::to_string(s.replicas);
  out[prefix + ".sharing-strategy"] = s.shared() ? to_string(s.kind) : "none";
}

std::string product(const std::string& model, const Sharing& s) {
  return k8s_label_value(model + (s.shared() && !s.renamed ? "-SHARED" : ""));
}

void put_model_facts(Labels& out, const std::string& prefix, const Gpu& g) {
  if (g.memory_bytes / kMiB > 0) out[prefix + ".memory"] = std::to_string(g.memory_bytes / kMiB);
  if (g.cc_major > 0) {
    out[prefix + ".family"] = family(g.cc_major, g.cc_minor);
    out[prefix + ".compute.major"] = std::to_string(g.cc_major);
    out[prefix + ".compute.minor"] = std::to_string(g.cc_minor);
  }
}

void put_mig_attributes(Labels& out, const std::string& prefix, const MigDevice& m) {
  out[prefix + ".memory"] = std::to_string(m.memory_bytes / kMiB);
  out[prefix + ".multiprocessors"] = std::to_string(m.multiprocessors);
  out[prefix + ".slices.gi"] = std::to_string(m.gpu_instance_slices);
  out[prefix + ".slices.ci"] = std::to_string(m.compute_instance_slices);
  out[prefix + ".engines.copy"] = std::to_string(m.copy_engines);
  out[prefix + ".engines.decoder"] = std::to_string(m.decoders);
  out[prefix + ".engines.encoder"] = std::to_string(m.encoders);
  out[prefix + ".engines.jpeg"] = std::to_string(m.jpeg_engines);
  out[prefix + ".engines.ofa"] = std::to_string(m.ofa_engines);
}

struct Model {
  const Gpu* first = nullptr;
  int count = 0;
  bool all_mig_enabled = true;
};

// GPUs grouped by product name, in order of first GPU index.
std::vector<Model> models_of(const std::vector<const Gpu*>& gpus) {
  std::vector<Model> models;
  for (const Gpu* g : gpus) {
    auto it = std::find_if(models.begin(), models.end(), [&](const Model& m) { return m.first->product == g->product; });
    if (it == models.end()) it = models.insert(models.end(), Model{g, 0, true});
    ++it->count;
    it->all_mig_enabled = it->all_mig_enabled && g->mig_enabled;
  }
  return models;
}

// The model the nvidia.com/gpu.* labels describe: the one with the most GPUs, ties to the first.
const Model& main_model(const std::vector<Model>& models) {
  return *std::max_element(models.begin(), models.end(),
                           [](const Model& a, const Model& b) { return a.count < b.count; });
}

// Full-GPU labels under nvidia.com/gpu for `gpus` (NVIDIA, non-empty), plus the kgpu per-model
// labels when there is more than one model. Returns the main model.
const Gpu& put_full_gpu_labels(const ResourcePlan& plan, const std::vector<const Gpu*>& gpus,
                               const Inventory& inventory, Labels& out) {
  const auto models = models_of(gpus);
  const Model& main = main_model(models);
  std::set<const Gpu*> members(gpus.begin(), gpus.end());
  Sharing s = sharing_for(plan, kGpuPrefix, [&](const AdvertisedDevice& d) {
    return !d.mig && d.gpu < inventory.gpus.size() && members.contains(&inventory.gpus[d.gpu]);
  });
  // GFD: MIG-enabled GPUs count, but a model whose GPUs are all in MIG mode offers no full GPU.
  if (main.all_mig_enabled) s = Sharing{0, SharingKind::None, false};
  out[kGpuPrefix + ".count"] = std::to_string(gpus.size());
  put_sharing(out, kGpuPrefix, s);
  out[kGpuPrefix + ".product"] = product(main.first->product, s);
  put_model_facts(out, kGpuPrefix, *main.first);
  if (models.size() > 1) {
    for (size_t m = 0; m < models.size(); ++m) {
      const std::string prefix = kModelPrefix + std::to_string(m);
      out[prefix + ".product"] = k8s_label_value(models[m].first->product);
      out[prefix + ".count"] = std::to_string(models[m].count);
      put_model_facts(out, prefix, *models[m].first);
    }
  }
  return *main.first;
}

std::vector<const Gpu*> nvidia_gpus(const Inventory& inventory, const std::function<bool(const Gpu&)>& keep) {
  std::vector<const Gpu*> out;
  for (const auto& g : inventory.gpus)
    if (g.vendor == Vendor::Nvidia && keep(g)) out.push_back(&g);
  return out;
}

// `single`: full-GPU labels, overridden by the MIG ones when every GPU is in MIG mode with one
// profile; the layouts GFD calls invalid give <model>-MIG-INVALID as GFD does.
void single_strategy(const Inventory& inventory, const ResourcePlan& plan, Labels& out) {
  const auto gpus = nvidia_gpus(inventory, [](const Gpu&) { return true; });
  if (gpus.empty()) return;
  const Gpu& model = put_full_gpu_labels(plan, gpus, inventory, out);
  const bool any_mig = std::any_of(gpus.begin(), gpus.end(), [](const Gpu* g) { return g->mig_enabled; });
  if (!any_mig) return;
  std::set<std::string> profiles;
  bool valid = true;
  int count = 0;
  const MigDevice* sample = nullptr;
  for (const Gpu* g : gpus) {
    if (!g->mig_enabled || g->mig_devices.empty()) valid = false;
    for (const auto& m : g->mig_devices) {
      profiles.insert(m.profile);
      if (!sample) sample = &m;
      ++count;
    }
  }
  if (profiles.size() != 1) valid = false;
  if (!valid) {
    out[kGpuPrefix + ".product"] = k8s_label_value(model.product + "-MIG-INVALID");
    out[kGpuPrefix + ".count"] = "0";
    out[kGpuPrefix + ".replicas"] = "0";
    out[kGpuPrefix + ".memory"] = "0";
    out[kGpuPrefix + ".sharing-strategy"] = "";
    return;
  }
  const Sharing s = sharing_for(plan, kGpuPrefix, [](const AdvertisedDevice& d) { return d.mig.has_value(); });
  out[kGpuPrefix + ".count"] = std::to_string(count);
  put_sharing(out, kGpuPrefix, s);
  out[kGpuPrefix + ".product"] = product(model.product + "-MIG-" + sample->profile, s);
  put_mig_attributes(out, kGpuPrefix, *sample);
}

// `mixed`: full-GPU labels over every physical GPU, MIG-enabled or not, as GFD writes them (so
// nvidia.com/gpu.count counts all GPUs: operators' selectors are written against GFD), plus
// kgpu.io/full-gpu.count, the GPUs not in MIG mode that nvidia.com/gpu actually serves; and
// nvidia.com/mig-<profile>.* per profile ('+' becomes '.', as in the resource name).
void mixed_strategy(const Inventory& inventory, const ResourcePlan& plan, Labels& out) {
  const auto all = nvidia_gpus(inventory, [](const Gpu&) { return true; });
  if (!all.empty()) put_full_gpu_labels(plan, all, inventory, out);
  const auto full = nvidia_gpus(inventory, [](const Gpu& g) { return !g.mig_enabled; });
  if (!all.empty()) out[kFullGpuCountLabel] = std::to_string(full.size());
  struct Profile {
    const Gpu* parent = nullptr;
    const MigDevice* sample = nullptr;
    int count = 0;
  };
  std::map<std::string, Profile> profiles;
  for (const Gpu* g : nvidia_gpus(inventory, [](const Gpu& x) { return x.mig_enabled; }))
    for (const auto& m : g->mig_devices) {
      auto& p = profiles[m.profile];
      if (!p.sample) p = {g, &m, 0};
      ++p.count;
    }
  for (const auto& entry : profiles) {
    // Not a structured binding: the lambda below captures the name (clang 14 refuses that).
    const std::string& name = entry.first;
    const auto& p = entry.second;
    std::string resource = "mig-" + name;
    std::replace(resource.begin(), resource.end(), '+', '.');
    const std::string base = "nvidia.com/" + resource;
    const std::string prefix = "nvidia.com/" + k8s_label_value(resource, 63 - kLongestSuffix);
    const Sharing s = sharing_for(plan, base, [&](const AdvertisedDevice& d) {
      return d.mig && d.gpu < inventory.gpus.size() && *d.mig < inventory.gpus[d.gpu].mig_devices.size() &&
             inventory.gpus[d.gpu].mig_devices[*d.mig].profile == name;
    });
    out[prefix + ".count"] = std::to_string(p.count);
    put_sharing(out, prefix, s);
    out[prefix + ".product"] = product(p.parent->product + "-MIG-" + name, s);
    put_mig_attributes(out, prefix, *p.sample);
  }
}

}  // namespace

void add_gpu_resource_labels(const Config& config, const Inventory& inventory, const ResourcePlan& plan,
                             Labels& out) {
  switch (config.mig_strategy) {
    case MigStrategy::None: {
      const auto gpus = nvidia_gpus(inventory, [](const Gpu&) { return true; });
      if (!gpus.empty()) put_full_gpu_labels(plan, gpus, inventory, out);
      return;
    }
    case MigStrategy::Single: single_strategy(inventory, plan, out); return;
    case MigStrategy::Mixed: mixed_strategy(inventory, plan, out); return;
  }
}

}  // namespace kgpu::labels
