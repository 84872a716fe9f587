// The simulated node behind the NVML entry points: device handles, MIG objects, run-time state
// (lost GPUs, injected call failures) and event sets. Not thread-safe by itself: the entry points
// serialise every access with one mutex (api_state.h), which the event waits also use.
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fleet.h"

// NVML's opaque handle types, defined here as the simulator's objects.
struct nvmlDevice_st {
  unsigned gpu = 0;                 // fleet GPU index (the parent, for a MIG device)
  int gi = -1;                      // position in Gpu::mig.instances, -1 for a full GPU
  int ci = -1;                      // position in GpuInstance::compute_instances
  nvmlDevice_st* parent = nullptr;  // set for MIG devices
  bool is_mig() const { return parent != nullptr; }
};

struct nvmlGpuInstance_st {
  nvmlDevice_st* device = nullptr;
  unsigned gi = 0;
};

struct nvmlComputeInstance_st {
  nvmlGpuInstance_st* gpu_instance = nullptr;
  unsigned ci = 0;
  nvmlDevice_st* mig_device = nullptr;
};

struct nvmlEventSet_st {
  std::vector<std::pair<unsigned, unsigned long long>> registrations;  // (GPU index, event mask)
  std::deque<nvmlEventData_t> pending;
  std::condition_variable cv;
};

namespace kgpu::fake_nvml {

class Simulator {
 public:
  // ack_path: where acknowledgements for the control channel go ("" = none).
  Simulator(Fleet fleet, std::string ack_path);

  const Fleet& fleet() const { return fleet_; }
  const Gpu& gpu(const nvmlDevice_st& d) const { return fleet_.gpus[d.gpu]; }
  const GpuInstance& gpu_instance(const nvmlDevice_st& d) const;
  const ComputeInstance& compute_instance(const nvmlDevice_st& d) const;

  size_t gpu_count() const { return gpus_.size(); }
  nvmlDevice_st* gpu_handle(unsigned index) { return gpus_[index].get(); }
  const std::vector<nvmlDevice_st*>& mig_handles(unsigned gpu_index) const { return mig_order_[gpu_index]; }
  nvmlGpuInstance_st* gi_handle(unsigned gpu_index, unsigned gi) { return gis_[gpu_index][gi].get(); }
  nvmlComputeInstance_st* ci_handle(unsigned gpu_index, unsigned gi, unsigned ci) {
    return cis_[gpu_index][gi][ci].get();
  }

  bool valid(const nvmlDevice_st* d) const { return d != nullptr && devices_.count(d) != 0; }
  bool valid(const nvmlGpuInstance_st* gi) const { return gi != nullptr && gpu_instances_.count(gi) != 0; }
  bool valid(const nvmlComputeInstance_st* ci) const { return ci != nullptr && compute_instances_.count(ci) != 0; }
  bool valid_set(nvmlEventSet_st* set) const;

  // GPU or MIG device by uuid; nullptr when unknown.
  nvmlDevice_st* find_uuid(const std::string& uuid);
  nvmlDevice_st* find_bus(const PciAddress& address);

  // The run-time gate every device call passes: lost GPU, injected or configured call failures.
  nvmlReturn_t gate(const nvmlDevice_st& d, const char* call) const;
  // The gate of the handle-lookup calls: a configured handle failure, then lost.
  nvmlReturn_t handle_gate(unsigned gpu_index) const;

  // Dynamic MIG (simulator_mig.cpp): GPU and compute instances made and destroyed at run time, with
  // NVML's placement rules. The handles of the other instances stay valid; the destroyed ones'
  // turn invalid (INVALID_ARGUMENT), as a stale handle does on the real driver.
  nvmlReturn_t create_gpu_instance(unsigned gpu_index, const GiProfile& profile, unsigned placement,
                                   nvmlGpuInstance_st** out);
  nvmlReturn_t create_compute_instance(nvmlGpuInstance_st* gi, unsigned slices, nvmlComputeInstance_st** out);
  nvmlReturn_t destroy_gpu_instance(nvmlGpuInstance_st* gi);
  nvmlReturn_t destroy_compute_instance(nvmlComputeInstance_st* ci);
  // How many more instances of `profile` fit on the GPU as it is now (any placement).
  unsigned remaining_capacity(unsigned gpu_index, const GiProfile& profile) const;
  // nvmlDeviceSetMigMode: takes effect at once on Hopper and later, only pending (reset needed) before.
  nvmlReturn_t set_mig_mode(unsigned gpu_index, unsigned mode, nvmlReturn_t* activation);

  nvmlEventSet_st* create_set();
  void free_set(nvmlEventSet_st* set);
  nvmlReturn_t register_events(const nvmlDevice_st& d, unsigned long long mask, nvmlEventSet_st* set);

  // Applies one control-channel line. Unknown or malformed lines are reported on stderr and ignored.
  void apply_command(const std::string& line);

  // Acknowledges "waiting" on the control channel: a thread is about to block in nvmlEventSetWait.
  void note_waiting() const { ack("waiting"); }

  // After the last nvmlShutdown: waiters return UNINITIALIZED.
  void deactivate();
  bool active() const { return active_; }

 private:
  void deliver(unsigned gpu_index, unsigned long long type, unsigned long long data, unsigned gi, unsigned ci);
  void ack(const std::string& line) const;
  bool resolve_event_target(const std::string& uuid, unsigned& gpu_index, unsigned& gi_id, unsigned& ci_id);

  Fleet fleet_;
  std::string ack_path_;
  bool active_ = true;
  std::vector<std::unique_ptr<nvmlDevice_st>> gpus_;
  std::vector<std::vector<std::unique_ptr<nvmlDevice_st>>> migs_;   // per GPU, all MIG devices
  std::vector<std::vector<nvmlDevice_st*>> mig_order_;              // per GPU, enumeration order
  std::vector<std::vector<std::unique_ptr<nvmlGpuInstance_st>>> gis_;
  std::vector<std::vector<std::vector<std::unique_ptr<nvmlComputeInstance_st>>>> cis_;
  std::vector<std::unique_ptr<nvmlEventSet_st>> sets_;
  std::set<unsigned> lose_at_event_set_;  // GPUs that turn lost at the next nvmlEventSetCreate
  std::unordered_set<const nvmlDevice_st*> devices_;
  std::unordered_set<const nvmlGpuInstance_st*> gpu_instances_;
  std::unordered_set<const nvmlComputeInstance_st*> compute_instances_;
  unsigned long long created_serial_ = 0;  // instances made at run time, for their uuids
};

// "nvmlDeviceGetPciInfo_v3" -> "nvmlDeviceGetPciInfo".
std::string base_call_name(const std::string& call);

}  // namespace kgpu::fake_nvml
