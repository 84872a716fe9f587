#include "labels/vendor_labels.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

namespace kgpu {
namespace {

bool label_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

std::string attr(const Gpu& g, const std::string& key) {
  auto it = g.attributes.find(key);
  return it == g.attributes.end() ? "" : it->second;
}

// The first Gpu of each physical device: partitions of one GPU count once, like the labeller does.
std::vector<const Gpu*> physical(const Inventory& inv, Vendor v) {
  std::vector<const Gpu*> out;
  std::set<std::string> seen;
  for (const auto& g : inv.gpus)
    if (g.vendor == v && seen.insert(g.pci_bus_id.empty() ? g.uuid : g.pci_bus_id).second) out.push_back(&g);
  return out;
}

void amd_labels(const Inventory& inv, std::map<std::string, std::string>& out) {
  const auto gpus = physical(inv, Vendor::Amd);
  if (gpus.empty()) return;
  for (const char* name : {"family", "device-id", "product-name", "vram", "cu-count", "simd-count"}) {
    std::map<std::string, int> counts;
    for (const Gpu* g : gpus) {
      std::string v = label_value(attr(*g, name));
      if (!v.empty()) ++counts[v];
    }
    for (const auto& [value, count] : counts) {
      const std::string key = std::string("beta.amd.com/gpu.") + name + "." + value;
      // The name part of a label key is at most 63 characters; longer legacy keys are dropped.
      if (key.size() - std::string("beta.amd.com/").size() <= 63) out[key] = std::to_string(count);
    }
    // The modern single-valued label only when every GPU agrees (the labeller assumes homogeneity).
    if (counts.size() == 1 && counts.begin()->second == static_cast<int>(gpus.size()))
      out[std::string("amd.com/gpu.") + name] = counts.begin()->first;
  }
  bool cps = false, mps = false;
  std::set<std::string> modes;
  for (const Gpu* g : gpus) {
    cps = cps || !attr(*g, "available-compute-partitions").empty();
    mps = mps || !attr(*g, "available-memory-partitions").empty();
    const std::string c = attr(*g, "compute-partition"), m = attr(*g, "memory-partition");
    modes.insert(c.empty() || m.empty() ? "" : c + "_" + m);
  }
  out["amd.com/compute-partitioning-supported"] = cps ? "true" : "false";
  out["amd.com/memory-partitioning-supported"] = mps ? "true" : "false";
  if (modes.size() == 1 && !modes.begin()->empty()) out["amd.com/compute-memory-partition"] = label_value(*modes.begin());
}

// Intel splits long lists over gpu-numbers, gpu-numbers2, ... so each value stays <= 63 chars.
void split_list(const std::string& key, const std::vector<std::string>& items, char sep,
                std::map<std::string, std::string>& out) {
  std::string cur;
  int part = 1;
  auto flush = [&] {
    if (cur.empty()) return;
    out[part == 1 ? key : key + std::to_string(part)] = cur;
    ++part;
    cur.clear();
  };
  for (const auto& item : items) {
    if (!cur.empty() && cur.size() + 1 + item.size() > 63) flush();
    cur += (cur.empty() ? "" : std::string(1, sep)) + item;
  }
  flush();
}

void intel_labels(const Inventory& inv, std::map<std::string, std::string>& out) {
  const auto gpus = physical(inv, Vendor::Intel);
  if (gpus.empty()) return;
  std::map<std::string, int> ids;
  uint64_t mem_max = 0;
  int tiles = 0;
  std::vector<std::pair<int, std::string>> numbers;  // (card number, card number text)
  std::map<int, std::vector<std::string>> by_numa;
  for (const Gpu* g : gpus) {
    std::string cls = attr(*g, "pci-class");
    ++ids[label_value((cls.empty() ? "0300" : cls) + "-" + attr(*g, "device-id"))];
    mem_max = std::max(mem_max, g->memory_bytes);
    const std::string t = attr(*g, "tiles");
    tiles += t.empty() ? 1 : std::max(1, std::atoi(t.c_str()));
    std::string card = attr(*g, "card");
    if (card.rfind("card", 0) == 0) {
      const std::string num = card.substr(4);
      numbers.emplace_back(std::atoi(num.c_str()), num);
      if (g->numa_node) by_numa[*g->numa_node].push_back(num);
    }
  }
  for (const auto& [id, count] : ids) {
    out["gpu.intel.com/device-id." + id + ".present"] = "true";
    out["gpu.intel.com/device-id." + id + ".count"] = std::to_string(count);
  }
  // NFD's data-centre rules: family / product, when every GPU is the same known part.
  std::set<std::string> families, products;
  for (const Gpu* g : gpus) {
    families.insert(label_value(attr(*g, "family")));
    products.insert(label_value(attr(*g, "product-label")));
  }
  if (families.size() == 1 && !families.begin()->empty()) {
    out["gpu.intel.com/family"] = *families.begin();
    if (products.size() == 1 && !products.begin()->empty()) out["gpu.intel.com/product"] = *products.begin();
  }
  out["gpu.intel.com/millicores"] = std::to_string(gpus.size() * 1000);
  if (mem_max > 0) out["gpu.intel.com/memory.max"] = std::to_string(mem_max);
  out["gpu.intel.com/tiles"] = std::to_string(tiles);
  std::sort(numbers.begin(), numbers.end());
  std::vector<std::string> nums;
  for (const auto& n : numbers) nums.push_back(n.second);
  split_list("gpu.intel.com/gpu-numbers", nums, '.', out);
  // "0-0.1_1-2.3": NUMA node, '-', its GPU numbers joined by '.', nodes joined by '_'.
  std::vector<std::string> groups;
  for (const auto& [node, cards] : by_numa) {
    std::string s = std::to_string(node) + "-";
    for (size_t i = 0; i < cards.size(); ++i) s += (i ? "." : "") + cards[i];
    groups.push_back(s);
  }
  if (!groups.empty()) split_list("gpu.intel.com/numa-gpu-map", groups, '_', out);
}

}  // namespace

std::string label_value(const std::string& raw) {
  std::string s;
  for (char c : raw) s.push_back(label_char(c) ? c : '_');
  if (s.size() > 63) s.resize(63);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && !alnum(s.back())) s.pop_back();
  size_t start = 0;
  while (start < s.size() && !alnum(s[start])) ++start;
  return s.substr(start);
}

std::map<std::string, std::string> vendor_labels(const Inventory& inventory) {
  std::map<std::string, std::string> out;
  amd_labels(inventory, out);
  intel_labels(inventory, out);
  return out;
}

}  // namespace kgpu
