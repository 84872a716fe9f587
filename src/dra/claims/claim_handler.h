#pragma once
// What the kubelet's DRA calls do for one driver (the kubelet plugin's ClaimHandler): the claim
// store prepares a claim, then its sharing is applied on the node (time slices, compute modes, MPS
// daemons), and a prepare whose sharing fails is rolled back so the kubelet's retry starts afresh.
// An unprepare releases the claim, then undoes its sharing; the unprepares of one kubelet call
// become durable together (settle_unprepares: one checkpoint write per call); time-slice resets left pending by a
// failed or interrupted undo are retried before every prepare and after every unprepare.
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "dra/claims/claim_store.h"
#include "dra/model/claim.h"
#include "dra/sharing/claim_sharing.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra {

// What the kubelet plugin asks of the rest of kgpu; each function thread-safe and idempotent.
struct ClaimHandler {
  std::function<Result<std::vector<PreparedDevice>>(const ClaimRef&)> prepare;
  std::function<Status(const ClaimRef&)> unprepare;
  // Whether a prepare of this claim is answered without reading the API server (it is prepared
  // already): such a prepare runs in the Local lane (claim_calls.h). Unset: never.
  std::function<bool(const ClaimRef&)> prepared;
  // Called once per NodeUnprepareResources call, before it is answered, with the UIDs whose
  // unprepare succeeded: makes them durable at once (one checkpoint write per call, not per claim);
  // an error fails each of them. Unset: each unprepare was durable when it returned.
  std::function<Status(const std::vector<std::string>& uids)> settle_unprepares;
};

// The handler of one driver's claims. `after_unprepare` runs after each unprepare call has settled
// (a GPU a claim kept from its configured API may go back to it); `shares_changed` after a claim with memory
// shares came or went (the shared GPUs' daemons to watch change). Both pointers outlive it.
ClaimHandler claim_handler(ClaimStore* store, const ClaimSharing* sharing, std::function<void()> after_unprepare,
                           std::function<void()> shares_changed);

// Time-slice resets an earlier unprepare left pending (nvidia-smi failed, or kgpu was killed
// before it ran): retried at start and at every kubelet call until they succeed; a claim that
// would use such a GPU is refused meanwhile (ClaimStore). A failure is logged, naming `when`.
void retry_pending_resets(ClaimStore& store, const ClaimSharing& sharing, const std::string& when);

}  // namespace kgpu::dra
