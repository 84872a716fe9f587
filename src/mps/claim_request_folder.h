#pragma once
// The supervisor's view of <mpsRoot>/dra-requests/: an inotify watch that wakes its poll loop when
// a request file is written or removed, and a reader that turns the folder into daemon specs.
// A file that is not a valid request is named in the log and, when its name is a claim UID, gets
// a failure note in that claim's folder, so the prepare waiting on it fails with the reason; it
// is never silently skipped.
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "mps/claim_shm.h"
#include "mps/daemon_source.h"
#include "mps/daemon_spec.h"

namespace kgpu {

class MpsClaimRequestFolder : public MpsDaemonSource {
 public:
  // Creates the folder when missing and watches it; each claim's daemon gets a shared-memory tmpfs
  // of `shm_bytes`. Error: the folder cannot be created or watched.
  static Result<MpsClaimRequestFolder> open(const std::string& mps_root, uint64_t shm_bytes = kClaimShmFallbackBytes);

  std::string name() const override { return "DRA claims"; }
  int fd() const override { return inotify_.get(); }  // readable after a change
  std::optional<std::vector<MpsDaemonSpec>> wanted() override;  // drains, then read()
  bool removes_released_folders() const override { return true; }
  // The folders under <mpsRoot>/dra/ named by a claim UID with no request file (issue 38, item 2).
  std::vector<MpsDaemonSpec> leftovers() const override;

  // One spec per valid request, in file-name order.
  std::vector<MpsDaemonSpec> read() const;

 private:
  MpsClaimRequestFolder(std::string mps_root, uint64_t shm_bytes, UniqueFd inotify);
  std::string mps_root_;
  uint64_t shm_bytes_;
  UniqueFd inotify_;
};

// Writes `message` (one line, cut to 1 KiB) as the failure note at `path`; best effort, logged.
void write_failure_note(const std::string& path, const std::string& message);

}  // namespace kgpu
