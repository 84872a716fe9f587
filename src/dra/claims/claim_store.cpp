#include "dra/claims/claim_store.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "cdi/spec_writer.h"
#include "core/json_depth.h"
#include "core/safe_file.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/claims/nvidia_checkpoint.h"
#include "dra/claims/store_files.h"
#include "dra/model/device_names.h"
#include "dra/model/publication.h"
#include "dra/sharing/time_slicing.h"
#include "mps/claim_request.h"
#include "plan/mps_paths.h"

namespace kgpu::dra {

namespace {

namespace fs = std::filesystem;
using store_files::regular_file_exists;
using store_files::remove_file;
using store_files::utc_stamp;

std::string describe(const ClaimRef& ref) { return "ResourceClaim " + ref.ns + "/" + ref.name + " (" + ref.uid + ")"; }

// The device names a per-claim CDI spec written by prepare names ("<uid>-<device>"), or nullopt
// when the file is not such a spec.
std::optional<std::vector<std::string>> spec_devices(const std::string& text, const std::string& uid) {
  if (!check_json_depth(text, "CDI spec")) return std::nullopt;
  const auto spec = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return std::nullopt;
  const auto devices = spec.find("devices");
  if (devices == spec.end() || !devices->is_array()) return std::nullopt;
  std::vector<std::string> out;
  const std::string prefix = uid + "-";
  for (const auto& d : *devices) {
    if (!d.is_object()) continue;
    const auto name = d.find("name");
    if (name == d.end() || !name->is_string()) continue;
    const auto& n = name->get_ref<const std::string&>();
    if (n.starts_with(prefix) && n.size() > prefix.size()) out.push_back(n.substr(prefix.size()));
  }
  return out;
}

// The MPS daemons a per-claim CDI spec written by prepare makes its containers clients of: the
// claim's own (its pipe folder, mps_container_pipe_dir of "dra/<uid>") and the shared GPUs' (of
// "dra/gpushare-<GPU UUID>"), read from the CUDA_MPS_PIPE_DIRECTORY values in the text.
RecoveredSharing spec_sharing(const std::string& text, const std::string& uid) {
  RecoveredSharing out;
  const std::string key = "CUDA_MPS_PIPE_DIRECTORY=";
  const std::string own = key + mps_container_pipe_dir(mps_claim_resource(uid));
  const std::string share = key + mps_container_pipe_dir(mps_claim_resource(share_daemon_name("")));
  const std::string share_head = share.substr(0, share.size() - std::string("/pipe").size());
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + key.size())) {
    if (text.compare(at, own.size(), own) == 0 && (text.size() == at + own.size() || text[at + own.size()] == '"')) {
      out.own_mps = true;
      continue;
    }
    if (text.compare(at, share_head.size(), share_head) != 0) continue;
    const size_t start = at + share_head.size();
    const size_t end = text.find("/pipe", start);
    if (end == std::string::npos || end - start > 128) continue;
    std::string uuid = text.substr(start, end - start);
    if (uuid.empty() || !std::all_of(uuid.begin(), uuid.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
        }))
      continue;
    if (std::find(out.share_gpus.begin(), out.share_gpus.end(), uuid) == out.share_gpus.end())
      out.share_gpus.push_back(std::move(uuid));
  }
  return out;
}

}  // namespace

std::string claim_checkpoint_path(const std::string& kubelet_socket, const std::string& driver) {
  const fs::path kubelet_root = fs::path(kubelet_socket).parent_path().parent_path();
  return (kubelet_root / "plugins" / driver / "kgpu-claims.json").string();
}

