#include "sim/sim_steps.h"
#include "core/strings.h"

#include <atomic>
#include <sstream>

namespace kgpu::sim {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

bool is_count(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

Status wait_resource(KubeletSim& sim, const std::string& resource, size_t count, std::chrono::milliseconds timeout) {
  bool ok = sim.wait_for(
      [&](const Snapshot& s) {
        const auto* r = s.find(resource);
        return r && r->connected && r->updates > 0 && (count == 0 || r->healthy_count() >= count);
      },
      timeout);
  if (!ok) return Error::unavailable("timed out waiting for " + resource + " to be streaming");
  return ok_status();
}

}  // namespace

void print_edits(const ContainerEdits& edits, std::ostream& out, const std::string& indent) {
  for (const auto& [k, v] : edits.envs) out << indent << "env         " << k << "=" << v << "\n";
  for (const auto& m : edits.mounts)
    out << indent << "mount       " << m.host_path << " -> " << m.container_path << (m.read_only ? " (ro)" : " (rw)")
        << "\n";
  for (const auto& d : edits.devices)
    out << indent << "device      " << d.host_path << " -> " << d.container_path << " (" << d.permissions << ")\n";
  for (const auto& [k, v] : edits.annotations) out << indent << "annotation  " << k << "=" << v << "\n";
  for (const auto& c : edits.cdi_devices) out << indent << "cdi device  " << c << "\n";
  if (edits == ContainerEdits{}) out << indent << "(nothing)\n";
}

Result<std::chrono::microseconds> restart_and_wait(KubeletSim& sim, std::chrono::milliseconds timeout) {
  auto before = sim.snapshot();
  if (auto st = sim.restart(); !st) return st.error();
  bool ok = sim.wait_for(
      [&](const Snapshot& s) {
        for (const auto& [name, r] : before.resources) {
          const auto* now = s.find(name);
          if (!now || now->registrations <= r.registrations || !now->connected) return false;
        }
        return true;
      },
      timeout);
  if (!ok) return Error::unavailable("plugins did not re-register within " + std::to_string(timeout.count()) + " ms");
  auto after = sim.snapshot();
  std::chrono::steady_clock::time_point last = after.last_restart;
  for (const auto& [name, r] : before.resources) last = std::max(last, after.find(name)->last_registered);
  return std::chrono::duration_cast<std::chrono::microseconds>(last - after.last_restart);
}

Status run_sim_steps(KubeletSim& sim, const std::vector<std::string>& steps, std::chrono::milliseconds timeout,
                     std::ostream& out) {
  for (const auto& line : steps) {
    auto words = split(line, ' ');
    if (words.empty() || words[0][0] == '#') continue;
    const std::string& verb = words[0];
    if (verb == "exit") return ok_status();
    if (verb == "restart") {
      out << "[kubelet-sim] simulating a kubelet restart" << std::endl;
      auto took = restart_and_wait(sim, timeout);
      if (!took) return took.error();
      out << "[kubelet-sim] every plugin re-registered " << took->count() / 1000.0 << " ms after the restart"
          << std::endl;
      continue;
    }
    if (verb == "end-pod") {
      if (words.size() < 2) return Error::invalid("step \"" + line + "\" needs a pod name");
      sim.delete_pod("default", words[1]);
      out << "[kubelet-sim] pod default/" << words[1] << " ended" << std::endl;
      continue;
    }
    if (words.size() < 2) return Error::invalid("step \"" + line + "\" needs a resource name");
    const std::string& resource = words[1];
    if (verb == "wait") {
      size_t count = words.size() > 2 && is_count(words[2]) ? std::stoul(words[2]) : 0;
      if (auto st = wait_resource(sim, resource, count, timeout); !st) return st;
    } else if (verb == "allocate" || verb == "prefer") {
      if (words.size() < 3) return Error::invalid("step \"" + line + "\" needs IDs or a count");
      if (auto st = wait_resource(sim, resource, 0, timeout); !st) return st;
      std::vector<std::string> ids;
      if (is_count(words[2])) {
        auto healthy = sim.snapshot().find(resource)->healthy_ids();
        std::vector<std::string> must = words.size() > 3 ? split(words[3], ',') : std::vector<std::string>{};
        auto preferred = sim.preferred(resource, healthy, must, std::stoi(words[2]));
        if (!preferred) return Error::invalid("GetPreferredAllocation: " + preferred.error().message);
        out << "[kubelet-sim] preferred " << resource << " x" << words[2] << ": " << join(*preferred, ",") << std::endl;
        ids = *preferred;
        if (verb == "prefer") continue;
      } else {
        ids = split(words[2], ',');
      }
      // As a kubelet does, the devices then belong to a running pod, listed by PodResources.
      static std::atomic<int> pods{0};
      const std::string pod = "pod-" + std::to_string(++pods);
      auto edits = sim.run_pod("default", pod, resource, ids);
      if (!edits) {
        out << "[kubelet-sim] Allocate " << resource << " " << join(ids, ",") << " failed: " << edits.error().message
            << std::endl;
        return Error::invalid("Allocate failed: " + edits.error().message);
      }
      out << "[kubelet-sim] Allocate " << resource << " " << join(ids, ",") << " for pod default/" << pod << ":\n";
      print_edits(*edits, out);
      out.flush();
    } else {
      return Error::invalid("unknown step \"" + verb + "\" (wait, allocate, prefer, end-pod, restart, exit)");
    }
  }
  return ok_status();
}

}  // namespace kgpu::sim
