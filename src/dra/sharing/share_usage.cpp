#include "dra/sharing/share_usage.h"

#include <algorithm>

#include "dra/model/publication.h"

namespace kgpu::dra {

std::vector<SharedGpuUse> shared_gpu_use(const Inventory& inventory, const std::set<std::string>& shareable,
                                         const std::vector<PreparedClaim>& prepared) {
  std::vector<SharedGpuUse> out;
  auto entry = [&](const std::string& uuid) -> SharedGpuUse& {
    for (auto& u : out)
      if (u.gpu_uuid == uuid) return u;
    SharedGpuUse u;
    u.gpu_uuid = uuid;
    for (const auto& g : inventory.gpus)
      if (g.uuid == uuid) u.memory_bytes = g.memory_bytes;
    out.push_back(std::move(u));
    return out.back();
  };
  for (const auto& g : inventory.gpus)
    if (shareable.contains(g.uuid)) entry(g.uuid);
  std::vector<const PreparedClaim*> claims;
  for (const auto& c : prepared) claims.push_back(&c);
  std::sort(claims.begin(), claims.end(), [](const PreparedClaim* a, const PreparedClaim* b) { return a->ref.uid < b->ref.uid; });
  for (const PreparedClaim* c : claims)
    for (const auto& s : c->shares) {
      SharedGpuUse& u = entry(s.gpu_uuid);
      u.device = s.device;
      u.shared_bytes += s.memory_bytes;
      u.shares.push_back({c->ref.ns + "/" + c->ref.name + " (" + c->ref.uid + ")", s.memory_bytes, s.multiprocessors,
                          s.active_thread_percentage});
    }
  // In inventory order; a GPU that is gone (its shares still recorded) after the others.
  auto position = [&](const SharedGpuUse& u) {
    for (size_t i = 0; i < inventory.gpus.size(); ++i)
      if (inventory.gpus[i].uuid == u.gpu_uuid) return i;
    return inventory.gpus.size();
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const SharedGpuUse& a, const SharedGpuUse& b) { return position(a) < position(b); });
  return out;
}

void append_share_metrics(const std::vector<SharedGpuUse>& use, std::string& out) {
  if (use.empty()) return;
  out += "# HELP kgpu_dra_gpu_memory_shared_bytes GPU memory held by the prepared DRA memory shares of the GPU.\n";
  out += "# TYPE kgpu_dra_gpu_memory_shared_bytes gauge\n";
  for (const auto& u : use)
    out += "kgpu_dra_gpu_memory_shared_bytes{gpu=\"" + u.gpu_uuid + "\"} " + std::to_string(u.shared_bytes) + "\n";
  out += "# HELP kgpu_dra_gpu_memory_shares Prepared DRA memory shares of the GPU (MPS clients of its daemon).\n";
  out += "# TYPE kgpu_dra_gpu_memory_shares gauge\n";
  for (const auto& u : use)
    out += "kgpu_dra_gpu_memory_shares{gpu=\"" + u.gpu_uuid + "\"} " + std::to_string(u.shares.size()) + "\n";
}

nlohmann::json share_use_json(const std::vector<SharedGpuUse>& use) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& u : use) {
    nlohmann::json shares = nlohmann::json::array();
    for (const auto& s : u.shares) {
      nlohmann::json j = {{"claim", s.claim}, {"memoryBytes", s.memory_bytes}};
      if (s.multiprocessors) j["multiprocessors"] = *s.multiprocessors;
      if (s.active_thread_percentage) j["activeThreadPercentage"] = *s.active_thread_percentage;
      shares.push_back(std::move(j));
    }
    out.push_back({{"gpu", u.gpu_uuid},
                   {"device", u.device},
                   {"memoryBytes", u.memory_bytes},
                   {"sharedBytes", u.shared_bytes},
                   {"freeBytes", u.memory_bytes > u.shared_bytes ? u.memory_bytes - u.shared_bytes : 0},
                   {"shares", std::move(shares)}});
  }
  return out;
}

std::string share_use_text(const std::vector<SharedGpuUse>& use) {
  std::string out;
  for (const auto& u : use) {
    const uint64_t left = u.memory_bytes > u.shared_bytes ? u.memory_bytes - u.shared_bytes : 0;
    out += "  " + u.gpu_uuid + (u.device.empty() ? "" : " " + u.device) + ": " + std::to_string(u.shares.size()) +
           (u.shares.size() == 1 ? " share holds " : " shares hold ") + binary_si_quantity(u.shared_bytes) + " of " +
           binary_si_quantity(u.memory_bytes) + ", " + binary_si_quantity(left) + " left\n";
    for (const auto& s : u.shares) {
      out += "    " + s.claim + "  memory " + binary_si_quantity(s.memory_bytes);
      if (s.multiprocessors) out += "  multiprocessors " + std::to_string(*s.multiprocessors);
      if (s.active_thread_percentage) out += "  threads " + std::to_string(*s.active_thread_percentage) + "%";
      out += "\n";
    }
  }
  return out;
}

}  // namespace kgpu::dra