std::string read_boot_id(const std::string& proc_root) {
  auto text = read_regular_file((fs::path(proc_root) / "sys/kernel/random/boot_id").string(), kAttributeFileLimit);
  if (!text) return "";
  std::string id = *text;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

ClaimStore::ClaimStore(ClaimStoreOptions options, ClaimFetch fetch)
    : options_(std::move(options)), fetch_(std::move(fetch)) {
  load();
}

void ClaimStore::load() {
  remove_stale_temporaries();
  const bool same_boot = load_own();
  adopt_nvidia_claims();
  if (same_boot) recover_from_cdi_specs();
}

bool ClaimStore::load_own() {
  auto text = read_regular_file(options_.checkpoint_path, kMaxCheckpointBytes, FollowLinks::No);
  if (!text) {
    if (text.error().code != Error::Code::NotFound) set_aside("cannot be read (" + text.error().message + ")", false);
    return true;
  }
  auto checkpoint = parse_checkpoint(*text);
  if (!checkpoint) {
    const bool newer = checkpoint.error().code == Error::Code::FailedPrecondition;
    set_aside((newer ? "is refused: " : "is corrupt (") + checkpoint.error().message + (newer ? "" : ")"), newer);
    return true;
  }
  if (!options_.boot_id.empty() && !checkpoint->boot_id.empty() && checkpoint->boot_id != options_.boot_id) {
    warnings_.push_back("DRA checkpoint " + options_.checkpoint_path + " was written before the node rebooted (boot " +
                        checkpoint->boot_id + ", now " + options_.boot_id + "); its " +
                        std::to_string(checkpoint->claims.size()) + " prepared claims are dropped");
    return false;
  }
  for (auto& c : checkpoint->claims) {
    if (!is_safe_claim_uid(c.ref.uid) || c.driver != options_.driver) {
      warnings_.push_back("DRA checkpoint " + options_.checkpoint_path + ": entry for claim " + quote_text(c.ref.uid) +
                          " of driver " + quote_text(c.driver) + " is not this driver's; dropped");
      continue;
    }
    std::string uid = c.ref.uid;
    claims_.emplace(std::move(uid), std::move(c));
  }
  for (auto& reset : checkpoint->pending_resets) {
    warnings_.push_back("DRA: " + reset.gpu_uuid + " still waits for its time-slice interval to be reset to " +
                        to_string(reset.interval) + " (an earlier unprepare could not run it); retried now");
    std::string uuid = reset.gpu_uuid;
    pending_resets_.emplace(std::move(uuid), std::move(reset));
  }
  // Cleaned up (or kept) once NVML is there: set_mig_control().
  mig_records_ = std::move(checkpoint->mig_instances);
  return true;
}

void ClaimStore::set_aside(const std::string& why, bool newer) {
  const std::string& path = options_.checkpoint_path;
  std::string aside = path + ".corrupt-" + utc_stamp();
  std::error_code ec;
  for (int n = 1; fs::exists(fs::symlink_status(aside, ec)) && n < 100; ++n)
    aside = path + ".corrupt-" + utc_stamp() + "-" + std::to_string(n);
  fs::rename(path, aside, ec);  // a link or FIFO is moved, never followed
  std::string what = "DRA checkpoint " + path + " " + why;
  if (newer) what = "REFUSED: " + what + "; this kgpu will not overwrite it";
  if (ec) {
    frozen_ = true;
    frozen_reason_ = "the DRA checkpoint " + path + " is unreadable and could not be kept aside (" + ec.message() +
                     "): it is never overwritten, so no claim can be prepared until it is fixed or removed";
    warnings_.push_back(what + "; " + frozen_reason_);
    return;
  }
  warnings_.push_back(what + "; kept as " + aside +
                      "; the prepared claims are rebuilt from the per-claim CDI specs in " + options_.cdi_dir);
}

void ClaimStore::recover_from_cdi_specs() {
  std::error_code ec;
  fs::directory_iterator it(options_.cdi_dir, ec);
  if (ec) {
    if (ec != std::errc::no_such_file_or_directory) {
      frozen_ = true;
      frozen_reason_ = "the CDI folder " + options_.cdi_dir + " cannot be read (" + ec.message() +
                       "): which devices earlier claims hold is unknown";
      warnings_.push_back("DRA: " + frozen_reason_ + "; every prepare is refused until kgpu restarts");
    }
    return;
  }
  const std::string prefix = claim_cdi_spec_file(options_.driver, "");
  const std::string head = prefix.substr(0, prefix.size() - std::string(".json").size());
  for (const auto end = fs::directory_iterator(); it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (!name.starts_with(head) || !name.ends_with(".json")) continue;
    const std::string uid = name.substr(head.size(), name.size() - head.size() - 5);
    if (!is_safe_claim_uid(uid) || claims_.contains(uid) || claim_cdi_spec_file(options_.driver, uid) != name) continue;
    auto text = read_regular_file(it->path().string(), kOwnFileLimit, FollowLinks::No);
    if (!text) continue;
    auto devices = spec_devices(*text, uid);
    if (!devices || devices->empty()) continue;
    std::string list;
    for (const auto& d : *devices) list += (list.empty() ? "" : ", ") + d;
    warnings_.push_back("DRA: claim " + uid + " is not in the checkpoint but its CDI spec " + it->path().string() +
                        " holds " + list + "; those devices stay held until the kubelet prepares or unprepares it");
    recovered_[uid] = std::move(*devices);
    if (auto sharing = spec_sharing(*text, uid); sharing.own_mps || !sharing.share_gpus.empty())
      recovered_sharing_[uid] = std::move(sharing);
  }
}

void ClaimStore::remove_stale_temporaries() {
  // write_file_atomically's temporaries (".<name>.kgpu-<random>") that a SIGKILL left behind: the
  // checkpoint's, and the per-claim CDI specs' (issue 38, item 5). No other process writes these
  // names, and none of this driver's writes runs before this store exists.
  const fs::path path(options_.checkpoint_path);
  remove_stale_temporaries_in(path.parent_path().empty() ? fs::path(".") : path.parent_path(),
                              "." + path.filename().string() + ".kgpu-", "");
  const std::string spec = claim_cdi_spec_file(options_.driver, "");  // "k8s.<driver>-claim_.json"
  const std::string head = spec.substr(0, spec.size() - std::string(".json").size());
  remove_stale_temporaries_in(options_.cdi_dir, "." + head, ".json.kgpu-");
}

void ClaimStore::remove_stale_temporaries_in(const fs::path& dir, const std::string& head, const std::string& infix) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return;
  for (const auto end = fs::directory_iterator(); it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (!name.starts_with(head) || (!infix.empty() && name.find(infix, head.size()) == std::string::npos)) continue;
    std::error_code st;
    if (!fs::is_regular_file(it->symlink_status(st))) continue;
    fs::remove(it->path(), st);
    if (st) warnings_.push_back("DRA: cannot remove the stale temporary file " + it->path().string() + ": " +
                                st.message());
  }
}

