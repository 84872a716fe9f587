#pragma once
// The device metadata files of one driver's prepared claims on disk (KEP-5304; what they hold and
// where: device_metadata.h). Written when a claim is prepared, removed when it is unprepared, and
// crash safe the way the claims' CDI specs are: every file is replaced atomically (a reader sees
// the old or the new one), a repeated prepare writes what is missing, and at start the files of
// claims that are no longer prepared (kgpu was killed between the unprepare and the clean-up) and
// the temporaries a killed write left are removed. Thread-safe.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.h"
#include "core/result.h"
#include "dra/health/device_metadata.h"

namespace kgpu::dra::health {

class MetadataFiles {
 public:
  explicit MetadataFiles(MetadataLayout layout);

  // The claim's pod-claim-name annotation, seen when the claim was read from the API server
  // (pod_claim_name.h); kept until the claim's files are written.
  void note_claim(const std::string& ns, const std::string& name, std::optional<std::string> pod_claim_name);
  // What the devices are now: the published pool and its inventory (every plan).
  void set_devices(DriverPool pool, std::shared_ptr<const Inventory> inventory);

  // Writes the claim's files (a claim prepared before whose files exist is left as it is: its
  // annotation may not be known after a restart) and returns `claim.devices` with the metadata CDI
  // devices added. Error naming the file that could not be written.
  Result<std::vector<PreparedDevice>> write(const PreparedClaim& claim);
  // Removes the claim's CDI specs and, unless `keep_folder` (another prepared claim has the same
  // namespace and name), its documents. Idempotent.
  Status remove(const ClaimRef& ref, bool keep_folder = false);
  // At start: removes the files of claims not in `prepared` and stale temporaries; what it could
  // not remove, as warnings.
  std::vector<std::string> remove_orphans(const std::vector<PreparedClaim>& prepared);

  const MetadataLayout& layout() const { return layout_; }

 private:
  const MetadataLayout layout_;
  mutable std::mutex mu_;
  std::map<std::string, std::optional<std::string>> pod_claim_names_;  // "<ns>/<name>" -> annotation
  DriverPool pool_;
  std::shared_ptr<const Inventory> inventory_;
};

}  // namespace kgpu::dra::health
