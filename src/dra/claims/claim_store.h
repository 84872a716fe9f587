#pragma once
// The DRA prepare/unprepare manager behind NodePrepareResources / NodeUnprepareResources, for one
// driver: idempotent, thread-safe (the kubelet may call concurrently, and calls again after its own
// restart), and checkpointed on disk so that a daemon restart between prepare and unprepare loses
// nothing.
//  - prepare(ref): a claim prepared before gets the same answer without fetching or writing
//    anything (a missing CDI spec file, e.g. a cleared /var/run/cdi, is written again). Otherwise:
//    fetch the claim (injected: the API-server GET), check its UID, prepare_claim(), refuse a
//    device already prepared for another claim (unless either is admin access or both are
//    consumable-capacity shares), write the claim's CDI spec, then the checkpoint.
//  - unprepare(uid): remove the claim's CDI spec file, then forget the claim in the checkpoint (a
//    failure in between leaves it recorded for the kubelet's retry); an unknown UID is fine (the
//    kubelet retries and cleans up after restarts), and its spec file is removed too in case a
//    crash left one behind.
// Dynamic MIG placements (NodeDevices::dynamic_mig, issue 42) get their GPU and compute instance
// inside prepare, before the CDI spec (claim_store_dynamic_mig.cpp), and lose them inside unprepare
// before the claim is forgotten; the checkpoint records each instance's intent before NVML is asked.
// The sharing a prepared claim needs (time-slice settings, an MPS daemon) is returned to the
// caller, who applies it on prepare and undoes it with what unprepare returns.
// Time-slice resets are the store's record, not the caller's memory: the unprepare that forgets a
// claim records, in the same checkpoint write, the GPUs it leaves to go back to the default
// interval (pending_resets()); the caller runs them and reports each that succeeded
// (reset_done()). One that failed, or that a killed kgpu never ran, stays pending across restarts:
// the caller retries it, and until it succeeds a claim using that GPU without setting an interval
// of its own is refused (the next tenant never inherits another's interval).
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cdi/driver_files.h"
#include "config/config.h"
#include "core/inventory.h"
#include "core/result.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/claims/dynamic_mig_control.h"
#include "dra/claims/nvidia_checkpoint.h"
#include "dra/model/claim.h"
#include "dra/model/dra_device.h"
#include "dra/model/dynamic_mig.h"
#include "dra/sharing/prepare.h"
#include "dra/sharing/time_slicing.h"

