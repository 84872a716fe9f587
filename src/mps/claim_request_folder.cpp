#include "mps/claim_request_folder.h"

#include <sys/inotify.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "core/safe_file.h"
#include "mps/claim_request.h"
#include "plan/mps_paths.h"

namespace kgpu {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxRequests = 4096;  // far above the claims a node can prepare; bounds a flood

std::vector<std::string> request_file_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.starts_with('.')) continue;  // write_file_atomically's temporary files
    names.push_back(std::move(name));
  }
  if (ec) spdlog::error("mps-daemon: cannot list {}: {}", dir, ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

void write_failure_note(const std::string& path, const std::string& message) {
  std::string line = message.substr(0, kMpsFailureNoteMaxBytes - 1);  // with its newline
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (auto st = write_file_atomically(path, line + "\n", 0644); !st)
    spdlog::warn("mps-daemon: cannot write failure note {}: {}", path, st.error().message);
}

MpsClaimRequestFolder::MpsClaimRequestFolder(std::string mps_root, uint64_t shm_bytes, UniqueFd inotify)
    : mps_root_(std::move(mps_root)), shm_bytes_(shm_bytes), inotify_(std::move(inotify)) {}

Result<MpsClaimRequestFolder> MpsClaimRequestFolder::open(const std::string& mps_root, uint64_t shm_bytes) {
  const std::string dir = mps_claim_requests_dir(mps_root);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::unavailable("cannot create " + dir + ": " + ec.message());
  UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd.valid()) return Error::unavailable(std::string("inotify_init1: ") + std::strerror(errno));
  if (::inotify_add_watch(fd.get(), dir.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR | IN_DONT_FOLLOW) < 0)
    return Error::unavailable("cannot watch " + dir + ": " + std::strerror(errno));
  return MpsClaimRequestFolder(mps_root, shm_bytes, std::move(fd));
}

std::optional<std::vector<MpsDaemonSpec>> MpsClaimRequestFolder::wanted() {
  alignas(inotify_event) char buffer[4096];
  while (::read(inotify_.get(), buffer, sizeof buffer) > 0) {
  }
  return read();
}

std::vector<MpsDaemonSpec> MpsClaimRequestFolder::read() const {
  const std::string dir = mps_claim_requests_dir(mps_root_);
  std::vector<MpsDaemonSpec> specs;
  for (const auto& name : request_file_names(dir)) {
    const auto uid = claim_uid_of_request_file(name);
    if (!uid) {
      spdlog::warn("mps-daemon: {}/{} is not a claim request (<claim UID>.json); ignoring it", dir, name);
      continue;
    }
    if (specs.size() >= kMaxRequests) {
      spdlog::error("mps-daemon: more than {} claim requests in {}; {} and later ones wait", kMaxRequests, dir, name);
      break;
    }
    auto request = [&]() -> Result<MpsClaimRequest> {
      auto text = read_regular_file(dir + "/" + name, kMpsClaimRequestMaxBytes, FollowLinks::No);
      if (!text) return text.error();
      auto parsed = parse_mps_claim_request(*text);
      if (parsed && parsed->claim_uid != *uid)
        return Error::invalid("it names claim " + parsed->claim_uid + ", not " + *uid);
      return parsed;
    }();
    if (!request) {
      if (request.error().code == Error::Code::NotFound) continue;  // removed while listing
      const std::string why = "request " + dir + "/" + name + " refused: " + request.error().message;
      spdlog::error("mps-daemon: {}", why);
      write_failure_note(mps_claim_failure_note(mps_root_, *uid), why);
      continue;
    }
    specs.push_back(mps_claim_daemon_spec(mps_root_, *request, shm_bytes_));
  }
  return specs;
}

std::vector<MpsDaemonSpec> MpsClaimRequestFolder::leftovers() const {
  // Claim folders are <mpsRoot>/dra/<uid> (mps_claim_resource).
  const fs::path claims = fs::path(mps_resource_dir(mps_root_, mps_claim_resource("x"))).parent_path();
  std::vector<MpsDaemonSpec> out;
  std::error_code ec;
  for (fs::directory_iterator it(claims, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string uid = it->path().filename().string();
    std::error_code st;
    if (!is_safe_claim_uid(uid) || !fs::is_directory(it->symlink_status(st))) continue;
    struct stat request {};
    if (::lstat(mps_claim_request_file(mps_root_, uid).c_str(), &request) == 0 || errno != ENOENT) continue;
    out.push_back(mps_claim_daemon_spec(mps_root_, MpsClaimRequest{uid, {}, std::nullopt, {}}, shm_bytes_));
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    spdlog::error("mps-daemon: cannot list {}: {}", claims.string(), ec.message());
  return out;
}

}  // namespace kgpu
