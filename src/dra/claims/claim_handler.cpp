#include "dra/claims/claim_handler.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <set>

namespace kgpu::dra {

void retry_pending_resets(ClaimStore& store, const ClaimSharing& sharing, const std::string& when) {
  if (auto st = sharing.run_pending_resets(pending_resets_of(store)); !st)
    spdlog::error("DRA: {}: a time-slice reset is still pending (retried at the next kubelet call and at start; "
                  "the GPU is not prepared for another claim until it succeeds): {}",
                  when, st.error().message);
}

ClaimHandler claim_handler(ClaimStore* store, const ClaimSharing* sharing, std::function<void()> after_unprepare,
                           std::function<void()> shares_changed) {
  ClaimHandler handler;
  handler.prepare = [store, sharing, shares_changed](const ClaimRef& ref) -> Result<std::vector<PreparedDevice>> {
    retry_pending_resets(*store, *sharing, "before preparing claim " + ref.uid);
    const bool repeated = store->is_prepared(ref.uid);
    auto prepared = store->prepare(ref);
    if (!prepared) return prepared.error();
    // The other prepared claims matter only to a claim that sets time slices (their intervals must
    // agree): not copied for every prepare (1,000 in one call copied 500,000 claims; issue 40).
    const auto others = prepared->time_slicing.empty() ? std::vector<PreparedClaim>{} : store->prepared();
    if (auto st = sharing->apply(others, *prepared); !st) {
      // A claim prepared by this call is rolled back, so the kubelet's retry starts afresh; one
      // prepared earlier (its containers may run) stays until the kubelet unprepares it.
      if (!repeated) (void)store->unprepare(ref.uid);
      return st.error();
    }
    if (!repeated && !prepared->share_daemons.empty()) shares_changed();
    return prepared->devices;
  };
  handler.prepared = [store](const ClaimRef& ref) { return store->is_prepared(ref.uid); };
  // The call's unprepares become durable together, when it settles (ClaimStore::Durability); until
  // then their claims still hold their devices (prepared()), so the re-plans that follow a released
  // claim run again once they are settled. Which claims had memory shares, for that re-plan.
  struct Unsettled {
    std::mutex mu;
    std::set<std::string> shared;
  };
  auto unsettled = std::make_shared<Unsettled>();
  handler.unprepare = [store, sharing, unsettled](const ClaimRef& ref) -> Status {
    auto released = store->unprepare(ref.uid, ClaimStore::Durability::AtSettle);
    if (!released) return released.error();
    if (*released)
      if (auto st = sharing->undo(**released, [store] { return store->prepared_staying(); }); !st)
        spdlog::error("DRA: claim {} unprepared, but its MPS daemon was not stopped: {}", ref.uid, st.error().message);
    // The claim is gone either way: its resets are the store's record now, never forgotten.
    retry_pending_resets(*store, *sharing, "claim " + ref.uid + " unprepared");
    if (*released && !(*released)->share_daemons.empty()) {
      std::lock_guard lock(unsettled->mu);
      unsettled->shared.insert(ref.uid);
    }
    return ok_status();
  };
  handler.settle_unprepares = [store, after_unprepare = std::move(after_unprepare), shares_changed,
                               unsettled](const std::vector<std::string>& uids) -> Status {
    Status st = store->settle(uids);
    bool shares = false;
    {
      std::lock_guard lock(unsettled->mu);
      for (const auto& uid : uids) shares |= unsettled->shared.erase(uid) > 0;
    }
    after_unprepare();
    if (shares) shares_changed();
    return st;
  };
  return handler;
}

}  // namespace kgpu::dra