void ClaimStore::set_devices(std::shared_ptr<const NodeDevices> devices) {
  std::map<std::string, MigPlace> places;
  if (devices)
    for (const auto& gpu : devices->inventory.gpus)
      for (const auto& mig : gpu.mig_devices) places[mig.uuid] = {gpu.uuid, mig_device_name(gpu, mig)};
  std::lock_guard lock(mu_);
  devices_ = std::move(devices);
  mig_places_ = std::move(places);
}

std::string ClaimStore::spec_path(const std::string& file) const { return (fs::path(options_.cdi_dir) / file).string(); }

Status ClaimStore::save_locked() const {
  if (frozen_) return Error::unavailable(frozen_reason_);
  return write_checkpoint(snapshot_text_locked());
}

std::string ClaimStore::snapshot_text_locked() const {
  Checkpoint checkpoint{options_.boot_id, {}, {}};
  for (const auto& [uid, c] : claims_)
    if (!removing_.contains(uid)) checkpoint.claims.push_back(c);
  for (const auto& [uuid, reset] : pending_resets_) checkpoint.pending_resets.push_back(reset);
  checkpoint.mig_instances = mig_records_;
  return checkpoint_text(checkpoint);
}

Status ClaimStore::write_checkpoint(const std::string& text) const {
  std::error_code ec;
  const fs::path dir = fs::path(options_.checkpoint_path).parent_path();
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) return Error::unavailable("cannot create the DRA checkpoint folder " + dir.string() + ": " + ec.message());
  if (auto st = write_file_atomically(options_.checkpoint_path, text, 0600); !st)
    return Error::unavailable("cannot write the DRA checkpoint: " + st.error().message);
  return ok_status();
}

Status ClaimStore::flush(std::unique_lock<std::mutex>& lock) {
  if (frozen_) return Error::unavailable(frozen_reason_);
  return write_covering(lock, version_, [] {});
}

Status ClaimStore::commit(std::unique_lock<std::mutex>& lock, const std::function<void()>& undo) {
  if (frozen_) {
    undo();
    return Error::unavailable(frozen_reason_);
  }
  return write_covering(lock, ++version_, undo);
}

Status ClaimStore::write_covering(std::unique_lock<std::mutex>& lock, uint64_t mine, const std::function<void()>& undo) {
  lock.unlock();
  std::lock_guard writer(save_mu_);
  lock.lock();
  if (saved_version_ >= mine) return ok_status();  // a write that began after the change covered it
  const uint64_t covering = version_;
  const std::string text = snapshot_text_locked();
  lock.unlock();
  Status written = write_checkpoint(text);
  lock.lock();
  if (written) {
    saved_version_ = covering;
    forget_settled_locked(covering);
    return ok_status();
  }
  // Still the only writer: the next one snapshots the record without this change. Callers whose
  // changes this write also carried find saved_version_ short and write (or fail) themselves.
  undo();
  ++version_;
  return written;
}

namespace {

// One physical GPU under both: the same device, or (after a MIG re-layout renamed the devices) the
// full GPU and a MIG device of it. Two different MIG devices of one GPU are distinct slices.
bool same_hardware(const PreparedDevice& a, const PreparedDevice& b) {
  if (a.pool != b.pool) return false;
  if (a.device == b.device) return true;
  return !a.gpu_uuid.empty() && a.gpu_uuid == b.gpu_uuid && (a.whole_gpu || b.whole_gpu);
}

}  // namespace

