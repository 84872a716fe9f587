#include "dra/claim_metadata.h"

#include <spdlog/spdlog.h>

#include <algorithm>

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
    const auto staying = store->prepared_staying();
    const bool keep = std::any_of(staying.begin(), staying.end(), [&](const PreparedClaim& c) {
      return c.ref.ns == claim.ns && c.ref.name == claim.name && c.ref.uid != claim.uid;
    });
    return metadata->remove(claim, keep);
  };
  return outer;
}

}  // namespace kgpu::dra
