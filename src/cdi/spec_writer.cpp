#include "cdi/spec_writer.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "core/json_depth.h"
#include "core/safe_file.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;

// A spec this program wrote: a regular file (not a link) named kgpu-*.json holding a CDI spec whose
// kind maps to exactly that name. Anything else in the folder, kgpu-* or not, is someone else's.
bool is_our_spec(const fs::path& file) {
  const std::string name = file.filename().string();
  if (!name.starts_with("kgpu-") || !name.ends_with(".json")) return false;
  auto text = read_regular_file(file.string(), kOwnFileLimit, FollowLinks::No);
  if (!text || !check_json_depth(*text, "CDI spec")) return false;
  const auto spec = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object() || !spec.contains("cdiVersion")) return false;
  const auto kind = spec.find("kind");
  return kind != spec.end() && kind->is_string() && cdi_spec_file_name(kind->get<std::string>()) == name;
}

}  // namespace

std::string cdi_spec_file_name(const std::string& kind) {
  std::string name = kind;
  for (char& c : name)
    if (c == '/') c = '-';
  return "kgpu-" + name + ".json";
}

std::string cdi_spec_text(const nlohmann::json& spec) {
  // JSON strings are UTF-8; a path that is not (a driver root named in Latin-1) must not throw
  // from dump(): its bad bytes become U+FFFD (the scan already skipped such file names).
  return spec.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<std::string> write_cdi_spec(const std::string& dir, const std::string& kind, const nlohmann::json& spec) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::unavailable("cannot create CDI spec folder " + dir + ": " + ec.message());
  const std::string name = cdi_spec_file_name(kind);
  const std::string path = (fs::path(dir) / name).string();
  // Runtimes (often another user) must be able to read it, whatever the umask.
  if (auto st = write_file_atomically(path, cdi_spec_text(spec), 0644); !st)
    return Error::unavailable("cannot write CDI spec " + path + ": " + st.error().message);

  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == name || !is_our_spec(it->path())) continue;
    std::error_code removed;
    fs::remove(it->path(), removed);  // unlink: never follows a link
  }
  return path;
}

}  // namespace kgpu
