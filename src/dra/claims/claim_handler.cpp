#include "dra/claims/claim_handler.h"

#include <spdlog/spdlog.h>

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
    if (auto st = sharing->apply(store->prepared(), *prepared); !st) {
      // A claim prepared by this call is rolled back, so the kubelet's retry starts afresh; one
      // prepared earlier (its containers may run) stays until the kubelet unprepares it.
      if (!repeated) (void)store->unprepare(ref.uid);
      return st.error();
    }
    if (!repeated && !prepared->share_daemons.empty()) shares_changed();
    return prepared->devices;
  };
  handler.prepared = [store](const ClaimRef& ref) { return store->is_prepared(ref.uid); };
  handler.unprepare = [store, sharing, after_unprepare = std::move(after_unprepare),
                       shares_changed](const ClaimRef& ref) -> Status {
    auto released = store->unprepare(ref.uid);
    if (!released) return released.error();
    if (*released)
      if (auto st = sharing->undo(**released, [store] { return store->prepared(); }); !st)
        spdlog::error("DRA: claim {} unprepared, but its MPS daemon was not stopped: {}", ref.uid, st.error().message);
    // The claim is gone either way: its resets are the store's record now, never forgotten.
    retry_pending_resets(*store, *sharing, "claim " + ref.uid + " unprepared");
    after_unprepare();
    if (*released && !(*released)->share_daemons.empty()) shares_changed();
    return ok_status();
  };
  return handler;
}

}  // namespace kgpu::dra