// The scheduler's arithmetic, checked rather than trusted: the memory shares of one GPU, this
// claim's and every other prepared claim's, fit in the GPU's memory.
std::optional<std::string> ClaimStore::share_overflow_locked(const PreparedClaim& claim) const {
  for (const auto& mine : claim.shares) {
    uint64_t gpu_memory = 0;
    if (devices_)
      for (const auto& g : devices_->inventory.gpus)
        if (g.uuid == mine.gpu_uuid) gpu_memory = g.memory_bytes;
    if (gpu_memory == 0) continue;  // not in the inventory now: prepare_claim refused it already
    uint64_t held = 0;
    std::vector<std::string> holders;
    for (const auto& [uid, other] : claims_) {
      if (uid == claim.ref.uid) continue;
      for (const auto& theirs : other.shares)
        if (theirs.gpu_uuid == mine.gpu_uuid) {
          held += theirs.memory_bytes;
          holders.push_back(describe(other.ref) + " " + binary_si_quantity(theirs.memory_bytes));
        }
    }
    if (held + mine.memory_bytes > gpu_memory) {
      std::string list;
      for (const auto& h : holders) list += (list.empty() ? "" : ", ") + h;
      return "device " + mine.device + " (GPU " + mine.gpu_uuid + ", " + binary_si_quantity(gpu_memory) +
             ") cannot take this claim's " + binary_si_quantity(mine.memory_bytes) + " memory share: " +
             binary_si_quantity(held) + " of it is held by the shares prepared for " + list;
    }
  }
  return std::nullopt;
}

// kgpu.dra.sharing.memory.oneNamespacePerGpu: the shares of one GPU are one trust domain (one MPS
// server), so the operator may keep each GPU's shares within one namespace. A share recorded
// without a namespace (adopted, recovered) is not counted.
std::optional<std::string> ClaimStore::share_namespace_conflict_locked(const PreparedClaim& claim) const {
  if (!devices_ || !devices_->config.dra.memory_sharing.one_namespace_per_gpu) return std::nullopt;
  for (const auto& mine : claim.shares)
    for (const auto& [uid, other] : claims_) {
      if (uid == claim.ref.uid || other.ref.ns.empty() || other.ref.ns == claim.ref.ns) continue;
      for (const auto& theirs : other.shares)
        if (theirs.gpu_uuid == mine.gpu_uuid)
          return "device " + mine.device + " (GPU " + mine.gpu_uuid + ") holds memory shares of namespace " +
                 other.ref.ns + " (" + describe(other.ref) + "), and this claim is of namespace " + claim.ref.ns +
                 ": kgpu.dra.sharing.memory.oneNamespacePerGpu keeps a GPU's shares within one namespace (they "
                 "share one MPS server); it takes this namespace's shares once those are unprepared";
    }
  return std::nullopt;
}

std::optional<std::string> ClaimStore::conflict_locked(const PreparedClaim& claim) const {
  for (const auto& mine : claim.devices)
    for (const auto& [uid, other] : claims_) {
      if (uid == claim.ref.uid) continue;
      for (const auto& recorded : other.devices) {
        // An adopted MIG device that names only itself: its parent and kgpu's name for it, from
        // the inventory (one no longer there is held by its recorded name only).
        const PreparedDevice* t = &recorded;
        PreparedDevice resolved;
        std::string alias;
        if (recorded.gpu_uuid.starts_with("MIG-"))
          if (auto place = mig_places_.find(recorded.gpu_uuid); place != mig_places_.end()) {
            resolved = recorded;
            resolved.gpu_uuid = place->second.parent_uuid;
            alias = place->second.device;
            t = &resolved;
          }
        const PreparedDevice& theirs = *t;
        const bool aliased = !alias.empty() && mine.pool == theirs.pool && mine.device == alias;
        if (!aliased && !same_hardware(mine, theirs)) continue;
        if (mine.admin_access || theirs.admin_access) continue;  // admins may look at devices in use
        if (mine.share_id && theirs.share_id && *mine.share_id != *theirs.share_id) continue;
        if (mine.share_id && !theirs.share_id)
          return "device " + mine.device + " is prepared whole for " + describe(other.ref) +
                 ": no memory share of it can be prepared until that claim is unprepared";
        if (!mine.share_id && theirs.share_id)
          return "device " + mine.device + " holds a memory share of " + describe(other.ref) +
                 ": it cannot be prepared whole while shares of it are prepared";
        if (aliased && mine.device != theirs.device)
          return "device " + mine.device + " is the MIG device already prepared as " + theirs.device + " for " +
                 describe(other.ref);
        if (mine.device != theirs.device)
          return "device " + mine.device + " is on GPU " + mine.gpu_uuid + ", which is already prepared as " +
                 theirs.device + " for " + describe(other.ref) + " (the MIG layout changed under it)";
        return "device " + mine.device + " is already prepared for " + describe(other.ref);
      }
    }
  if (auto over = share_overflow_locked(claim)) return over;
  if (auto other = share_namespace_conflict_locked(claim)) return other;
  for (const auto& mine : claim.devices) {
    if (mine.admin_access) continue;
    for (const auto& [uid, held] : recovered_)
      if (uid != claim.ref.uid && std::find(held.begin(), held.end(), mine.device) != held.end())
        return "device " + mine.device + " is held by claim " + uid +
               (half_prepared_.contains(uid)
                    ? ", which NVIDIA's DRA driver began to prepare (its checkpoint); it stays held until the kubelet "
                      "prepares or unprepares that claim"
                    : ", which the checkpoint does not record (or not so) but whose CDI spec in " +
                          options_.cdi_dir + " names it; it stays held until the kubelet unprepares that claim");
    if (recovered_minors_.empty() || !devices_) continue;
    int minor = -1;
    for (const auto& g : devices_->inventory.gpus)
      if (g.uuid == mine.gpu_uuid) minor = g.minor;
    if (minor < 0) continue;
    for (const auto& [uid, minors] : recovered_minors_)
      if (uid != claim.ref.uid && minors.contains(minor))
        return "device " + mine.device + " is on GPU " + mine.gpu_uuid + " (/dev/nvidia" + std::to_string(minor) +
               "), which NVIDIA's DRA driver's CDI spec for claim " + uid + " in " + options_.cdi_dir +
               " gives that claim's containers; it stays held until the kubelet unprepares that claim";
  }
  return std::nullopt;
}