namespace kgpu::dra {

// What a per-claim CDI spec found on disk shows of the claim's MPS (recover_from_cdi_specs).
struct RecoveredSharing {
  bool own_mps = false;                 // a client of the claim's own control daemon
  std::vector<std::string> share_gpus;  // UUIDs of the shared GPUs whose daemon it is a client of
};

// GET /apis/resource.k8s.io/<version>/namespaces/<ns>/resourceclaims/<name>: the body, or an error.
using ClaimFetch = std::function<Result<std::string>(const std::string& ns, const std::string& name)>;

// What prepare reads about the node, replaced whole by the daemon whenever the inventory, health or
// config changes (a prepare in flight keeps the snapshot it started with).
struct NodeDevices {
  Config config;
  Inventory inventory;
  DriverPool pool;  // this manager's driver; pool name = node name
  std::optional<DriverFiles> driver_files;
  // The GPUs published for dynamic MIG (kgpu.dra.mig.dynamic, issue 42) as published: a device of
  // one of these layouts other than its full GPU is a placement whose instances prepare creates
  // and unprepare destroys. Its devices are in `pool` too (health taints, attributes).
  std::vector<DynamicMigLayout> dynamic_mig;
};

struct ClaimStoreOptions {
  std::string driver;           // "gpu.nvidia.com"
  std::string checkpoint_path;  // e.g. /var/lib/kubelet/plugins/gpu.nvidia.com/kgpu-claims.json
  std::string cdi_dir;          // e.g. /var/run/cdi
  // /proc/sys/kernel/random/boot_id as read by the caller; a checkpoint from another boot is
  // dropped (devices were reset; /var/run/cdi is gone with the tmpfs). Empty: not checked.
  std::string boot_id;
};

// Where the kubelet whose registration socket is `kubelet_socket`
// (/var/lib/kubelet/device-plugins/kubelet.sock) keeps `driver`'s plugin folder, and kgpu's
// checkpoint in it: /var/lib/kubelet/plugins/<driver>/kgpu-claims.json. The daemon and
// `kgpu devices --live` read the same file.
std::string claim_checkpoint_path(const std::string& kubelet_socket, const std::string& driver);

// The Linux boot ID (<proc_root>/sys/kernel/random/boot_id, trimmed) for ClaimStoreOptions::boot_id;
// empty when it cannot be read (the checkpoint is then kept whatever boot wrote it).
std::string read_boot_id(const std::string& proc_root);

class ClaimStore;

// What a prepare of a claim with dynamic MIG placements made for it (claim_store_dynamic_mig.cpp):
// the node as prepare_claim must see it (each new instance a MIG device of its parent GPU, the
// placement's published device naming it by uuid), and, until keep(), the duty to destroy what this
// call made when the prepare fails later.
class DynamicMigPrepare {
 public:
  DynamicMigPrepare(ClaimStore* store, std::string uid, std::shared_ptr<const NodeDevices> devices)
      : store_(store), uid_(std::move(uid)), devices_(std::move(devices)) {}
  ~DynamicMigPrepare();
  DynamicMigPrepare(DynamicMigPrepare&& other) noexcept;
  DynamicMigPrepare& operator=(DynamicMigPrepare&&) = delete;
  DynamicMigPrepare(const DynamicMigPrepare&) = delete;
  DynamicMigPrepare& operator=(const DynamicMigPrepare&) = delete;
  const NodeDevices& devices() const { return *devices_; }
  void keep() { made_.clear(); }

 private:
  friend class ClaimStore;
  ClaimStore* store_;
  std::string uid_;
  std::shared_ptr<const NodeDevices> devices_;
  std::vector<std::string> made_;  // placement devices this call recorded (and maybe created)
  bool registered_ = false;        // this call holds the claim's entry in mig_preparing_
};

class ClaimStore {
 public:
  // Loads the checkpoint. Missing: empty. From another boot: empty, with a warning. Unreadable
  // (corrupt, cut short, a link, FIFO or folder at the path, another version): the bad file is kept
  // aside as <path>.corrupt-<UTC time>, never overwritten (when it cannot be moved, the checkpoint
  // is never written and every prepare is refused), with a warning naming both paths; a newer
  // version's warning says so. Temporary files a killed write left next to it, and next to the
  // per-claim CDI specs, are removed.
  // Then, except after a reboot, the record is rebuilt from what is on disk: every per-claim CDI
  // spec of this driver in the CDI folder whose claim the checkpoint does not hold marks that
  // claim's devices as held (recovered_claims()); a prepare of another claim touching one is
  // refused with the reason, until the kubelet prepares (re-records) or unprepares that claim.
  // Warnings are in startup_warnings() (the daemon logs them and serves).
  //
  // Taking over from NVIDIA's DRA driver (driver "gpu.nvidia.com" only): the claims that driver
  // prepared, in its checkpoint.json next to kgpu's checkpoint (nvidia_checkpoint.h), are adopted
  // before the CDI folder is scanned. A claim NVIDIA completed and kgpu does not record becomes one
  // of kgpu's prepared claims: the answer the kubelet got (devices, CDI IDs), the physical GPUs
  // behind it, and NVIDIA's CDI spec file as its spec (left as it is; unprepare removes it). A
  // repeated prepare gets the same answer; one naming the claim's namespace and name fills them in
  // when NVIDIA's record lacks them (v1 entries never have them, completed v2 entries lose them).
  // From before a reboot no container can hold a GPU: a claim is only adopted when its CDI spec
  // still exists (/var/run/cdi is a tmpfs) or the checkpoint was written since the node booted
  // (NVIDIA's file has no boot ID; a CDI folder on disk makes the first test pass after a reboot,
  // which holds GPUs longer, never hands one out twice). A prepare NVIDIA started but never
  // answered gave no container anything: its devices are held, as recovered claims above, until
  // the kubelet prepares or unprepares it, in this run; its CDI spec, if any, is removed (the same
  // CDI device names as the spec kgpu writes when the kubelet retries). Sharing NVIDIA set up (MPS
  // control daemons, time-slicing) is neither reproduced nor undone: warned per claim. Once kgpu's
  // checkpoint holds the adopted claims, NVIDIA's file is renamed to
  // checkpoint.json.adopted-by-kgpu-<UTC time>, so neither kgpu nor a reinstalled NVIDIA driver acts
  // on it again. Whatever the file holds (issue 38), every GPU that one of NVIDIA's per-claim CDI
  // specs in the CDI folder gives its containers (nvidia_claim_spec.h: its device names and its
  // /dev/nvidia<N> nodes, the whole GPU) is held for a claim kgpu does not record, until the kubelet
  // prepares or unprepares it. A claim entry that does not parse is passed over with a warning and
  // the others are adopted; an unreadable file (cut short, a link: never followed) is left in place
  // with a warning; one holding a section of an unknown version ("v3") is left in place too (a
  // newer kgpu reads it), and since it is read again at each start, only its claims whose NVIDIA
  // spec still exists are adopted (an unprepared claim is never adopted again).
  ClaimStore(ClaimStoreOptions options, ClaimFetch fetch);

