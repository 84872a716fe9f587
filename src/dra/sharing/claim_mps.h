#pragma once
// The plugin's half of a DRA claim's MPS control daemon (the other half is `kgpu mps-daemon`; the
// handshake is described in mps/claim_request.h): prepare writes the claim's request and waits
// until the supervisor's readiness marker for it is live, unprepare removes the request.
// Waiting is event-driven (inotify on the claim's folder) with a deadline, and ends at once when
// the supervisor writes a failure note or the owner cancels (daemon shutdown).
#include <chrono>
#include <string>

#include "core/result.h"
#include "mps/claim_request.h"

namespace kgpu::dra {

struct ClaimMpsOptions {
  std::string mps_root;
  // How long a prepare waits for the daemon: well inside the kubelet's own deadline for
  // NodePrepareResources, so the kubelet gets kgpu's reason rather than its own timeout.
  std::chrono::milliseconds ready_timeout{20000};
  int cancel_fd = -1;  // readable: give up waiting (shutdown)
};

class ClaimMps {
 public:
  explicit ClaimMps(ClaimMpsOptions options) : options_(std::move(options)) {}

  // Asks for the claim's daemon and waits until it runs with its limits. A repeated prepare of a
  // running claim rewrites the same request and returns at once. Errors: unavailable (the folder
  // cannot be written, the deadline passed: the message names `kgpu mps-daemon` and mpsRoot, the
  // wait was cancelled), precondition (the supervisor could not start it: its failure note). A
  // request this call created is withdrawn again on error.
  Status start(const MpsClaimRequest& request) const;

  // Withdraws the request; the supervisor quits the daemon and removes the claim's folder.
  // A missing request is fine (unprepare is retried).
  Status stop(const std::string& claim_uid) const;

 private:
  Status wait_ready(const std::string& claim_uid) const;
  ClaimMpsOptions options_;
};

}  // namespace kgpu::dra