std::optional<std::string> ClaimStore::pending_reset_conflict_locked(const PreparedClaim& claim) const {
  for (const auto& d : claim.devices) {
    if (d.admin_access || !pending_resets_.contains(d.gpu_uuid)) continue;
    if (!sets_gpu(claim, d.gpu_uuid))
      return "device " + d.device + " is on GPU " + d.gpu_uuid +
             ", whose time-slice interval or compute mode an earlier claim left set and kgpu could not reset yet "
             "(nvidia-smi failed; see kgpu's log); it is retried at every prepare and unprepare";
  }
  return std::nullopt;
}

Result<PreparedClaim> ClaimStore::durable_locked(std::unique_lock<std::mutex>& lock, const ClaimRef& ref) {
  // Only this claim's record must be on disk: a write of someone else's change that failed (a full
  // disk) must not fail a repeated prepare that has nothing to write (issue 38, item 5).
  const auto change = last_change_.find(ref.uid);
  Status st = frozen_ ? Status(Error::unavailable(frozen_reason_))
                      : write_covering(lock, change == last_change_.end() ? 0 : change->second, [] {});
  if (!st) return Error::unavailable("cannot prepare " + describe(ref) + ": " + st.error().message);
  auto it = claims_.find(ref.uid);
  if (it == claims_.end() || removing_.contains(ref.uid))
    return Error::unavailable("cannot prepare " + describe(ref) + ": another call changed its record meanwhile; retry");
  return it->second;
}