  void set_devices(std::shared_ptr<const NodeDevices> devices);

  // Errors keep their Error::Code: unavailable (no devices yet, the fetch failed, a file could not
  // be written), precondition (UID mismatch, claim not allocated, device held by another claim),
  // invalid (everything prepare_claim refuses).
  Result<PreparedClaim> prepare(const ClaimRef& ref);

  // The claim that was released (nullopt: it was not prepared), so the caller can undo its sharing.
  // A claim recovered from its CDI spec (not in the checkpoint) is released with the sharing its
  // spec shows (its MPS daemon, the shared GPUs' daemons, their full GPUs' compute mode to reset).
  // `when`: Now makes the checkpoint forget the claim before returning (one write, shared with
  // the changes of other threads made meanwhile). AtSettle leaves that write to settle(): the
  // claim is gone from prepared() only then, and its devices stay held until it is durable. For
  // the kubelet's calls, answered once for all their claims: 1,000 unprepares in one call were
  // ~250 checkpoint writes of two fsyncs each, and are one (issue 40, item 3).
  enum class Durability { Now, AtSettle };
  Result<std::optional<PreparedClaim>> unprepare(const std::string& uid, Durability when = Durability::Now);
  // Makes the AtSettle unprepares of `uids` durable (one checkpoint write, unless other writes
  // made them so already). When the write fails, those claims are prepared again as they were
  // (the kubelet's retry unprepares them) and the error is returned.
  Status settle(const std::vector<std::string>& uids);

  // Time-slice resets still to run, in GPU UUID order (see above).
  std::vector<TimeSliceSetting> pending_resets() const;
  bool is_reset_pending(const std::string& gpu_uuid) const;
  // The reset of `gpu_uuid` ran: forgotten, and the checkpoint written (best effort: a reset found
  // pending again after a restart only runs once more).
  void reset_done(const std::string& gpu_uuid);

  std::vector<PreparedClaim> prepared() const;  // in UID order
  // prepared() less the claims being unprepared (AtSettle ones not yet settled, among others): what
  // stays once those calls are answered, for deciding whether a shared MPS daemon is still used.
  std::vector<PreparedClaim> prepared_staying() const;
  // Claims found on disk but not in the checkpoint: UID -> device names (see the constructor).
  std::map<std::string, std::vector<std::string>> recovered_claims() const;
  bool is_prepared(const std::string& uid) const;
  std::optional<PreparedClaim> prepared_claim(const std::string& uid) const;  // nullopt: not prepared
  // Whether a claim named ns/name other than `uid` is prepared and not being unprepared (no copy of
  // the claims: asked once per unprepare).
  bool another_staying_named(const std::string& ns, const std::string& name, const std::string& uid) const;
  const std::vector<std::string>& startup_warnings() const { return warnings_; }

