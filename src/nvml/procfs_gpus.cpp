#include "nvml/procfs_gpus.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>

#include "core/safe_file.h"

namespace kgpu {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// The file is a few hundred bytes; anything larger is not the driver's.
constexpr size_t kMaxInformationBytes = 64 * 1024;

}  // namespace

Result<ProcfsGpu> parse_procfs_gpu_information(const std::string& text) {
  ProcfsGpu gpu;
  bool have_minor = false;
  std::string minor_text;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (!printable(value)) return Error::invalid("\"" + std::string(key) + "\" holds bytes that are not printable text");
    if (key == "GPU UUID") gpu.uuid = value;
    else if (key == "Model") gpu.model = value;
    else if (key == "Bus Location") gpu.bus_location = value;
    else if (key == "GPU Excluded") gpu.excluded = value == "Yes";
    else if (key == "Device Minor") {
      have_minor = true;
      minor_text = value;
    }
  }
  if (!gpu.uuid.starts_with("GPU-") || gpu.uuid.size() > 64 || gpu.uuid.find('?') != std::string::npos)
    return Error::invalid("no usable \"GPU UUID\" (\"" + gpu.uuid + "\")");
  if (gpu.bus_location.empty() || gpu.bus_location.size() > 32) return Error::invalid("no \"Bus Location\"");
  if (!have_minor) return Error::invalid("no \"Device Minor\"");
  int minor = -1;
  auto [end, ec] = std::from_chars(minor_text.data(), minor_text.data() + minor_text.size(), minor);
  if (ec != std::errc() || end != minor_text.data() + minor_text.size() || minor < 0 || minor > 255)
    return Error::invalid("\"Device Minor\" \"" + minor_text + "\" is not a number from 0 to 255");
  gpu.minor = minor;
  return gpu;
}

std::vector<ProcfsGpu> read_procfs_gpus(const std::string& proc_root, std::vector<std::string>& problems) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(proc_root) / "driver" / "nvidia" / "gpus", ec), end; !ec && it != end;
       it.increment(ec))
    files.push_back(it->path() / "information");
  std::sort(files.begin(), files.end());
  std::vector<ProcfsGpu> gpus;
  for (const auto& file : files) {
    // Bounded, and never a FIFO or device that would block discovery.
    auto text = read_regular_file(file.string(), kMaxInformationBytes);
    if (!text) {
      problems.push_back(text.error().message);
      continue;
    }
    auto gpu = parse_procfs_gpu_information(*text);
    if (!gpu) {
      problems.push_back(file.string() + ": " + gpu.error().message);
      continue;
    }
    gpus.push_back(std::move(*gpu));
  }
  return gpus;
}

}  // namespace kgpu
