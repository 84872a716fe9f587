// explain_preferred: the operator's view of a preferred allocation (`kgpu devices --prefer N`).
#include <set>
#include <sstream>

#include "alloc/preferred.h"

namespace kgpu {
namespace {

struct Totals {
  int64_t nvlinks = 0, pcie = 0, numa = 0, pairs = 0;
};

Totals sum_pairs(const TopologyScorer& scorer, const std::vector<size_t>& gpus) {
  Totals t;
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      const auto a = scorer.affinity(gpus[i], gpus[j]);
      t.nvlinks += a.nvlinks;
      t.pcie += a.pcie;
      t.numa += a.numa;
      ++t.pairs;
    }
  return t;
}

void print_totals(std::ostringstream& os, const Totals& t) {
  os << "nvlink lanes " << t.nvlinks << ", pcie points " << t.pcie << ", same-numa pairs " << t.numa
     << " (over " << t.pairs << " GPU pairs)";
}

}  // namespace

std::string explain_preferred(const Config& config, const Inventory& inventory, const Resource& resource,
                              const std::vector<std::string>& available,
                              const std::vector<std::string>& must_include, int size) {
  const TopologyScorer scorer(inventory);
  auto chosen = preferred_allocation(config, scorer, resource, available, must_include, size);
  if (!chosen) return "error: " + chosen.error().message + "\n";

  std::set<size_t> chosen_gpus, free_gpus;
  for (const auto& id : *chosen)
    if (const auto* d = resource.find(id)) chosen_gpus.insert(d->gpu);
  for (const auto& id : available)
    if (const auto* d = resource.find(id); d && !chosen_gpus.contains(d->gpu)) free_gpus.insert(d->gpu);

  std::ostringstream os;
  os << "resource: " << resource.name << "\nrequest: size " << size << ", must-include " << must_include.size()
     << ", available " << available.size() << "\nchosen:";
  for (const auto& id : *chosen) os << ' ' << id;
  os << "\ngpus:";
  for (size_t g : chosen_gpus) {
    os << ' ' << g;
    if (g < inventory.gpus.size() && inventory.gpus[g].numa_node) os << "(numa " << *inventory.gpus[g].numa_node << ')';
  }
  os << "\ntopology: " << (scorer.has_topology() ? "nvlink + pcie + numa" : "incomplete, scored from NUMA nodes only")
     << (inventory.topology.nvswitch ? " (nvswitch)" : "") << "\nscore: ";
  print_totals(os, sum_pairs(scorer, {chosen_gpus.begin(), chosen_gpus.end()}));
  os << "\nleft free: " << free_gpus.size() << " GPUs, ";
  print_totals(os, sum_pairs(scorer, {free_gpus.begin(), free_gpus.end()}));
  os << '\n';
  return os.str();
}

}  // namespace kgpu
