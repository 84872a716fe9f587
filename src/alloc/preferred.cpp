// preferred_allocation: maps IDs to GPUs, runs the exact subset search for the topology part and
// the sharing / MIG rules for IDs that share a GPU. The score is documented in preferred.h.
#include "alloc/preferred.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "alloc/request.h"
#include "alloc/subset_search.h"

namespace kgpu {
namespace {

using alloc::Request;

// Deterministic order of IDs inside one GPU: replica 0 of every MIG device before replica 1 of
// any, so repeated picks on one GPU spread over its MIG devices.
bool slot_less(const AdvertisedDevice* a, const AdvertisedDevice* b) {
  return std::tuple(a->gpu, a->replica, a->mig.value_or(0), a->id) <
         std::tuple(b->gpu, b->replica, b->mig.value_or(0), b->id);
}

alloc::SubsetProblem make_problem(const TopologyScorer& scorer, const std::vector<size_t>& gpus) {
  alloc::SubsetProblem p;
  p.n = gpus.size();
  p.weight.assign(p.n * p.n, 0);
  for (size_t i = 0; i < p.n; ++i)
    for (size_t j = 0; j < p.n; ++j)
      if (i != j) p.weight[i * p.n + j] = scorer.weight(gpus[i], gpus[j]);
  return p;
}

std::vector<const AdvertisedDevice*> choose_whole_gpus(const TopologyScorer& scorer, const Request& req) {
  std::vector<alloc::RequestDevice> items = req.available;
  std::sort(items.begin(), items.end(),
            [](const auto& a, const auto& b) { return slot_less(a.device, b.device); });
  std::vector<const AdvertisedDevice*> picks;
  const size_t need = req.size - req.must.size();
  if (need == 0) return picks;
  if (items.size() > alloc::kMaxItems) {
    // Beyond any real node; stay correct (never fail) with the lowest free GPUs.
    for (const auto& it : items)
      if (!it.must && picks.size() < need) picks.push_back(it.device);
    return picks;
  }
  std::vector<size_t> gpus;
  for (const auto& it : items) gpus.push_back(it.device->gpu);
  auto problem = make_problem(scorer, gpus);
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].must) problem.required |= uint64_t{1} << i;
  problem.k = req.size;
  const auto choice = alloc::best_subset(problem);
  for (size_t i = 0; i < items.size(); ++i)
    if ((choice.mask >> i & 1) && !items[i].must) picks.push_back(items[i].device);
  return picks;
}

// IDs grouped by the GPU behind them (replicas, MIG devices).
struct Group {
  size_t gpu = 0;
  int64_t allocated = 0;  // IDs of this GPU in the resource that the kubelet did not offer
  std::vector<const AdvertisedDevice*> free;  // offered and not must-include, slot order
  size_t next = 0;                            // next free slot to hand out
  int64_t in_request = 0;                     // IDs of this GPU in the answer so far
  size_t remaining() const { return free.size() - next; }
};

std::map<size_t, Group> make_groups(const Resource& resource, const Request& req) {
  std::map<size_t, Group> groups;
  for (const auto& d : resource.devices) {
    auto& g = groups[d.gpu];
    g.gpu = d.gpu;
    ++g.allocated;
  }
  for (const auto& it : req.available) {
    auto& g = groups[it.device->gpu];
    --g.allocated;
    if (it.must) ++g.in_request;
    else g.free.push_back(it.device);
  }
  for (auto& [gpu, g] : groups) std::sort(g.free.begin(), g.free.end(), slot_less);
  return groups;
}

