#include "mig_state.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kgpu::fake_nvml {

namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

unsigned long long loads = 0;  // under the library's lock, as every caller is

}  // namespace

unsigned long long mig_state_salt() {
  if (env("KGPU_FAKE_NVML_MIG_STATE").empty()) return 0;
  return (static_cast<unsigned long long>(::getpid()) << 32) + (loads << 20);
}

void save_mig_state(const Fleet& fleet) {
  const std::string path = env("KGPU_FAKE_NVML_MIG_STATE");
  if (path.empty()) return;
  std::ostringstream out;
  for (size_t g = 0; g < fleet.gpus.size(); ++g) {
    const Mig& mig = fleet.gpus[g].mig;
    if (!mig.capable) continue;
    out << "mode " << g << " " << mig.mode << "\n";
    for (const GpuInstance& gi : mig.instances) {
      out << "gi " << g << " " << gi.id << " " << gi.profile.id << " " << gi.placement << "\n";
      for (const ComputeInstance& ci : gi.compute_instances)
        out << "ci " << g << " " << gi.id << " " << ci.id << " " << ci.slices << " " << ci.placement << " " << ci.uuid
            << "\n";
    }
  }
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << out.str();
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) std::fprintf(stderr, "fake-nvml: cannot write %s: %s\n", path.c_str(), ec.message().c_str());
}

void load_mig_state(Fleet& fleet) {
  const std::string path = env("KGPU_FAKE_NVML_MIG_STATE");
  if (path.empty()) return;
  ++loads;
  std::ifstream in(path);
  if (!in) return;
  std::vector<bool> named(fleet.gpus.size(), false);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    size_t g = 0;
    words >> kind >> g;
    if (!words || g >= fleet.gpus.size() || !fleet.gpus[g].mig.table) {
      std::fprintf(stderr, "fake-nvml: %s: skipped line \"%s\"\n", path.c_str(), line.c_str());
      continue;
    }
    Mig& mig = fleet.gpus[g].mig;
    if (!named[g]) {
      mig.instances.clear();
      named[g] = true;
    }
    if (kind == "mode") {
      words >> mig.mode;
      mig.pending = mig.mode;
    } else if (kind == "gi") {
      GpuInstance gi;
      unsigned profile_id = 0;
      words >> gi.id >> profile_id >> gi.placement;
      bool found = false;
      for (const GiProfile& p : mig.table->profiles)
        if (p.id == profile_id) {
          gi.profile = p;
          found = true;
        }
      if (words && found) mig.instances.push_back(std::move(gi));
    } else if (kind == "ci") {
      unsigned gi_id = 0;
      ComputeInstance ci;
      words >> gi_id >> ci.id >> ci.slices >> ci.placement >> ci.uuid;
      for (GpuInstance& gi : mig.instances)
        if (words && gi.id == gi_id) gi.compute_instances.push_back(ci);
    }
  }
}

void wait_at_ci_create_gate() {
  const std::string gate = env("KGPU_FAKE_NVML_BLOCK_CI_CREATE");
  if (gate.empty() || fs::exists(gate)) return;
  std::ofstream(gate + ".blocked").flush();
  // Inside the fake, not a test's synchronisation: the test waits for .blocked, then kills us.
  const timespec pause{0, 5'000'000};
  while (!fs::exists(gate)) ::nanosleep(&pause, nullptr);
}

}  // namespace kgpu::fake_nvml
