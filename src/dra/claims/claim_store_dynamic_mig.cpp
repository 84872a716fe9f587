// Dynamic MIG in the claim store (issue 42): a claim's placements get their GPU and compute
// instances at prepare, before the CDI spec naming their nodes is written, and lose them at
// unprepare; the checkpoint records each instance's intent before NVML is asked and what was made
// before the kubelet is answered, so a restart destroys exactly what kgpu made for no prepared
// claim. The conflict checks here are defence in depth behind the scheduler's counters.
#include <algorithm>
#include <set>

#include "dra/claims/claim_store.h"
#include "dra/model/claim.h"

namespace kgpu::dra {

namespace {

struct DynamicDevice {
  const DynamicMigLayout* layout = nullptr;
  const DynamicMigDevice* device = nullptr;
};

std::optional<DynamicDevice> find_dynamic(const NodeDevices& node, const std::string& name) {
  for (const auto& layout : node.dynamic_mig)
    for (const auto& d : layout.devices)
      if (d.name == name) return DynamicDevice{&layout, &d};
  return std::nullopt;
}

uint64_t capacity_of(const DynamicMigDevice& d, const char* name) {
  for (const auto& c : d.capacity)
    if (c.name == name) return c.value;
  return 0;
}

// The node as prepare_claim sees it once the instances exist: each a MIG device of its parent in
// the inventory, and the placement's published device naming it by uuid (as a static MIG device
// is named), so its CDI edits and NVIDIA_VISIBLE_DEVICES are a static MIG device's.
std::shared_ptr<const NodeDevices> with_instances(const NodeDevices& node,
                                                  const std::vector<const MigInstanceRecord*>& records) {
  auto out = std::make_shared<NodeDevices>(node);
  for (const MigInstanceRecord* r : records) {
    const auto dynamic = find_dynamic(node, r->device);
    for (auto& gpu : out->inventory.gpus) {
      if (gpu.uuid != r->placement.parent_uuid) continue;
      MigDevice mig;
      mig.uuid = r->made->mig_uuid;
      mig.index = static_cast<int>(gpu.mig_devices.size());
      mig.gpu_instance_id = static_cast<int>(r->made->gpu_instance_id);
      mig.compute_instance_id = static_cast<int>(r->made->compute_instance_id);
      mig.gi_profile_id = static_cast<int>(r->placement.profile_id);
      mig.placement_start = static_cast<int>(r->placement.start);
      mig.placement_size = static_cast<int>(r->placement.size);
      if (dynamic) {
        mig.profile = dynamic->device->profile;
        mig.memory_bytes = capacity_of(*dynamic->device, "memory");
        mig.multiprocessors = static_cast<int>(capacity_of(*dynamic->device, "multiprocessors"));
      }
      mig.capability_nodes = r->made->capability_nodes;
      gpu.mig_devices.push_back(std::move(mig));
    }
    for (auto& d : out->pool.devices) {
      if (d.name != r->device) continue;
      // The uuid the device is found by is the new MIG device's, in the device's own list (the
      // shared list, looked up first, may carry the parent's).
      if (d.gpu_attributes) {
        auto shared = std::make_shared<Attributes>(*d.gpu_attributes);
        std::erase_if(*shared, [](const Attribute& a) { return a.name == "uuid"; });
        d.gpu_attributes = std::move(shared);
      }
      std::erase_if(d.attributes, [](const Attribute& a) { return a.name == "uuid"; });
      auto at = std::lower_bound(d.attributes.begin(), d.attributes.end(), std::string_view("uuid"),
                                 [](const Attribute& a, std::string_view n) { return a.name < n; });
      d.attributes.insert(at, Attribute{"uuid", r->made->mig_uuid});
    }
  }
  return out;
}

std::string describe_placement(const MigInstanceRecord& r) {
  return r.device + " (GPU " + r.placement.parent_uuid + ", profile " + std::to_string(r.placement.profile_id) +
         " at memory slice " + std::to_string(r.placement.start) + ")";
}

}  // namespace

DynamicMigPrepare::DynamicMigPrepare(DynamicMigPrepare&& other) noexcept
    : store_(other.store_), uid_(std::move(other.uid_)), devices_(std::move(other.devices_)),
      made_(std::move(other.made_)), registered_(other.registered_) {
  other.made_.clear();
  other.registered_ = false;
}

DynamicMigPrepare::~DynamicMigPrepare() {
  if (!store_) return;
  if (!made_.empty()) store_->abandon_dynamic_mig(uid_, made_);
  if (registered_) {
    std::lock_guard lock(store_->mu_);
    store_->mig_preparing_.erase(uid_);
  }
}

std::optional<Error> ClaimStore::check_dynamic_whole_gpus_locked(const std::string& uid,
                                                                 const std::vector<std::string>& parents) const {
  for (const auto& parent : parents) {
    for (const auto& r : mig_records_)
      if (r.claim_uid != uid && r.placement.parent_uuid == parent)
        return Error::precondition("GPU " + parent + " is prepared whole, but claim " + r.claim_uid + " holds MIG device " +
                                   r.device + " on it");
    if (!mig_control_) continue;
    auto instances = mig_control_->gpu_instances(parent);
    if (!instances) return Error{instances.error().code, "GPU " + parent + ": " + instances.error().message};
    if (!instances->empty())
      return Error::precondition("GPU " + parent + " cannot be prepared whole: it holds " +
                                 std::to_string(instances->size()) + " MIG instance(s)");
    // Empty, but MIG mode may be on (an operator's, or a crash between kgpu's last destroy and the
    // switch): the container would get a GPU CUDA cannot use. Off first, as unprepare leaves it.
    if (const std::string why = mig_control_->disable_mig_if_empty(parent); !why.empty())
      return Error::unavailable("GPU " + parent + " cannot be prepared whole: MIG mode could not be switched off (" +
                                why + ")");
  }
  return std::nullopt;
}

Result<DynamicMigPrepare> ClaimStore::begin_dynamic_mig(const ResourceClaim& claim,
                                                        std::shared_ptr<const NodeDevices> devices) {
  const std::string& uid = claim.ref.uid;
  const std::string who = "cannot prepare ResourceClaim " + claim.ref.ns + "/" + claim.ref.name + " (" + uid + ")";
  DynamicMigPrepare out(this, uid, devices);
  if (devices->dynamic_mig.empty()) return out;
  auto results = results_for(claim, devices->pool.driver, devices->pool.pool);
  if (!results) return out;  // prepare_claim says why
  std::vector<std::pair<std::string, MigPlacement>> placements;  // (device, where)
  std::vector<std::string> whole;                                 // parents claimed whole
  for (const auto& r : *results) {
    const auto dynamic = find_dynamic(*devices, r.device);
    if (!dynamic) continue;
    if (dynamic->device->profile.empty()) {
      whole.push_back(dynamic->layout->gpu_uuid);
      continue;
    }
    if (std::any_of(placements.begin(), placements.end(), [&](const auto& p) { return p.first == r.device; })) continue;
    placements.push_back({r.device, MigPlacement{dynamic->layout->gpu_uuid, dynamic->device->profile_id,
                                                 dynamic->device->placement_start, dynamic->device->placement_size}});
  }
  if (placements.empty() && whole.empty()) return out;

  std::vector<std::string> intents;  // devices whose instance this call makes
  {
    std::unique_lock lock(mu_);
    if (auto e = check_dynamic_whole_gpus_locked(uid, whole)) return Error{e->code, who + ": " + e->message};
    if (placements.empty()) return out;
    if (!mig_control_)
      return Error::unavailable(who + ": device " + placements.front().first +
                                " is a dynamic MIG placement, and NVML's MIG calls are not available (yet)");
    if (mig_preparing_.contains(uid)) return Error::unavailable(who + ": another call is preparing it; retry");
    for (const auto& [device, where] : placements) {
      for (const auto& r : mig_records_)
        if (r.device == device && r.claim_uid != uid)
          return Error::precondition(who + ": dynamic MIG device " + device + " is held by claim " + r.claim_uid);
      for (const auto& [other_uid, other] : claims_) {
        if (other_uid == uid) continue;
        for (const auto& d : other.devices)
          if (d.whole_gpu && d.gpu_uuid == where.parent_uuid && !d.admin_access)
            return Error::precondition(who + ": dynamic MIG device " + device + " is on GPU " + where.parent_uuid +
                                       ", which claim " + other_uid + " holds whole");
      }
    }
    std::vector<MigInstanceRecord> added;
    for (const auto& placement : placements) {
      // Not a structured binding: lambdas capture it below (clang 14, the fuzz build, refuses that).
      const std::string& device = placement.first;
      const MigPlacement& where = placement.second;
      const bool recorded = std::any_of(mig_records_.begin(), mig_records_.end(), [&](const MigInstanceRecord& r) {
        return r.claim_uid == uid && r.device == device && r.made;
      });
      if (recorded) continue;  // made for this claim before (its spec went missing): used again
      // An intent of an earlier try that the start-up clean-up could not resolve: its instance may
      // exist, so the record stays and this prepare waits (the next start retries the clean-up).
      const bool unresolved = std::any_of(mig_records_.begin(), mig_records_.end(), [&](const MigInstanceRecord& r) {
        return r.claim_uid == uid && r.device == device && !r.made;
      });
      if (unresolved)
        return Error::unavailable(who + ": dynamic MIG device " + device +
                                  " has an instance from an earlier try that could not be cleaned up; see the log");
      MigInstanceRecord record;
      record.claim_uid = uid;
      record.device = device;
      record.placement = where;
      auto before = mig_control_->gpu_instances(where.parent_uuid);
      if (!before) return Error{before.error().code, who + ": " + before.error().message};
      for (const auto& gi : *before) record.gpu_instances_before.push_back(gi.id);
      added.push_back(std::move(record));
    }
    mig_preparing_.insert(uid);
    out.registered_ = true;
    if (!added.empty()) {
      for (auto& r : added) {
        intents.push_back(r.device);
        mig_records_.push_back(std::move(r));
      }
      // The intents are durable before NVML is asked: a kgpu killed inside the create finds them.
      auto undo = [&] {
        std::erase_if(mig_records_, [&](const MigInstanceRecord& r) {
          return r.claim_uid == uid && !r.made &&
                 std::find(intents.begin(), intents.end(), r.device) != intents.end();
        });
      };
      if (auto st = commit(lock, undo); !st) return Error::unavailable(who + ": " + st.error().message);
      out.made_ = intents;
    }
  }

  for (const auto& device : intents) {
    MigPlacement where;
    {
      std::lock_guard lock(mu_);
      for (const auto& r : mig_records_)
        if (r.claim_uid == uid && r.device == device) where = r.placement;
    }
    if (auto st = mig_control_->enable_mig(where.parent_uuid); !st)
      return Error{st.error().code, who + ": dynamic MIG device " + device + ": " + st.error().message};
    auto made = mig_control_->create(where);
    if (!made)
      return Error{made.error().code, who + ": dynamic MIG device " + device + " could not be created: " +
                                          made.error().message};
    std::lock_guard lock(mu_);
    for (auto& r : mig_records_)
      if (r.claim_uid == uid && r.device == device) r.made = *made;
  }

  std::lock_guard lock(mu_);
  std::vector<const MigInstanceRecord*> mine;
  for (const auto& r : mig_records_)
    if (r.claim_uid == uid && r.made &&
        std::any_of(placements.begin(), placements.end(), [&](const auto& p) { return p.first == r.device; }))
      mine.push_back(&r);
  out.devices_ = with_instances(*devices, mine);
  return out;
}

void ClaimStore::abandon_dynamic_mig(const std::string& uid, const std::vector<std::string>& devices) {
  std::unique_lock lock(mu_);
  std::vector<MigInstanceRecord> released;
  for (auto it = mig_records_.begin(); it != mig_records_.end();) {
    if (it->claim_uid != uid || std::find(devices.begin(), devices.end(), it->device) == devices.end()) {
      ++it;
      continue;
    }
    if (it->made && mig_control_) {
      auto st = mig_control_->destroy(it->placement.parent_uuid, it->made->gpu_instance_id,
                                      it->made->compute_instance_id);
      // Still there: the record stays, and the next start destroys it (its claim is not prepared).
      if (!st) {
        ++it;
        continue;
      }
    }
    released.push_back(std::move(*it));
    it = mig_records_.erase(it);
  }
  if (!released.empty()) {
    // Best effort: a record the write misses only makes the next start look for a gone instance.
    (void)commit(lock, [] {});
    disable_mig_where_empty_locked(released);
  }
}

Status ClaimStore::release_dynamic_mig_locked(const std::string& uid, std::vector<MigInstanceRecord>& taken) {
  for (const auto& r : mig_records_) {
    if (r.claim_uid != uid || !r.made) continue;
    if (!mig_control_)
      return Error::unavailable("its dynamic MIG device " + describe_placement(r) +
                                " cannot be destroyed before NVML's MIG calls are available");
    if (auto st = mig_control_->destroy(r.placement.parent_uuid, r.made->gpu_instance_id, r.made->compute_instance_id);
        !st)
      return Error{st.error().code, "destroying dynamic MIG device " + describe_placement(r) + ": " +
                                        st.error().message};
  }
  for (auto it = mig_records_.begin(); it != mig_records_.end();) {
    if (it->claim_uid == uid && it->made) {
      taken.push_back(std::move(*it));
      it = mig_records_.erase(it);
    } else {
      ++it;
    }
  }
  return ok_status();
}

void ClaimStore::disable_mig_where_empty_locked(const std::vector<MigInstanceRecord>& released) {
  // Hopper switches MIG mode without a reset: off again once kgpu's last instance there is gone,
  // as NVIDIA's driver does, so the whole GPU is usable as before. Never under a claim: another
  // record on the GPU keeps it on, and NVML refuses while any instance (an operator's too) exists.
  if (!mig_control_) return;
  std::set<std::string> parents;
  for (const auto& r : released) parents.insert(r.placement.parent_uuid);
  for (const auto& parent : parents) {
    const bool used = std::any_of(mig_records_.begin(), mig_records_.end(),
                                  [&](const MigInstanceRecord& r) { return r.placement.parent_uuid == parent; });
    if (!used) (void)mig_control_->disable_mig_if_empty(parent);
  }
}

std::vector<std::string> ClaimStore::set_mig_control(std::shared_ptr<const DynamicMigControl> control) {
  std::vector<std::string> notes;
  std::unique_lock lock(mu_);
  const bool first = !mig_control_;
  mig_control_ = std::move(control);
  if (!first || !mig_control_) return notes;
  std::vector<MigInstanceRecord> released;
  bool changed = false;
  for (auto it = mig_records_.begin(); it != mig_records_.end();) {
    const MigInstanceRecord& r = *it;
    if (r.made && claims_.contains(r.claim_uid) && !removing_.contains(r.claim_uid)) {
      ++it;  // a prepared claim's: kept
      continue;
    }
    auto instances = mig_control_->gpu_instances(r.placement.parent_uuid);
    if (!instances) {
      notes.push_back("DRA: dynamic MIG device " + describe_placement(r) + " of claim " + r.claim_uid +
                      " (not prepared) is still recorded: " + instances.error().message + "; retried at the next start");
      ++it;
      continue;
    }
    // The instance the record names: by its ids when it was made, else (kgpu died inside the
    // create) the one at the placement that was not there when the intent was recorded.
    std::optional<GpuInstanceAt> found;
    for (const auto& gi : *instances) {
      if (gi.profile_id != r.placement.profile_id || gi.start != r.placement.start) continue;
      if (r.made ? gi.id == r.made->gpu_instance_id
                 : std::find(r.gpu_instances_before.begin(), r.gpu_instances_before.end(), gi.id) ==
                       r.gpu_instances_before.end())
        found = gi;
    }
    if (found) {
      const unsigned ci = r.made ? r.made->compute_instance_id : 0;
      if (auto st = mig_control_->destroy(r.placement.parent_uuid, found->id, ci); !st) {
        notes.push_back("DRA: cannot destroy dynamic MIG device " + describe_placement(r) + " left by claim " +
                        r.claim_uid + " (not prepared): " + st.error().message + "; retried at the next start");
        ++it;
        continue;
      }
      notes.push_back("DRA: destroyed dynamic MIG device " + describe_placement(r) + " (GPU instance " +
                      std::to_string(found->id) + ") that kgpu made for claim " + r.claim_uid +
                      ", which was never prepared or is no longer");
    }
    released.push_back(*it);
    it = mig_records_.erase(it);
    changed = true;
  }
  if (changed) {
    if (auto st = commit(lock, [] {}); !st)
      notes.push_back("DRA: the dynamic MIG clean-up could not be recorded: " + st.error().message);
    disable_mig_where_empty_locked(released);
  }
  return notes;
}

std::set<std::string> ClaimStore::created_mig_uuids() const {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  for (const auto& r : mig_records_)
    if (r.made) out.insert(r.made->mig_uuid);
  return out;
}

std::vector<MigInstanceRecord> ClaimStore::mig_instances() const {
  std::lock_guard lock(mu_);
  return mig_records_;
}

}  // namespace kgpu::dra
