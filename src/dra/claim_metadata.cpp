#include "dra/claim_metadata.h"

#include <spdlog/spdlog.h>

namespace kgpu::dra {

ClaimHandler with_device_metadata(ClaimHandler inner, const ClaimStore* store, health::MetadataFiles* metadata) {
  ClaimHandler outer = inner;
  outer.prepare = [prepare = inner.prepare, store, metadata](const ClaimRef& ref) -> Result<std::vector<PreparedDevice>> {
    auto devices = prepare(ref);
    if (!devices) return devices;
    auto claim = store->prepared_claim(ref.uid);
    if (!claim) return devices;
    auto with_metadata = metadata->write(*claim);
    if (with_metadata) return *with_metadata;
    spdlog::error("DRA: claim {}/{} ({}) prepared without its device metadata: {}", ref.ns, ref.name, ref.uid,
                  with_metadata.error().message);
    return devices;
  };
  outer.unprepare = [unprepare = inner.unprepare, store, metadata](const ClaimRef& ref) -> Status {
    const auto gone = store->prepared_claim(ref.uid);
    if (auto st = unprepare(ref); !st) return st;
    const ClaimRef& claim = gone ? gone->ref : ref;
    // A claim of the same name prepared since (a new UID) keeps its folder.
    return metadata->remove(claim, store->another_staying_named(claim.ns, claim.name, claim.uid));
  };
  return outer;
}

}  // namespace kgpu::dra
