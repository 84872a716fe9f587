#include "simulator.h"

#include "telemetry_values.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kgpu::fake_nvml {

std::string base_call_name(const std::string& call) {
  auto pos = call.rfind("_v");
  if (pos == std::string::npos || pos + 2 >= call.size()) return call;
  bool digits = std::all_of(call.begin() + static_cast<std::ptrdiff_t>(pos) + 2, call.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
  return digits ? call.substr(0, pos) : call;
}

Simulator::Simulator(Fleet fleet, std::string ack_path) : fleet_(std::move(fleet)), ack_path_(std::move(ack_path)) {
  const size_t n = fleet_.gpus.size();
  migs_.resize(n);
  mig_order_.resize(n);
  gis_.resize(n);
  cis_.resize(n);
  for (unsigned g = 0; g < n; ++g) {
    auto dev = std::make_unique<nvmlDevice_st>();
    dev->gpu = g;
    devices_.insert(dev.get());
    gpus_.push_back(std::move(dev));
  }
  for (unsigned g = 0; g < n; ++g) {
    const auto& instances = fleet_.gpus[g].mig.instances;
    cis_[g].resize(instances.size());
    for (unsigned gi = 0; gi < instances.size(); ++gi) {
      auto gi_handle = std::make_unique<nvmlGpuInstance_st>();
      gi_handle->device = gpus_[g].get();
      gi_handle->gi = gi;
      gpu_instances_.insert(gi_handle.get());
      for (unsigned ci = 0; ci < instances[gi].compute_instances.size(); ++ci) {
        auto mig = std::make_unique<nvmlDevice_st>();
        mig->gpu = g;
        mig->gi = static_cast<int>(gi);
        mig->ci = static_cast<int>(ci);
        mig->parent = gpus_[g].get();
        auto ci_handle = std::make_unique<nvmlComputeInstance_st>();
        ci_handle->gpu_instance = gi_handle.get();
        ci_handle->ci = ci;
        ci_handle->mig_device = mig.get();
        devices_.insert(mig.get());
        compute_instances_.insert(ci_handle.get());
        mig_order_[g].push_back(mig.get());
        migs_[g].push_back(std::move(mig));
        cis_[g][gi].push_back(std::move(ci_handle));
      }
      gis_[g].push_back(std::move(gi_handle));
    }
  }
}

const GpuInstance& Simulator::gpu_instance(const nvmlDevice_st& d) const {
  return fleet_.gpus[d.gpu].mig.instances[static_cast<size_t>(d.gi)];
}

const ComputeInstance& Simulator::compute_instance(const nvmlDevice_st& d) const {
  return gpu_instance(d).compute_instances[static_cast<size_t>(d.ci)];
}

bool Simulator::valid_set(nvmlEventSet_st* set) const {
  return std::any_of(sets_.begin(), sets_.end(), [&](const auto& s) { return s.get() == set; });
}

nvmlDevice_st* Simulator::find_uuid(const std::string& uuid) {
  for (unsigned g = 0; g < fleet_.gpus.size(); ++g) {
    if (fleet_.gpus[g].uuid == uuid) return gpus_[g].get();
    for (nvmlDevice_st* mig : mig_order_[g])
      if (compute_instance(*mig).uuid == uuid) return mig;
  }
  return nullptr;
}

nvmlDevice_st* Simulator::find_bus(const PciAddress& a) {
  for (unsigned g = 0; g < fleet_.gpus.size(); ++g) {
    const PciAddress& p = fleet_.gpus[g].pci;
    if (p.domain == a.domain && p.bus == a.bus && p.device == a.device && p.function == a.function)
      return gpus_[g].get();
  }
  return nullptr;
}

nvmlReturn_t Simulator::gate(const nvmlDevice_st& d, const char* call) const {
  const Gpu& g = fleet_.gpus[d.gpu];
  if (g.lost) return NVML_ERROR_GPU_IS_LOST;
  const std::string name = call;
  const std::string base = base_call_name(name);
  for (const auto& f : g.call_failures)
    if (f.call == name || f.call == base) return f.code;
  return NVML_SUCCESS;
}

nvmlReturn_t Simulator::handle_gate(unsigned gpu_index) const {
  const Gpu& g = fleet_.gpus[gpu_index];
  if (g.handle_failure) return *g.handle_failure;
  if (g.lost) return NVML_ERROR_GPU_IS_LOST;
  return NVML_SUCCESS;
}

nvmlEventSet_st* Simulator::create_set() {
  // A GPU armed by `lose_at_event_set` drops off now: after discovery, before the health monitor
  // (the only caller of nvmlEventSetCreate) registers its events.
  for (unsigned g : lose_at_event_set_) fleet_.gpus[g].lost = true;
  lose_at_event_set_.clear();
  sets_.push_back(std::make_unique<nvmlEventSet_st>());
  return sets_.back().get();
}

void Simulator::free_set(nvmlEventSet_st* set) {
  sets_.erase(std::remove_if(sets_.begin(), sets_.end(), [&](const auto& s) { return s.get() == set; }), sets_.end());
}

nvmlReturn_t Simulator::register_events(const nvmlDevice_st& d, unsigned long long mask, nvmlEventSet_st* set) {
  // Like the real library, event registration is per physical GPU; MIG events arrive on the
  // parent with GPU/compute instance ids.
  if (d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
  const Gpu& g = fleet_.gpus[d.gpu];
  if ((mask & ~g.supported_events) != 0) return NVML_ERROR_NOT_SUPPORTED;
  set->registrations.emplace_back(d.gpu, mask);
  ack("registered " + g.uuid + " " + std::to_string(mask));
  return NVML_SUCCESS;
}

void Simulator::deliver(unsigned gpu_index, unsigned long long type, unsigned long long data, unsigned gi,
                        unsigned ci) {
  for (auto& set : sets_) {
    bool wanted = std::any_of(set->registrations.begin(), set->registrations.end(), [&](const auto& r) {
      return r.first == gpu_index && (r.second & type) != 0;
    });
    if (!wanted) continue;
    nvmlEventData_t event{};
    event.device = gpus_[gpu_index].get();
    event.eventType = type;
    event.eventData = data;
    event.gpuInstanceId = gi;
    event.computeInstanceId = ci;
    set->pending.push_back(event);
    set->cv.notify_all();
  }
}

void Simulator::deactivate() {
  active_ = false;
  for (auto& set : sets_) set->cv.notify_all();
}

void Simulator::ack(const std::string& line) const {
  if (ack_path_.empty()) return;
  int fd = ::open(ack_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = line + "\n";
  // One write per line: O_APPEND keeps lines from several processes whole.
  [[maybe_unused]] ssize_t written = ::write(fd, text.data(), text.size());
  ::close(fd);
}

bool Simulator::resolve_event_target(const std::string& uuid, unsigned& gpu_index, unsigned& gi_id,
                                     unsigned& ci_id) {
  nvmlDevice_st* d = find_uuid(uuid);
  if (!d) return false;
  gpu_index = d->gpu;
  if (d->is_mig()) {
    gi_id = gpu_instance(*d).id;
    ci_id = compute_instance(*d).id;
  }
  return true;
}

void Simulator::apply_command(const std::string& line) {
  std::istringstream in(line);
  std::string verb;
  if (!(in >> verb) || verb[0] == '#') return;
  auto complain = [&](const std::string& why) { std::fprintf(stderr, "fake-nvml: control: %s: '%s'\n", why.c_str(), line.c_str()); };
  std::string uuid;
  if (verb == "sync") {
    std::string token;
    in >> token;
    ack("synced " + token);
    return;
  }
  if (!(in >> uuid)) return complain("missing uuid");
  unsigned gpu_index = 0, gi = kNoId, ci = kNoId;
  if (!resolve_event_target(uuid, gpu_index, gi, ci)) return complain("unknown uuid " + uuid);
  auto read_instance_ids = [&]() {
    unsigned g = 0, c = 0;
    if (in >> g >> c) {
      gi = g;
      ci = c;
    }
  };
  if (verb == "xid") {
    unsigned long long xid = 0;
    if (!(in >> xid)) return complain("missing xid");
    read_instance_ids();
    deliver(gpu_index, nvmlEventTypeXidCriticalError, xid, gi, ci);
  } else if (verb == "ecc_double" || verb == "ecc_single") {
    read_instance_ids();
    deliver(gpu_index, verb == "ecc_double" ? nvmlEventTypeDoubleBitEccError : nvmlEventTypeSingleBitEccError, 0, gi,
            ci);
  } else if (verb == "event") {
    std::string mask_text;
    unsigned long long data = 0;
    if (!(in >> mask_text >> data)) return complain("expected: event <uuid> <type-mask> <data> [gi ci]");
    char* end = nullptr;
    unsigned long long mask = std::strtoull(mask_text.c_str(), &end, 0);
    if (end == mask_text.c_str() || *end != '\0') return complain("bad event mask " + mask_text);
    read_instance_ids();
    deliver(gpu_index, mask, data, gi, ci);
  } else if (verb == "lost") {
    int lost = 0;
    if (!(in >> lost)) return complain("expected: lost <uuid> 1|0");
    fleet_.gpus[gpu_index].lost = lost != 0;
    lose_at_event_set_.erase(gpu_index);
  } else if (verb == "lose_at_event_set") {
    lose_at_event_set_.insert(gpu_index);
  } else if (verb == "fail") {
    std::string call, code_text;
    if (!(in >> call >> code_text)) return complain("expected: fail <uuid> <call> <code>");
    auto code = parse_return_code(code_text);
    if (!code) return complain("unknown return code " + code_text);
    auto& failures = fleet_.gpus[gpu_index].call_failures;
    failures.erase(std::remove_if(failures.begin(), failures.end(), [&](const CallFailure& f) { return f.call == call; }),
                   failures.end());
    if (*code != NVML_SUCCESS) failures.insert(failures.begin(), CallFailure{call, *code});
  } else if (verb == "set") {
    std::string key, why;
    unsigned long long value = 0;
    if (!(in >> key >> value)) return complain("expected: set <gpu-uuid> <reading> <value>");
    if (!set_reading(fleet_.gpus[gpu_index], key, value, why)) return complain(why);
  } else {
    complain("unknown command " + verb);
  }
}

}  // namespace kgpu::fake_nvml