  // Dynamic MIG (issue 42). The NVML side, once it is loaded (null before: a claim naming a
  // placement is refused until then). The first call cleans up after a kgpu that died: every
  // instance the checkpoint records whose claim is not prepared (an intent without an answer, or
  // made but never answered) is destroyed, those of prepared claims are kept, and an instance no
  // record names (an operator's, the MIG manager's) is never touched. Returns what it did and what
  // failed (a failure stays recorded: retried at the next start), for the log.
  std::vector<std::string> set_mig_control(std::shared_ptr<const DynamicMigControl> control);
  // The MIG uuids of the instances kgpu made and holds (prepared claims', and prepares in flight).
  std::set<std::string> created_mig_uuids() const;
  std::vector<MigInstanceRecord> mig_instances() const;  // as recorded, in record order

 private:
  friend class DynamicMigPrepare;
  void load();
  bool load_own();
  // claim_store_dynamic_mig.cpp: the instances of the claim's placements recorded, made and
  // described to prepare_claim; refusals as the other prepare errors.
  Result<DynamicMigPrepare> begin_dynamic_mig(const ResourceClaim& claim, std::shared_ptr<const NodeDevices> devices);
  std::optional<Error> check_dynamic_whole_gpus_locked(const std::string& uid, const std::vector<std::string>& parents) const;
  // Destroys the instances of `devices` (records of `uid`) and forgets their records: a failed
  // prepare leaves nothing behind.
  void abandon_dynamic_mig(const std::string& uid, const std::vector<std::string>& devices);
  // Unprepare: destroys the claim's instances (gone counts as done), takes their records out (into
  // `taken`, for the undo); an error leaves the claim as it was, for the kubelet's retry.
  Status release_dynamic_mig_locked(const std::string& uid, std::vector<MigInstanceRecord>& taken);
  void disable_mig_where_empty_locked(const std::vector<MigInstanceRecord>& released);  // false: kgpu's checkpoint is from another boot (nothing is recovered)
  void adopt_nvidia_claims();
  void adopt_nvidia_checkpoint(const std::string& path, const NvidiaCheckpoint& checkpoint);
  void hold_nvidia_specs();
  void set_aside(const std::string& why, bool newer);
  void recover_from_cdi_specs();
  Result<std::optional<PreparedClaim>> unprepare_unrecorded_locked(std::unique_lock<std::mutex>& lock,
                                                                   const std::string& uid);
  void remove_stale_temporaries();
  // Removes the regular files in `dir` whose names start with `head` and hold `infix` after it.
  void remove_stale_temporaries_in(const std::filesystem::path& dir, const std::string& head, const std::string& infix);
  Status save_locked() const;  // start-up only (load): no other thread yet
  // Makes the record durable as it is after the caller's change, made under `lock` (held on entry
  // and on return). Writers queue on save_mu_, and one write takes every change made before it
  // began: callers whose change an earlier write covered return at once, so 1,000 unprepares side
  // by side cost a handful of checkpoint writes instead of 1,000 (issue 28, item 6). When the write
  // fails, `undo` reverts the caller's change before any other writer can take a snapshot.
  Status commit(std::unique_lock<std::mutex>& lock, const std::function<void()>& undo);
  // Waits until the checkpoint holds every change made so far (writing it when none covers them).
  Status flush(std::unique_lock<std::mutex>& lock);
  Status write_covering(std::unique_lock<std::mutex>& lock, uint64_t version, const std::function<void()>& undo);
  // The recorded claim once durable (flush), for the idempotent answers.
  Result<PreparedClaim> durable_locked(std::unique_lock<std::mutex>& lock, const ClaimRef& ref);
  std::string snapshot_text_locked() const;  // the checkpoint of claims_ minus removing_
  // Forgets the AtSettle unprepares that the checkpoint of `version` records.
  void forget_settled_locked(uint64_t version);
  Status write_checkpoint(const std::string& text) const;
  std::string spec_path(const std::string& file) const;
  std::optional<std::string> conflict_locked(const PreparedClaim& claim) const;
  std::optional<std::string> share_overflow_locked(const PreparedClaim& claim) const;
  std::optional<std::string> share_namespace_conflict_locked(const PreparedClaim& claim) const;
  std::optional<std::string> pending_reset_conflict_locked(const PreparedClaim& claim) const;
  // The prepared claims, other than `released` and those being unprepared, that set a GPU
  // `released` sets: all time_slices_to_reset needs, without copying every claim per unprepare
  // (1,000 unprepares in one call copied 500,000 claims; issue 40, item 3).
  std::vector<PreparedClaim> remaining_setters_locked(const PreparedClaim& released) const;