Result<PreparedClaim> ClaimStore::prepare(const ClaimRef& ref) {
  if (!is_safe_claim_uid(ref.uid)) return Error::invalid("claim UID " + quote_text(ref.uid) + " is not a Kubernetes UID");
  std::shared_ptr<const NodeDevices> devices;
  {
    std::unique_lock lock(mu_);
    if (removing_.contains(ref.uid))
      return Error::unavailable("cannot prepare " + describe(ref) + " while it is being unprepared; retry");
    if (auto it = claims_.find(ref.uid); it != claims_.end()) {
      // Adopted from NVIDIA's driver without its namespace and name: the kubelet's are taken (best
      // effort to record: the answer does not depend on them).
      if (it->second.ref.ns.empty() && it->second.ref.name.empty() && it->second.ref.uid == ref.uid) {
        it->second.ref = ref;
        (void)commit(lock, [] {});
        it = claims_.find(ref.uid);
        if (it == claims_.end()) return Error::unavailable("claim " + ref.uid + " was unprepared meanwhile");
      }
      const PreparedClaim& known = it->second;
      if (known.ref != ref)
        return Error::precondition("claim UID " + ref.uid + " was prepared as " + describe(known.ref) +
                                   ", now asked for as " + describe(ref));
      // Idempotent: the same answer, nothing written, unless the spec file went missing. Only
      // once it is durable: a concurrent call's record may still be on its way to the checkpoint.
      if (regular_file_exists(spec_path(known.cdi_spec_file))) return durable_locked(lock, ref);
    }
    devices = devices_;
  }
  if (!devices) return Error::unavailable("DRA: no devices known yet; cannot prepare " + describe(ref));
  if (frozen_) return Error::unavailable("cannot prepare " + describe(ref) + ": " + frozen_reason_);

  // The API-server round trip runs without the lock: other claims are prepared meanwhile.
  auto text = fetch_(ref.ns, ref.name);
  if (!text) return Error{text.error().code, "fetching " + describe(ref) + ": " + text.error().message};
  auto claim = parse_resource_claim(*text);
  if (!claim) return Error::invalid("fetched " + describe(ref) + ": " + claim.error().message);
  if (claim->ref.uid != ref.uid)
    return Error::precondition("fetched " + ref.ns + "/" + ref.name + " has UID " + quote_text(claim->ref.uid) +
                               ", not " + ref.uid + " (deleted and created again?)");
  // A dynamic MIG placement gets its instance now, before the CDI spec that names its nodes; until
  // keep() below, a failure destroys it again (claim_store_dynamic_mig.cpp).
  auto dynamic = begin_dynamic_mig(*claim, devices);
  if (!dynamic) return dynamic.error();
  const NodeDevices& seen = dynamic->devices();
  const PrepareInputs inputs{seen.config, seen.inventory, seen.pool, seen.driver_files ? &*seen.driver_files : nullptr};
  auto prepared = prepare_claim(*claim, inputs);
  if (!prepared) return prepared.error();
  PreparedClaim& result = prepared->claim;
  result.ref = ref;

  std::unique_lock lock(mu_);
  if (removing_.contains(ref.uid))
    return Error::unavailable("cannot prepare " + describe(ref) + " while it is being unprepared; retry");
  if (auto it = claims_.find(ref.uid); it != claims_.end() && it->second == result &&
                                        regular_file_exists(spec_path(result.cdi_spec_file)))
    return durable_locked(lock, ref);  // a concurrent call prepared it meanwhile
  if (auto conflict = conflict_locked(result))
    return Error::precondition("cannot prepare " + describe(ref) + ": " + *conflict);
  if (auto pending = pending_reset_conflict_locked(result))
    return Error::unavailable("cannot prepare " + describe(ref) + " yet: " + *pending);

  std::error_code ec;
  fs::create_directories(options_.cdi_dir, ec);
  if (ec) return Error::unavailable("cannot create CDI spec folder " + options_.cdi_dir + ": " + ec.message());
  // A spec NVIDIA's driver left for this claim (a prepare of its that never answered, or an
  // adopted claim prepared afresh) would name the same CDI devices as kgpu's.
  if (options_.driver == kNvidiaDriverName)
    (void)remove_file(spec_path(nvidia_claim_spec_file(options_.driver, ref.uid)));
  const std::string path = spec_path(result.cdi_spec_file);
  if (auto st = write_file_atomically(path, cdi_spec_text(prepared->cdi_spec), 0644); !st)
    return Error::unavailable("cannot write CDI spec for " + describe(ref) + ": " + st.error().message);

  std::optional<PreparedClaim> previous;
  if (auto it = claims_.find(ref.uid); it != claims_.end()) previous = it->second;
  std::optional<uint64_t> previous_change;
  if (auto it = last_change_.find(ref.uid); it != last_change_.end()) previous_change = it->second;
  claims_[ref.uid] = result;
  last_change_[ref.uid] = version_ + 1;  // the version commit() gives this change
  // A GPU this claim time-slices gets the claim's interval from the caller next: a reset still
  // pending for it would undo that later.
  std::map<std::string, TimeSliceSetting> superseded;
  for (const auto& s : result.time_slicing)
    if (auto node = pending_resets_.extract(s.gpu_uuid)) superseded.insert(std::move(node));
  for (const auto& uuid : result.exclusive_gpus)
    if (auto node = pending_resets_.extract(uuid)) superseded.insert(std::move(node));
  auto undo = [&] {
    // Not recorded means not prepared: leave no spec behind that nothing would remove.
    pending_resets_.merge(superseded);
    if (previous_change) last_change_[ref.uid] = *previous_change;
    else last_change_.erase(ref.uid);
    if (previous) claims_[ref.uid] = *previous;
    else {
      claims_.erase(ref.uid);
      (void)remove_file(path);
    }
  };
  if (auto st = commit(lock, undo); !st)
    return Error::unavailable("cannot prepare " + describe(ref) + ": " + st.error().message);
  recovered_.erase(ref.uid);
  recovered_minors_.erase(ref.uid);
  recovered_sharing_.erase(ref.uid);
  dynamic->keep();
  return result;
}

void ClaimStore::forget_settled_locked(uint64_t version) {
  for (auto it = unsettled_.begin(); it != unsettled_.end();) {
    if (it->second.version > version) {
      ++it;
      continue;
    }
    claims_.erase(it->first);
    last_change_.erase(it->first);
    removing_.erase(it->first);
    it = unsettled_.erase(it);
  }
}

