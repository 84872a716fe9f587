// The claim store's taking over from NVIDIA's DRA driver (claim_store.h): its checkpoint.json,
// read per entry, and its per-claim CDI specs, whose GPUs stay held whatever that file holds.
#include <filesystem>
#include <system_error>

#include "core/safe_file.h"
#include "core/strings.h"
#include "dra/claims/claim_store.h"
#include "dra/claims/nvidia_checkpoint.h"
#include "dra/claims/nvidia_claim_spec.h"
#include "dra/claims/store_files.h"

namespace kgpu::dra {

namespace fs = std::filesystem;

using store_files::regular_file_exists;
using store_files::remove_file;
using store_files::utc_stamp;
using store_files::written_since_boot;
void ClaimStore::adopt_nvidia_claims() {
  if (options_.driver != kNvidiaDriverName) return;
  const fs::path own(options_.checkpoint_path);
  if (own.filename() == kNvidiaCheckpointFile) return;  // never read kgpu's own file as NVIDIA's
  const std::string path = (own.parent_path() / kNvidiaCheckpointFile).string();
  const std::string what = "NVIDIA's DRA driver's checkpoint " + path;
  // Whatever the file holds, the GPUs NVIDIA's per-claim CDI specs name stay held (issue 38).
  auto unreadable = [&](const std::string& why) {
    warnings_.push_back("DRA: " + what + " " + why +
                        "; it is left as it is. The GPUs named by NVIDIA's per-claim CDI specs in " + options_.cdi_dir +
                        " stay held until the kubelet unprepares those claims; a claim NVIDIA's driver began to "
                        "prepare but never finished is not known. Check the file, and move it away once the pods "
                        "NVIDIA's driver served are gone");
  };
  auto text = read_regular_file(path, kMaxNvidiaCheckpointBytes, FollowLinks::No);
  if (!text) {
    if (text.error().code != Error::Code::NotFound)
      unreadable("cannot be read (" + text.error().message + "; a link is never followed)");
  } else if (auto checkpoint = parse_nvidia_checkpoint(*text, options_.driver); !checkpoint) {
    unreadable("is not understood (" + checkpoint.error().message + ")");
  } else {
    adopt_nvidia_checkpoint(path, *checkpoint);
  }
  hold_nvidia_specs();
}

void ClaimStore::adopt_nvidia_checkpoint(const std::string& path, const NvidiaCheckpoint& checkpoint) {
  const std::string what = "NVIDIA's DRA driver's checkpoint " + path;
  for (const auto& s : checkpoint.skipped)
    warnings_.push_back("DRA: " + what + ": " + s +
                        " (its claim's GPUs stay held if NVIDIA's CDI spec for it names them)");
  // A file of a version this kgpu does not know is kept for the kgpu that does: it is read again
  // at every start, so only claims whose NVIDIA spec still exists count (the kubelet's unprepare
  // removes it: an unprepared claim is never taken over again).
  const bool keep = !checkpoint.unknown_sections.empty();
  const bool this_boot = written_since_boot(path);
  size_t adopted = 0, known = 0, stale = 0, half = 0;
  for (const auto& c : checkpoint.claims) {
    if (claims_.contains(c.uid)) {
      ++known;
      continue;
    }
    const std::string spec_file = nvidia_claim_spec_file(options_.driver, c.uid);
    const bool spec = regular_file_exists(spec_path(spec_file));
    if (keep && !spec) continue;
    if (!c.completed) {
      // No container got anything from a prepare that never answered. Its spec (NVIDIA's driver
      // writes it before recording completion) would clash with the one kgpu writes when the
      // kubelet retries: the same CDI device names.
      if (spec) (void)remove_file(spec_path(spec_file));
      if (c.allocated.empty() || (!spec && !this_boot)) continue;
      ++half;
      warnings_.push_back("DRA: claim " + c.uid +
                          ", which NVIDIA's DRA driver began to prepare but never finished, is allocated " +
                          join(c.allocated, ", ") +
                          "; those devices stay held until the kubelet prepares or unprepares it");
      recovered_[c.uid] = c.allocated;
      half_prepared_.insert(c.uid);
      continue;
    }
    if (!spec && !this_boot) {
      ++stale;
      continue;
    }
    PreparedClaim p;
    p.ref = {c.uid, c.ns, c.name};
    p.driver = options_.driver;
    p.devices = c.devices;
    p.cdi_spec_file = spec_file;
    std::vector<std::string> held;
    for (const auto& d : p.devices) held.push_back(d.device + (d.gpu_uuid.empty() ? "" : " (" + d.gpu_uuid + ")"));
    std::string line = "DRA: took over claim " + c.uid +
                       (c.name.empty() ? "" : " (" + c.ns + "/" + c.name + ")") +
                       ", which NVIDIA's DRA driver prepared" +
                       (c.pods.empty() ? "" : " for pod " + join(c.pods, ", ")) + ": " +
                       (held.empty() ? "no devices" : join(held, ", ")) +
                       " stay held until the kubelet unprepares it, which removes NVIDIA's CDI spec " + spec_file +
                       (spec ? "" : " (already missing: a repeated prepare writes kgpu's own)");
    if (!c.mps_control_daemon.empty() || c.has_config)
      line += "; its sharing (" +
              (c.mps_control_daemon.empty() ? std::string("the claim's opaque device configs")
                                            : "MPS control daemon " + c.mps_control_daemon) +
              ") is NOT taken over: kgpu neither applies nor undoes what NVIDIA's driver set up for it";
    warnings_.push_back(std::move(line));
    claims_.emplace(c.uid, std::move(p));
    ++adopted;
  }

  std::string summary = "DRA: " + what + ": " + std::to_string(adopted) + " prepared claims taken over";
  if (known) summary += ", " + std::to_string(known) + " already in kgpu's checkpoint";
  if (half) summary += ", " + std::to_string(half) + " half-prepared ones' devices held";
  if (stale)
    summary += ", " + std::to_string(stale) +
               " dropped (prepared before the node rebooted: no CDI spec, and the file is older than this boot)";
  if (!checkpoint.skipped.empty()) summary += ", " + std::to_string(checkpoint.skipped.size()) + " entries passed over";
  if (adopted)
    if (auto st = save_locked(); !st) {
      warnings_.push_back(summary + "; they could not be recorded in kgpu's checkpoint (" + st.error().message +
                          "), so the file is left in place and read again at the next start");
      return;
    }
  if (keep) {
    warnings_.push_back(summary + "; the file also holds " + join(checkpoint.unknown_sections, ", ") +
                        ", a version of NVIDIA's format this kgpu does not know: it is left in place (not taken "
                        "over), and the claims recorded there only are held by NVIDIA's CDI specs in " +
                        options_.cdi_dir + ". Move it away once the pods NVIDIA's driver served are gone");
    return;
  }
  std::string aside = path + ".adopted-by-kgpu-" + utc_stamp();
  std::error_code ec;
  for (int n = 1; fs::exists(fs::symlink_status(aside, ec)) && n < 100; ++n)
    aside = path + ".adopted-by-kgpu-" + utc_stamp() + "-" + std::to_string(n);
  fs::rename(path, aside, ec);
  if (ec)
    warnings_.push_back(summary + "; the file could not be renamed (" + ec.message() +
                        ") and is read again at the next start: remove it by hand");
  else
    warnings_.push_back(summary + "; the file is now " + aside + ", never read again");
}

void ClaimStore::hold_nvidia_specs() {
  std::error_code ec;
  fs::directory_iterator it(options_.cdi_dir, ec);
  if (ec) return;  // a missing folder holds nothing; an unreadable one freezes the store below
  for (const auto end = fs::directory_iterator(); it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    auto uid = nvidia_claim_spec_uid(name, options_.driver);
    if (!uid || recovered_.contains(*uid)) continue;
    // A claim kgpu prepared itself has its own spec (NVIDIA's was removed then). One taken over
    // from NVIDIA's checkpoint is held by what its spec gives too: the spec is what its containers
    // got, whatever the checkpoint's entry says.
    if (auto known = claims_.find(*uid); known != claims_.end() && known->second.cdi_spec_file != name) continue;
    auto text = read_regular_file(it->path().string(), kMaxNvidiaClaimSpecBytes, FollowLinks::No);
    Result<NvidiaSpecHold> hold = text ? parse_nvidia_claim_spec(*text, *uid) : Result<NvidiaSpecHold>(text.error());
    if (!hold) {
      warnings_.push_back("DRA: NVIDIA's CDI spec " + it->path().string() + " for claim " + *uid +
                          " cannot be read (" + hold.error().message + "): which GPUs it gives is not known");
      continue;
    }
    if (hold->devices.empty() && hold->minors.empty()) continue;
    std::string minors;
    for (int m : hold->minors) minors += (minors.empty() ? "" : ", ") + ("/dev/nvidia" + std::to_string(m));
    warnings_.push_back("DRA: claim " + *uid + " has NVIDIA's CDI spec " +
                        it->path().string() + " giving " + join(hold->devices, ", ") +
                        (minors.empty() ? "" : " (" + minors + ")") +
                        "; those devices and GPUs stay held until the kubelet prepares or unprepares it");
    recovered_[*uid] = std::move(hold->devices);
    if (!hold->minors.empty()) recovered_minors_[*uid] = std::move(hold->minors);
  }
}

}  // namespace kgpu::dra
