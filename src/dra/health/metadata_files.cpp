#include "dra/health/metadata_files.h"

#include <filesystem>
#include <set>

#include "core/safe_file.h"

namespace kgpu::dra::health {

namespace fs = std::filesystem;

namespace {

bool exists_regular(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(path, ec));
}

}  // namespace

MetadataFiles::MetadataFiles(MetadataLayout layout) : layout_(std::move(layout)) {}

void MetadataFiles::note_claim(const std::string& ns, const std::string& name,
                               std::optional<std::string> pod_claim_name) {
  std::lock_guard lock(mu_);
  pod_claim_names_[ns + "/" + name] = std::move(pod_claim_name);
}

void MetadataFiles::set_devices(DriverPool pool, std::shared_ptr<const Inventory> inventory) {
  std::lock_guard lock(mu_);
  pool_ = std::move(pool);
  inventory_ = std::move(inventory);
}

Result<std::vector<PreparedDevice>> MetadataFiles::write(const PreparedClaim& claim) {
  std::vector<MetadataFile> files;
  bool noted = false;
  {
    std::lock_guard lock(mu_);
    const std::string key = claim.ref.ns + "/" + claim.ref.name;
    auto it = pod_claim_names_.find(key);
    noted = it != pod_claim_names_.end();
    const Inventory empty;
    files = claim_metadata(layout_, claim, noted ? it->second : std::nullopt, pool_, inventory_ ? *inventory_ : empty);
    if (noted) pod_claim_names_.erase(it);
  }
  for (const auto& f : files) {
    // Prepared before (a repeated prepare, a restart): the files written then stay as they are.
    if (!noted && exists_regular(f.metadata_path) && exists_regular(f.cdi_path)) continue;
    std::error_code ec;
    fs::create_directories(fs::path(f.metadata_path).parent_path(), ec);
    if (ec)
      return Error::unavailable("device metadata: cannot create " + fs::path(f.metadata_path).parent_path().string() +
                                ": " + ec.message());
    if (auto st = write_file_atomically(f.metadata_path, f.metadata_text, 0644); !st)
      return Error::unavailable("device metadata: " + st.error().message);
    fs::create_directories(layout_.cdi_dir, ec);
    // The document first, then the spec that mounts it: a spec never names a missing file.
    if (auto st = write_file_atomically(f.cdi_path, f.cdi_text, 0644); !st)
      return Error::unavailable("device metadata: " + st.error().message);
  }
  return with_metadata_devices(claim.devices, files);
}

Status MetadataFiles::remove(const ClaimRef& ref, bool keep_folder) {
  const std::string prefix = metadata_cdi_prefix(layout_, ref.uid);
  std::error_code ec;
  fs::directory_iterator it(layout_.cdi_dir, ec);
  std::string failed;
  if (!ec)
    for (const auto end = fs::directory_iterator(); it != end; it.increment(ec)) {
      if (ec) break;
      const std::string name = it->path().filename().string();
      if (!name.starts_with(prefix) || !name.ends_with(".json")) continue;
      std::error_code rm;
      fs::remove(it->path(), rm);
      if (rm) failed += (failed.empty() ? "" : "; ") + it->path().string() + ": " + rm.message();
    }
  if (!keep_folder && !ref.ns.empty() && !ref.name.empty() && ref.ns.find('/') == std::string::npos &&
      ref.name.find('/') == std::string::npos && ref.ns != ".." && ref.name != "..") {
    std::error_code rm;
    fs::remove_all(claim_metadata_dir(layout_, ref.ns, ref.name), rm);
    if (rm) failed += (failed.empty() ? "" : "; ") + claim_metadata_dir(layout_, ref.ns, ref.name) + ": " + rm.message();
  }
  if (!failed.empty()) return Error::unavailable("device metadata: cannot remove " + failed);
  return ok_status();
}

std::vector<std::string> MetadataFiles::remove_orphans(const std::vector<PreparedClaim>& prepared) {
  std::set<std::string> uids, folders;
  for (const auto& c : prepared) {
    uids.insert(c.ref.uid);
    folders.insert(fs::path(claim_metadata_dir(layout_, c.ref.ns, c.ref.name)).filename().string());
  }
  std::vector<std::string> warnings;
  auto remove = [&](const fs::path& p, bool all) {
    std::error_code rm;
    if (all) fs::remove_all(p, rm);
    else fs::remove(p, rm);
    if (rm) warnings.push_back("device metadata: cannot remove " + p.string() + ": " + rm.message());
  };
  const std::string head = layout_.driver + "_metadata_";
  const std::string temp_head = "." + head;
  std::error_code ec;
  for (fs::directory_iterator it(layout_.cdi_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code st;
    if (!fs::is_regular_file(it->symlink_status(st))) continue;
    if (name.starts_with(temp_head) && name.find(".json.kgpu-") != std::string::npos) {
      remove(it->path(), false);
    } else if (name.starts_with(head) && name.ends_with(".json")) {
      const std::string rest = name.substr(head.size());
      const std::string uid = rest.substr(0, rest.find('_'));  // UIDs hold no '_'
      if (!uids.contains(uid)) remove(it->path(), false);
    }
  }
  const fs::path root = fs::path(layout_.plugin_data_dir) / "dra-device-metadata";
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!folders.contains(it->path().filename().string())) {
      remove(it->path(), true);
      continue;
    }
    std::error_code walk;
    for (fs::recursive_directory_iterator r(it->path(), walk), rend; !walk && r != rend; r.increment(walk)) {
      const std::string name = r->path().filename().string();
      std::error_code st;
      if (name.starts_with(".metadata.json.kgpu-") && fs::is_regular_file(r->symlink_status(st))) remove(r->path(), false);
    }
  }
  return warnings;
}

}  // namespace kgpu::dra::health