Status ClaimStore::settle(const std::vector<std::string>& uids) {
  std::unique_lock lock(mu_);
  uint64_t mine = 0;
  for (const auto& uid : uids)
    if (auto u = unsettled_.find(uid); u != unsettled_.end()) mine = std::max(mine, u->second.version);
  if (mine == 0) return ok_status();  // other writes made them durable already
  Status st = frozen_ ? Status(Error::unavailable(frozen_reason_)) : write_covering(lock, mine, [] {});
  if (st) return st;
  for (const auto& uid : uids) {
    auto u = unsettled_.find(uid);
    if (u == unsettled_.end()) continue;
    for (const auto& uuid : u->second.added_resets) pending_resets_.erase(uuid);
    removing_.erase(uid);
    unsettled_.erase(u);
  }
  return st;
}

Result<std::optional<PreparedClaim>> ClaimStore::unprepare(const std::string& uid, Durability when) {
  if (!is_safe_claim_uid(uid)) return Error::invalid("claim UID " + quote_text(uid) + " is not a Kubernetes UID");
  std::unique_lock lock(mu_);
  auto it = claims_.find(uid);
  // The spec first: until the checkpoint forgets the claim, a failure anywhere leaves it recorded,
  // so the kubelet's retry finds it again (and a repeated prepare writes the spec back).
  const std::string file = it != claims_.end() ? it->second.cdi_spec_file : claim_cdi_spec_file(options_.driver, uid);
  if (auto st = remove_file(spec_path(file)); !st)
    return Error::unavailable("cannot unprepare claim " + uid + ": " + st.error().message);
  // A spec NVIDIA's driver left for a claim kgpu does not record goes too.
  if (it == claims_.end() && options_.driver == kNvidiaDriverName)
    if (auto st = remove_file(spec_path(nvidia_claim_spec_file(options_.driver, uid))); !st)
      return Error::unavailable("cannot unprepare claim " + uid + ": " + st.error().message);
  if (it == claims_.end()) return unprepare_unrecorded_locked(lock, uid);
  // Its spec is gone: what the specs on disk held for it (an adopted claim's NVIDIA spec) is free.
  recovered_.erase(uid);
  recovered_minors_.erase(uid);
  recovered_sharing_.erase(uid);
  if (removing_.contains(uid)) return Error::unavailable("claim " + uid + " is being unprepared by another call");
  std::optional<PreparedClaim> released = it->second;
  // Its dynamic MIG instances go first (gone counts as done): a failure leaves the claim recorded
  // for the kubelet's retry, and a kgpu killed after it finds them gone then.
  std::vector<MigInstanceRecord> mig_taken;
  if (auto st = release_dynamic_mig_locked(uid, mig_taken); !st)
    return Error{st.error().code, "cannot unprepare claim " + uid + ": " + st.error().message};
  // Held (for the conflict check) until the write that forgets it succeeded.
  removing_.insert(uid);
  // Recorded in the same write that forgets the claim: a kgpu killed before the caller runs the
  // resets finds them at its next start.
  std::vector<std::string> added;
  for (auto& reset : time_slices_to_reset(remaining_setters_locked(*released), *released)) {
    std::string uuid = reset.gpu_uuid;
    if (pending_resets_.emplace(uuid, std::move(reset)).second) added.push_back(std::move(uuid));
  }
  auto undo = [&] {
    for (const auto& uuid : added) pending_resets_.erase(uuid);
    removing_.erase(uid);
    // Recorded again (their instances are gone; the retried unprepare finds them so).
    mig_records_.insert(mig_records_.end(), mig_taken.begin(), mig_taken.end());
  };
  if (when == Durability::AtSettle) {
    if (frozen_) {
      undo();
      return Error::unavailable("cannot unprepare claim " + uid + ": " + frozen_reason_);
    }
    unsettled_[uid] = Unsettled{++version_, std::move(added)};
    disable_mig_where_empty_locked(mig_taken);
    return released;
  }
  if (auto st = commit(lock, undo); !st)
    return Error::unavailable("cannot unprepare claim " + uid + ": " + st.error().message);
  claims_.erase(uid);
  last_change_.erase(uid);
  removing_.erase(uid);
  disable_mig_where_empty_locked(mig_taken);
  return released;
}