// Spread (distributed replicas, MIG spread): first one ID on each of as many new GPUs as the
// request needs, choosing the least allocated GPUs and among those the best connected set (the
// exact search, with must-include GPUs required); then round-robin: fewest IDs in this answer,
// least allocated, lowest index.
void spread(const TopologyScorer& scorer, std::map<size_t, Group>& groups, size_t need,
            std::vector<const AdvertisedDevice*>& picks) {
  std::vector<size_t> gpus;
  uint64_t required = 0;
  size_t fresh = 0;
  for (auto& [gpu, g] : groups) {
    if (g.in_request > 0) {
      required |= uint64_t{1} << gpus.size();
      gpus.push_back(gpu);
    } else if (g.remaining() > 0) {
      gpus.push_back(gpu);
      ++fresh;
    }
  }
  const size_t distinct = std::min(need, fresh);
  if (distinct > 0 && gpus.size() <= alloc::kMaxItems) {
    auto problem = make_problem(scorer, gpus);
    problem.required = required;
    problem.k = static_cast<size_t>(std::popcount(required)) + distinct;
    for (size_t gpu : gpus) problem.load.push_back(-groups[gpu].allocated);
    const auto choice = alloc::best_subset(problem);
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (!(choice.mask >> i & 1) || (required >> i & 1)) continue;
      auto& g = groups[gpus[i]];
      picks.push_back(g.free[g.next++]);
      ++g.in_request;
      --need;
    }
  }
  while (need > 0) {
    Group* best = nullptr;
    for (auto& [gpu, g] : groups) {
      if (g.remaining() == 0) continue;
      if (!best || std::tuple(g.in_request, g.allocated, g.gpu) < std::tuple(best->in_request, best->allocated, best->gpu))
        best = &g;
    }
    picks.push_back(best->free[best->next++]);
    ++best->in_request;
    --need;
  }
}

// Pack (packed replicas and MIG devices): fill the GPUs already in the answer, then, for MIG
// devices, a parent that can hold the rest of the request by itself (so the request lands on one
// parent whenever one can take it, rather than starting on a parent with too few free devices),
// then the most allocated GPU (replicas: NVIDIA's packed order, busiest first), then the GPU best
// connected to the answer's GPUs, then the lowest index.
void pack(const TopologyScorer& scorer, std::map<size_t, Group>& groups, size_t need, bool whole_parent_first,
          std::vector<const AdvertisedDevice*>& picks) {
  while (need > 0) {
    Group* best = nullptr;
    std::tuple<bool, bool, int64_t, int64_t, int64_t> best_key{};
    for (auto& [gpu, g] : groups) {
      if (g.remaining() == 0) continue;
      int64_t affinity = 0;
      for (const auto& [other, h] : groups)
        if (other != gpu && h.in_request > 0) affinity += scorer.weight(gpu, other);
      const auto key =
          std::tuple(g.in_request > 0, whole_parent_first && g.remaining() >= need, g.allocated, affinity,
                     -static_cast<int64_t>(gpu));
      if (!best || key > best_key) {
        best = &g;
        best_key = key;
      }
    }
    while (need > 0 && best->remaining() > 0) {
      picks.push_back(best->free[best->next++]);
      ++best->in_request;
      --need;
    }
  }
}

bool is_mig(const Request& req) {
  return std::any_of(req.available.begin(), req.available.end(), [](const auto& it) { return it.device->mig.has_value(); });
}

// One policy for replicas and MIG devices (NVIDIA's sharedDevicesAllocationPolicy); kgpu's
// migAllocationPolicy, when set, overrides it for MIG.
bool packs(const Config& config, bool mig) {
  if (mig && config.mig_allocation_policy != MigAllocationPolicy::Shared)
    return config.mig_allocation_policy == MigAllocationPolicy::SameParent;
  return config.shared_devices_allocation_policy == SharedAllocationPolicy::Packed;
}

}  // namespace

Result<std::vector<std::string>> preferred_allocation(const Config& config, const TopologyScorer& scorer,
                                                      const Resource& resource,
                                                      const std::vector<std::string>& available,
                                                      const std::vector<std::string>& must_include, int size) {
  auto req = alloc::validate_request(resource, available, must_include, size);
  if (!req) return req.error();
  std::vector<const AdvertisedDevice*> picks;
  const size_t need = req->size - req->must.size();
  if (req->whole_gpus) {
    picks = choose_whole_gpus(scorer, *req);
  } else if (need > 0) {
    auto groups = make_groups(resource, *req);
    const bool mig = is_mig(*req);
    if (packs(config, mig)) pack(scorer, groups, need, mig, picks);
    else spread(scorer, groups, need, picks);
  }
  std::sort(picks.begin(), picks.end(), slot_less);
  std::vector<std::string> out;
  out.reserve(req->size);
  for (const auto* d : req->must) out.push_back(d->id);
  for (const auto* d : picks) out.push_back(d->id);
  return out;
}

Result<std::vector<std::string>> preferred_allocation(const Config& config, const Inventory& inventory,
                                                      const Resource& resource,
                                                      const std::vector<std::string>& available,
                                                      const std::vector<std::string>& must_include, int size) {
  const TopologyScorer scorer(inventory);
  return preferred_allocation(config, scorer, resource, available, must_include, size);
}

}  // namespace kgpu