  const ClaimStoreOptions options_;
  const ClaimFetch fetch_;
  std::vector<std::string> warnings_;

  mutable std::mutex mu_;
  std::shared_ptr<const NodeDevices> devices_;
  std::map<std::string, PreparedClaim> claims_;  // by UID
  // Claims an unprepare is forgetting: left out of the checkpoint being written, still held for
  // the conflict check until that write succeeded (a failed one puts them back as they were).
  std::set<std::string> removing_;
  uint64_t version_ = 0;  // bumped by each change commit() makes durable
  std::mutex save_mu_;    // one checkpoint writer at a time; taken before mu_, never after
  uint64_t saved_version_ = 0;  // under save_mu_: the version the checkpoint file holds
  // UID -> the version whose write records that claim as it is now (absent: as loaded): a repeated
  // prepare waits for that write only, not for every change made since.
  std::map<std::string, uint64_t> last_change_;
  // AtSettle unprepares not yet durable: UID -> the version recording it, and the pending resets
  // it added (taken back when its settle fails). Their claims are in removing_ meanwhile.
  struct Unsettled {
    uint64_t version = 0;
    std::vector<std::string> added_resets;
  };
  std::map<std::string, Unsettled> unsettled_;
  std::map<std::string, std::vector<std::string>> recovered_;  // UID -> device names, from CDI specs
  // UID -> /dev/nvidia<N> minors that NVIDIA's CDI spec for the claim gives its containers: every
  // device on those GPUs is held (NVIDIA's device names may not be kgpu's).
  std::map<std::string, std::set<int>> recovered_minors_;
  std::map<std::string, RecoveredSharing> recovered_sharing_;  // UID -> its spec's MPS, from kgpu's own specs
  std::map<std::string, TimeSliceSetting> pending_resets_;     // by GPU UUID
  // An adopted MIG device from an NVIDIA checkpoint older than v25.12 names its own UUID, not its
  // parent's (PreparedDevice::gpu_uuid "MIG-..."): where the inventory puts it, by MIG UUID.
  struct MigPlace {
    std::string parent_uuid;
    std::string device;  // kgpu's name for it
  };
  std::map<std::string, MigPlace> mig_places_;
  // Recovered claims (above) that NVIDIA's checkpoint showed half-prepared, for the refusal's text.
  std::set<std::string> half_prepared_;
  // Dynamic MIG: the NVML side (null until set_mig_control), the instances recorded (intents and
  // made ones), and the claims whose prepare is making instances now (one at a time per claim).
  std::shared_ptr<const DynamicMigControl> mig_control_;
  std::vector<MigInstanceRecord> mig_records_;
  std::set<std::string> mig_preparing_;
  // The unreadable checkpoint could not be moved aside: it is never overwritten (nothing is saved).
  bool frozen_ = false;
  std::string frozen_reason_;
};

// The store's pending time-slice resets as ClaimSharing::run_pending_resets reads them.
PendingResets pending_resets_of(ClaimStore& store);

}  // namespace kgpu::dra