// A claim the checkpoint does not record (its spec is gone now). One recovered from its own CDI
// spec may have had an MPS daemon and its GPUs' compute mode set: what that spec showed is given
// back as a released claim for the caller to undo, and its full GPUs that no other claim sets go
// back to the defaults (pending resets, issue 38 item 2).
Result<std::optional<PreparedClaim>> ClaimStore::unprepare_unrecorded_locked(std::unique_lock<std::mutex>& lock,
                                                                               const std::string& uid) {
  std::optional<PreparedClaim> released;
  if (auto sharing = recovered_sharing_.find(uid); sharing != recovered_sharing_.end()) {
    PreparedClaim c;
    c.ref.uid = uid;
    c.driver = options_.driver;
    if (sharing->second.own_mps) {
      c.mps = MpsClaimRequest{};
      c.mps->claim_uid = uid;
      // Its daemon set EXCLUSIVE_PROCESS on the claim's full GPUs.
      if (auto held = recovered_.find(uid); held != recovered_.end() && devices_)
        for (const auto& name : held->second)
          for (const auto& gpu : devices_->inventory.gpus)
            if (gpu_device_name(gpu) == name) c.exclusive_gpus.push_back(gpu.uuid);
    }
    for (const auto& uuid : sharing->second.share_gpus) {
      MpsClaimRequest daemon;
      daemon.claim_uid = share_daemon_name(uuid);
      daemon.visible_devices = {uuid};
      c.share_daemons.push_back(std::move(daemon));
      if (std::find(c.exclusive_gpus.begin(), c.exclusive_gpus.end(), uuid) == c.exclusive_gpus.end())
        c.exclusive_gpus.push_back(uuid);
    }
    released = std::move(c);
  }
  recovered_.erase(uid);  // its spec is gone: its devices are free
  recovered_minors_.erase(uid);
  recovered_sharing_.erase(uid);
  if (!released) return released;
  bool added = false;
  for (auto& reset : time_slices_to_reset(remaining_setters_locked(*released), *released)) {
    std::string uuid = reset.gpu_uuid;
    added = pending_resets_.emplace(std::move(uuid), std::move(reset)).second || added;
  }
  // Best effort to record: the caller runs the resets now, and retries the ones that fail.
  if (added) (void)commit(lock, [] {});
  return released;
}

std::vector<PreparedClaim> ClaimStore::remaining_setters_locked(const PreparedClaim& released) const {
  std::vector<std::string> touched;
  for (const auto& s : released.time_slicing) touched.push_back(s.gpu_uuid);
  touched.insert(touched.end(), released.exclusive_gpus.begin(), released.exclusive_gpus.end());
  std::vector<PreparedClaim> out;
  if (touched.empty()) return out;  // most claims: nothing to reset, nothing to copy
  for (const auto& [uid, claim] : claims_) {
    const PreparedClaim& c = claim;  // a lambda may not capture a structured binding (clang 14)
    if (uid != released.ref.uid && !removing_.contains(uid) &&
        std::any_of(touched.begin(), touched.end(), [&](const std::string& gpu) { return sets_gpu(c, gpu); }))
      out.push_back(c);
  }
  return out;
}

std::vector<TimeSliceSetting> ClaimStore::pending_resets() const {
  std::lock_guard lock(mu_);
  std::vector<TimeSliceSetting> out;
  for (const auto& [uuid, reset] : pending_resets_) out.push_back(reset);
  return out;
}

bool ClaimStore::is_reset_pending(const std::string& gpu_uuid) const {
  std::lock_guard lock(mu_);
  return pending_resets_.contains(gpu_uuid);
}

void ClaimStore::reset_done(const std::string& gpu_uuid) {
  std::unique_lock lock(mu_);
  if (pending_resets_.erase(gpu_uuid) > 0) (void)commit(lock, [] {});
}

bool ClaimStore::is_prepared(const std::string& uid) const {
  std::lock_guard lock(mu_);
  return claims_.contains(uid);
}

std::optional<PreparedClaim> ClaimStore::prepared_claim(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = claims_.find(uid);
  if (it == claims_.end()) return std::nullopt;
  return it->second;
}

bool ClaimStore::another_staying_named(const std::string& ns, const std::string& name, const std::string& uid) const {
  std::lock_guard lock(mu_);
  return std::any_of(claims_.begin(), claims_.end(), [&](const auto& entry) {
    const ClaimRef& ref = entry.second.ref;
    return entry.first != uid && !removing_.contains(entry.first) && ref.ns == ns && ref.name == name;
  });
}

std::map<std::string, std::vector<std::string>> ClaimStore::recovered_claims() const {
  std::lock_guard lock(mu_);
  return recovered_;
}

std::vector<PreparedClaim> ClaimStore::prepared_staying() const {
  std::lock_guard lock(mu_);
  std::vector<PreparedClaim> out;
  for (const auto& [uid, c] : claims_)
    if (!removing_.contains(uid)) out.push_back(c);
  return out;
}

std::vector<PreparedClaim> ClaimStore::prepared() const {
  std::lock_guard lock(mu_);
  std::vector<PreparedClaim> out;
  out.reserve(claims_.size());
  for (const auto& [uid, c] : claims_) out.push_back(c);
  return out;
}

PendingResets pending_resets_of(ClaimStore& store) {
  return {[&store] { return store.pending_resets(); },
          [&store](const std::string& gpu_uuid) { return store.is_reset_pending(gpu_uuid); },
          [&store](const std::string& gpu_uuid) { store.reset_done(gpu_uuid); }};
}

}  // namespace kgpu::dra
