#include "nvml/discovery.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/safe_file.h"
#include "nvml/device_checks.h"
#include "nvml/mig_facts.h"
#include "nvml/procfs_gpus.h"

namespace kgpu {

namespace {

// The procfs/sysfs files read here are a few KiB at most; a larger one (or a FIFO, which must
// not block discovery) is refused by the shared bounded read. Empty when the file cannot be read.
std::optional<std::string> read_text_file(const std::string& path) {
  auto text = read_regular_file(path, size_t{1} << 20);
  if (!text) return std::nullopt;
  return std::move(*text);
}

// A GPU's NUMA node from sysfs; absent when the file is missing, unparsable or negative (the
// kernel writes -1 on single-node machines).
std::optional<int> read_numa_node(const std::string& sysfs_root, const std::string& nvml_bus_id) {
  std::string bdf = sysfs_pci_address(nvml_bus_id);
  if (bdf.empty()) return std::nullopt;
  auto text = read_text_file(sysfs_root + "/bus/pci/devices/" + bdf + "/numa_node");
  if (!text) return std::nullopt;
  try {
    int node = std::stoi(*text);
    if (node < 0) return std::nullopt;
    return node;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string bus_id_of(const nvmlPciInfo_t& pci) {
  std::string id(pci.busId, strnlen(pci.busId, sizeof pci.busId));
  if (!id.empty()) return id;
  return fmt::format("{:08X}:{:02X}:{:02X}.0", pci.domain, pci.bus, pci.device);
}

bool is_absent(nvmlReturn_t code) {
  return code == NVML_ERROR_NOT_SUPPORTED || code == NVML_ERROR_FUNCTION_NOT_FOUND;
}

// One GPU found through NVML, with the handle topology discovery needs afterwards.
struct FoundGpu {
  Gpu gpu;
  nvmlDevice_t handle = nullptr;
  bool lost = false;
};

class Discoverer {
 public:
  Discoverer(NvmlLibrary& nvml, const NvidiaDiscoveryOptions& options) : nvml_(nvml), options_(options) {}

  Result<Inventory> run() {
    auto count = nvml_.device_count();
    if (!count) return Error{count.error().code, "cannot count NVIDIA GPUs: " + count.error().message};
    if (auto v = nvml_.driver_version()) inventory_.driver_version = *v;
    else warn("driver version", v.error().message);
    if (auto v = nvml_.cuda_driver_version()) inventory_.cuda_driver_version = *v;
    else if (!is_absent(v.nvml_code())) warn("CUDA driver version", v.error().message);

    auto usable = check_device_count(*count);
    if (usable.problem) warn("NVML", *usable.problem);
    for (unsigned i = 0; i < usable.usable; ++i)
      if (!discover_gpu(i) && usable.problem) break;  // past the real devices of an absurd count
    add_lost_from_procfs();
    drop_repeated_uuids();
    read_topology();
    for (auto& f : found_) inventory_.gpus.push_back(std::move(f.gpu));
    return std::move(inventory_);
  }

 private:
  void warn(const std::string& what, const std::string& why) { inventory_.warnings.push_back(what + ": " + why); }

  static std::string label(const Gpu& g) { return fmt::format("GPU {} ({})", g.index, g.uuid); }

  // Records a failed per-GPU query. Returns false when the GPU is lost, so the caller stops asking
  // it questions (every further call would fail the same way).
  template <typename T>
  bool note(FoundGpu& f, const NvmlResult<T>& r, bool essential) {
    if (r.ok()) return true;
    if (r.nvml_code() == NVML_ERROR_GPU_IS_LOST) {
      f.lost = true;
      f.gpu.health = {false, "GPU is lost (" + r.error().message + ")"};
      warn(label(f.gpu), r.error().message + "; marked unhealthy");
      return false;
    }
    if (essential) {
      if (f.gpu.health.healthy) f.gpu.health = {false, "query failed: " + r.error().message};
      warn(label(f.gpu), r.error().message + "; marked unhealthy");
    } else if (!is_absent(r.nvml_code())) {
      warn(label(f.gpu), r.error().message);
    }
    return true;
  }

  // False when NVML has no device at this index.
  bool discover_gpu(unsigned index) {
    auto handle = nvml_.device_by_index(index);
    if (!handle) {
      if (handle.nvml_code() == NVML_ERROR_GPU_IS_LOST) return note_unidentified(index, handle.error().message);
      warn(fmt::format("GPU {}", index), handle.error().message + "; left out");
      return handle.nvml_code() != NVML_ERROR_INVALID_ARGUMENT;
    }
    auto id = nvml_.uuid(*handle);
    if (!id) {
      if (id.nvml_code() == NVML_ERROR_GPU_IS_LOST) return note_unidentified(index, id.error().message);
      warn(fmt::format("GPU {}", index), id.error().message + "; left out (no UUID to advertise it by)");
      return true;
    }
    FoundGpu f;
    f.handle = *handle;
    f.gpu.vendor = Vendor::Nvidia;
    f.gpu.index = static_cast<int>(index);
    f.gpu.uuid = *id;
    fill_gpu(f);
    found_.push_back(std::move(f));
    return true;
  }

  // NVML counts this GPU but cannot open or name it: lost before kgpu started (XID 79, fallen off
  // the bus). add_lost_from_procfs() finds who it is.
  bool note_unidentified(unsigned index, const std::string& why) {
    unidentified_.push_back({index, why});
    return true;
  }

  // The GPUs NVML could not identify, named from the driver's procfs entries (written when it probed
  // them) and kept as lost: the scheduler sees them unhealthy (DRA: a gpu-lost taint) instead of a
  // node that silently has a GPU less. Entries NVML already named, or that the driver excluded, are
  // not these; NVML numbers GPUs in PCI bus order, as the entries are sorted.
  void add_lost_from_procfs() {
    if (unidentified_.empty()) return;
    std::vector<std::string> problems;
    auto entries = read_procfs_gpus(options_.proc_root, problems);
    for (const auto& p : problems) warn("procfs", p);
    std::set<std::string> named;
    for (const auto& f : found_) named.insert(f.gpu.uuid);
    size_t next = 0;
    for (const auto& e : entries) {
      if (next == unidentified_.size()) break;
      if (e.excluded || named.contains(e.uuid)) continue;
      const auto& [index, why] = unidentified_[next++];
      FoundGpu f;
      f.lost = true;
      Gpu& g = f.gpu;
      g.vendor = Vendor::Nvidia;
      g.index = static_cast<int>(index);
      g.uuid = e.uuid;
      g.product = e.model;
      g.pci_bus_id = e.bus_location;
      g.numa_node = read_numa_node(options_.sysfs_root, g.pci_bus_id);
      g.minor = e.minor;
      g.device_nodes.push_back({fmt::format("/dev/nvidia{}", g.minor)});
      g.health = {false, "GPU is lost (" + why + "; named by the driver's /proc/driver/nvidia/gpus entry)"};
      warn(label(g), why + "; known from the driver's procfs entry, marked unhealthy");
      found_.push_back(std::move(f));
    }
    for (; next < unidentified_.size(); ++next)
      warn(fmt::format("GPU {}", unidentified_[next].first),
           unidentified_[next].second + "; left out (no UUID from NVML, no procfs entry left to name it)");
    std::stable_sort(found_.begin(), found_.end(), [](const FoundGpu& a, const FoundGpu& b) { return a.gpu.index < b.gpu.index; });
  }

  // A UUID NVML reports twice (GPU or MIG device) is served once, for the first device that has
  // it: the container runtime resolves a UUID to one device, and advertising both copies would let
  // two containers be given the same one.
  void drop_repeated_uuids() {
    std::vector<std::string> ids;
    std::vector<std::pair<size_t, size_t>> where;  // (found_ position, MIG position + 1; 0: the GPU)
    for (size_t i = 0; i < found_.size(); ++i) {
      ids.push_back(found_[i].gpu.uuid);
      where.emplace_back(i, 0);
      for (size_t j = 0; j < found_[i].gpu.mig_devices.size(); ++j) {
        ids.push_back(found_[i].gpu.mig_devices[j].uuid);
        where.emplace_back(i, j + 1);
      }
    }
    auto repeated = repeated_positions(ids);
    if (repeated.empty()) return;
    std::vector<bool> drop_gpu(found_.size(), false);
    std::vector<std::vector<bool>> drop_mig(found_.size());
    for (size_t i = 0; i < found_.size(); ++i) drop_mig[i].assign(found_[i].gpu.mig_devices.size(), false);
    for (size_t pos : repeated) {
      auto [i, j] = where[pos];
      const Gpu& g = found_[i].gpu;
      if (j == 0) {
        drop_gpu[i] = true;
        warn(label(g), "NVML reports this UUID for an earlier device too; left out (served once)");
      } else {
        drop_mig[i][j - 1] = true;
        warn(fmt::format("{} MIG device {} ({})", label(g), g.mig_devices[j - 1].index, g.mig_devices[j - 1].uuid),
             "NVML reports this UUID for an earlier device too; left out (served once)");
      }
    }
    std::vector<FoundGpu> kept;
    for (size_t i = 0; i < found_.size(); ++i) {
      if (drop_gpu[i]) continue;
      auto& migs = found_[i].gpu.mig_devices;
      std::vector<MigDevice> kept_migs;
      for (size_t j = 0; j < migs.size(); ++j)
        if (!drop_mig[i][j]) kept_migs.push_back(std::move(migs[j]));
      migs = std::move(kept_migs);
      kept.push_back(std::move(found_[i]));
    }
    found_ = std::move(kept);
  }

  void fill_gpu(FoundGpu& f) {
    Gpu& g = f.gpu;
    nvmlDevice_t h = f.handle;
    auto name = nvml_.name(h);
    if (!note(f, name, false)) return;
    if (name) g.product = *name;

    auto pci = nvml_.pci_info(h);
    if (!note(f, pci, true)) return;
    if (pci) {
      g.pci_bus_id = bus_id_of(*pci);
      g.pci_device_id = pci->pciDeviceId;
      g.numa_node = read_numa_node(options_.sysfs_root, g.pci_bus_id);
    }

    auto minor = nvml_.minor_number(h);
    if (!note(f, minor, true)) return;
    if (minor) {
      g.minor = static_cast<int>(*minor);
      g.device_nodes.push_back({fmt::format("/dev/nvidia{}", g.minor)});
    }

    auto memory = nvml_.memory_info(h);
    if (!note(f, memory, false)) return;
    if (memory) g.memory_bytes = memory->total;

    auto cc = nvml_.compute_capability(h);
    if (!note(f, cc, false)) return;
    if (cc) std::tie(g.cc_major, g.cc_minor) = *cc;

    // The SM count, for memory shares' multiprocessors capacity. NVML has none for a whole GPU
    // (nvmlDeviceGetAttributes answers NOT_SUPPORTED but for MIG devices: an H100 with driver 580),
    // so it is CUDA's own derivation, the cores over the cores per SM of the compute capability.
    // Silent: 0 (an older NVML, an unknown capability) leaves the capacity unpublished.
    if (auto cores = nvml_.num_gpu_cores(h)) g.multiprocessors = sms_from_cores(*cores, g.cc_major, g.cc_minor);

    auto arch = nvml_.architecture(h);
    if (!note(f, arch, false)) return;
    g.architecture = architecture_name(arch ? *arch : NVML_DEVICE_ARCH_UNKNOWN, g.cc_major, g.cc_minor);

    auto brand = nvml_.brand(h);
    if (!note(f, brand, false)) return;
    if (brand) g.brand = brand_name(*brand);

    // Only on coherent-memory systems, with NVML 12.9+: absent or NOT_SUPPORTED leaves it out.
    auto addressing = nvml_.addressing_mode(h);
    if (!note(f, addressing, false)) return;
    if (addressing) g.addressing_mode = addressing_mode_name(*addressing);

    auto serial = nvml_.serial(h);
    if (!note(f, serial, false)) return;
    if (serial) g.serial = *serial;

    auto fabric = nvml_.fabric_info(h);
    if (!note(f, fabric, false)) return;
    if (fabric && fabric->completed) {
      g.fabric_cluster_uuid = fabric->cluster_uuid;
      g.fabric_clique = fabric->clique_id;
    }

    auto mig = nvml_.mig_mode(h);
    if (!note(f, mig, false)) return;
    if (mig) {
      g.mig_capable = true;
      g.mig_enabled = mig->current;
      if (g.mig_enabled) discover_mig_devices(f);
    }
  }

  // The MIG capability minors, or why they are unknown. Read once per discovery.
  const Result<MigMinors>& mig_minors() {
    if (!minors_) {
      std::string path = options_.proc_root + "/driver/nvidia-caps/mig-minors";
      auto text = read_text_file(path);
      if (!text) {
        minors_.emplace(Error::not_found("cannot read " + path));
      } else if (auto parsed = MigMinors::parse(*text); !parsed) {
        minors_.emplace(Error::invalid(path + ": " + parsed.error().message));
      } else {
        minors_.emplace(std::move(*parsed));
      }
      if (!minors_->ok())
        warn("MIG capabilities", minors_->error().message +
                                     "; MIG devices are marked unhealthy (their /dev/nvidia-caps nodes are unknown)");
    }
    return *minors_;
  }

  void discover_mig_devices(FoundGpu& f) {
    Gpu& g = f.gpu;
    auto max = nvml_.max_mig_device_count(f.handle);
    if (!note(f, max, false) || !max) return;
    auto slots = check_mig_device_count(*max);
    if (slots.problem) warn(label(g), *slots.problem);
    // A GPU instance reports its profile's ID (nvidia-smi mig -lgip: 19 for A100's 1g.5gb, 20 for
    // 1g.5gb+me), while the suffixes follow the profile's index (NVML_GPU_INSTANCE_PROFILE_*): map
    // one to the other as go-nvlib does, by asking each index for its ID, once per GPU.
    std::optional<std::map<unsigned, unsigned>> profile_index_by_id;
    auto profile_index = [&](unsigned id) -> std::optional<unsigned> {
      if (!profile_index_by_id) {
        profile_index_by_id.emplace();
        for (unsigned index = 0; index <= NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME; ++index)
          if (auto info = nvml_.gpu_instance_profile_info(f.handle, index))
            profile_index_by_id->emplace(info->id, index);
      }
      auto it = profile_index_by_id->find(id);
      return it == profile_index_by_id->end() ? std::nullopt : std::optional<unsigned>(it->second);
    };
    for (unsigned j = 0; j < slots.usable; ++j) {
      auto mig = nvml_.mig_device_by_index(f.handle, j);
      if (!mig) {
        // Empty slots answer NOT_FOUND / INVALID_ARGUMENT: that is how NVML says "no device here".
        if (mig.nvml_code() == NVML_ERROR_NOT_FOUND || mig.nvml_code() == NVML_ERROR_INVALID_ARGUMENT) continue;
        if (!note(f, mig, false)) return;
        continue;
      }
      std::string where = fmt::format("{} MIG device {}", label(g), j);
      auto id = nvml_.uuid(*mig);
      auto gi = nvml_.gpu_instance_id(*mig);
      auto ci = nvml_.compute_instance_id(*mig);
      auto attrs = nvml_.attributes(*mig);
      const Error* failure = !id ? &id.error() : !gi ? &gi.error() : !ci ? &ci.error() : !attrs ? &attrs.error() : nullptr;
      if (failure) {
        warn(where, failure->message + "; left out");
        continue;
      }
      MigDevice m;
      m.uuid = *id;
      m.index = static_cast<int>(j);
      m.gpu_instance_id = static_cast<int>(*gi);
      m.compute_instance_id = static_cast<int>(*ci);
      m.memory_bytes = attrs->memorySizeMB * 1024ULL * 1024ULL;
      m.multiprocessors = static_cast<int>(attrs->multiprocessorCount);
      m.gpu_instance_slices = static_cast<int>(attrs->gpuInstanceSliceCount);
      m.compute_instance_slices = static_cast<int>(attrs->computeInstanceSliceCount);
      m.copy_engines = static_cast<int>(attrs->sharedCopyEngineCount);
      m.decoders = static_cast<int>(attrs->sharedDecoderCount);
      m.encoders = static_cast<int>(attrs->sharedEncoderCount);
      m.jpeg_engines = static_cast<int>(attrs->sharedJpegCount);
      m.ofa_engines = static_cast<int>(attrs->sharedOfaCount);
      // The GI profile only decides suffixes such as "+me"; without it the base name stands.
      std::optional<unsigned> gi_profile;
      if (auto gih = nvml_.gpu_instance_by_id(f.handle, *gi)) {
        if (auto info = nvml_.gpu_instance_info(*gih)) {
          gi_profile = profile_index(info->profileId);
          m.gi_profile_id = static_cast<int>(info->profileId);
          m.placement_start = static_cast<int>(info->placement.start);
          m.placement_size = static_cast<int>(info->placement.size);
        }
      }
      m.profile = mig_profile_name(m.gpu_instance_slices, m.compute_instance_slices, attrs->memorySizeMB,
                                   g.memory_bytes, gi_profile);
      // Without its two capability nodes a container cannot open the MIG device: advertising it
      // healthy would hand out a device that fails in the container.
      const auto& minors = mig_minors();
      if (!minors) {
        m.health = {false, "MIG capability minors unknown (" + minors.error().message + ")"};
      } else if (auto nodes = mig_capability_nodes(*minors, g.minor, m.gpu_instance_id, m.compute_instance_id)) {
        m.capability_nodes = std::move(*nodes);
      } else {
        std::string why = fmt::format("no capability minors for gpu{}/gi{}/ci{} in mig-minors", g.minor,
                                      m.gpu_instance_id, m.compute_instance_id);
        m.health = {false, why};
        warn(where, why + "; marked unhealthy");
      }
      g.mig_devices.push_back(std::move(m));
    }
  }

  // Pairwise links, read once: PCIe common ancestors, then every GPU's active NVLinks and what is
  // at their far end (another GPU's PCI address, or an NVSwitch when it matches no GPU).
  void read_topology() {
    const size_t n = found_.size();
    Topology& topo = inventory_.topology;
    if (n == 0) return;
    topo.links.assign(n, std::vector<GpuLink>(n));
    auto usable = [&](size_t i) { return found_[i].handle != nullptr && !found_[i].lost; };

    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        if (!usable(a) || !usable(b)) continue;
        auto level = nvml_.common_ancestor(found_[a].handle, found_[b].handle);
        if (level) {
          topo.links[a][b].pcie = topo.links[b][a].pcie = pcie_level(*level);
        } else if (!is_absent(level.nvml_code())) {
          warn(label(found_[a].gpu) + " / " + label(found_[b].gpu), level.error().message);
        }
      }
    }

    std::map<std::string, size_t> by_address;
    for (size_t i = 0; i < n; ++i) {
      std::string addr = sysfs_pci_address(found_[i].gpu.pci_bus_id);
      if (!addr.empty()) by_address[addr] = i;
    }
    std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
    std::vector<int> switch_links(n, 0);
    for (size_t a = 0; a < n; ++a) {
      if (!usable(a)) continue;
      for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
        auto active = nvml_.nvlink_active(found_[a].handle, link);
        if (!active) {
          if (active.nvml_code() == NVML_ERROR_INVALID_ARGUMENT || active.nvml_code() == NVML_ERROR_FUNCTION_NOT_FOUND)
            break;  // past the product's last link, or no NVLink API at all
          continue;
        }
        if (!*active) continue;
        auto remote = nvml_.nvlink_remote_pci(found_[a].handle, link);
        if (!remote) continue;
        auto it = by_address.find(sysfs_pci_address(bus_id_of(*remote)));
        if (it != by_address.end() && it->second != a) {
          ++direct[a][it->second];
        } else if (it == by_address.end()) {
          ++switch_links[a];
        }
      }
    }

    size_t on_switch = 0, usable_count = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!usable(i)) continue;
      ++usable_count;
      if (switch_links[i] > 0) ++on_switch;
    }
    topo.nvswitch = usable_count > 0 && on_switch == usable_count;
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        // Each side counts the same lanes; take the larger in case one side could not read a link.
        int lanes = std::max(direct[a][b], direct[b][a]);
        if (switch_links[a] > 0 && switch_links[b] > 0) lanes += std::min(switch_links[a], switch_links[b]);
        topo.links[a][b].nvlinks = topo.links[b][a].nvlinks = lanes;
      }
    }
  }

  NvmlLibrary& nvml_;
  const NvidiaDiscoveryOptions& options_;
  Inventory inventory_;
  std::vector<FoundGpu> found_;
  std::vector<std::pair<unsigned, std::string>> unidentified_;  // NVML index, why (GPU_IS_LOST)
  std::optional<Result<MigMinors>> minors_;
};

}  // namespace

Result<Inventory> discover_nvidia(NvmlLibrary& nvml, const NvidiaDiscoveryOptions& options) {
  if (auto st = nvml.init(); !st) return st.error();
  auto inventory = Discoverer(nvml, options).run();
  nvml.shutdown();
  return inventory;
}

}  // namespace kgpu
