#include "config/settings.h"

#include <algorithm>
#include <cctype>
#include <type_traits>

namespace kgpu::config_detail {
namespace {

using Values = std::vector<std::string>;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }
std::string show_bool(bool b) { return b ? "true" : "false"; }

// Builders keep the table below readable: one line of facts per setting.
Setting text(std::string key, Values flags, Values envs, std::string help, std::string Config::*field) {
  Setting s;
  s.key = std::move(key);
  s.kind = SettingKind::String;
  s.flags = std::move(flags);
  s.envs = std::move(envs);
  s.help = std::move(help);
  s.apply = [field](Config& c, const Values& v) { c.*field = v.front(); };
  s.show = [field](const Config& c) { return quoted(c.*field); };
  return s;
}

Setting boolean(std::string key, Values flags, Values envs, std::string help, bool Config::*field) {
  Setting s;
  s.key = std::move(key);
  s.kind = SettingKind::Bool;
  s.flags = std::move(flags);
  s.envs = std::move(envs);
  s.help = std::move(help);
  s.apply = [field](Config& c, const Values& v) { c.*field = *parse_bool(v.front()); };
  s.show = [field](const Config& c) { return show_bool(c.*field); };
  return s;
}

template <typename E>
Setting enumeration(std::string key, std::string noun, Values flags, Values envs, std::string help,
                    E Config::*field, std::vector<E> values) {
  Setting s;
  s.key = std::move(key);
  s.kind = SettingKind::Enum;
  s.noun = std::move(noun);
  for (E e : values) s.choices.emplace_back(to_string(e));
  s.flags = std::move(flags);
  s.envs = std::move(envs);
  s.help = std::move(help);
  s.apply = [field, values](Config& c, const Values& v) {
    for (E e : values)
      if (v.front() == to_string(e)) c.*field = e;
  };
  s.show = [field](const Config& c) { return std::string(to_string(c.*field)); };
  return s;
}

template <typename F>
Setting health_bool(std::string key, std::string help, F member) {
  Setting s;
  s.key = std::move(key);
  s.kind = SettingKind::Bool;
  s.help = std::move(help);
  s.apply = [member](Config& c, const Values& v) { c.health.*member = *parse_bool(v.front()); };
  s.show = [member](const Config& c) { return show_bool(c.health.*member); };
  return s;
}

// A setting of a nested section (Config::*section, then Section::*member): a bool, a string, a
// list of strings or a list of non-negative integers, its kind following from the member's type.
template <typename Section, typename T>
Setting nested(std::string key, Values flags, Values envs, std::string help, Section Config::*section,
               T Section::*member) {
  Setting s;
  s.key = std::move(key);
  if constexpr (std::is_same_v<T, bool>) s.kind = SettingKind::Bool;
  else if constexpr (std::is_same_v<T, std::string>) s.kind = SettingKind::String;
  else if constexpr (std::is_same_v<T, std::vector<uint64_t>>) s.kind = SettingKind::UIntList;
  else s.kind = SettingKind::List;
  s.flags = std::move(flags);
  s.envs = std::move(envs);
  s.help = std::move(help);
  s.apply = [section, member](Config& c, const Values& v) {
    if constexpr (std::is_same_v<T, bool>) (c.*section).*member = *parse_bool(v.front());
    else if constexpr (std::is_same_v<T, std::string>) (c.*section).*member = v.front();
    else if constexpr (std::is_same_v<T, std::vector<uint64_t>>) {
      auto& numbers = (c.*section).*member;
      numbers.clear();
      for (const auto& x : v) numbers.push_back(*parse_uint(x));  // checked before apply
    } else (c.*section).*member = v;
  };
  s.show = [section, member](const Config& c) {
    const T& value = (c.*section).*member;
    if constexpr (std::is_same_v<T, bool>) return show_bool(value);
    else if constexpr (std::is_same_v<T, std::string>) return quoted(value);
    else if constexpr (std::is_same_v<T, std::vector<uint64_t>>) {
      Values texts;
      for (auto x : value) texts.push_back(std::to_string(x));
      return "[" + join(texts, ", ") + "]";
    } else return "[" + join(value, ", ") + "]";
  };
  return s;
}

// A setting of kgpu.dra.sharing.memory: a list of strings, a string, a non-negative integer or a bool.
template <typename T>
Setting memory_sharing(std::string key, Values flags, Values envs, std::string help, T DraMemorySharing::*member) {
  Setting s;
  s.key = std::move(key);
  s.flags = std::move(flags);
  s.envs = std::move(envs);
  s.help = std::move(help);
  if constexpr (std::is_same_v<T, bool>) s.kind = SettingKind::Bool;
  else if constexpr (std::is_same_v<T, uint64_t>) s.kind = SettingKind::UInt;
  else if constexpr (std::is_same_v<T, std::string>) s.kind = SettingKind::String;
  else s.kind = SettingKind::List;
  s.apply = [member](Config& c, const Values& v) {
    auto& field = c.dra.memory_sharing.*member;
    if constexpr (std::is_same_v<T, bool>) field = *parse_bool(v.front());
    else if constexpr (std::is_same_v<T, uint64_t>) field = *parse_uint(v.front());
    else if constexpr (std::is_same_v<T, std::string>) field = v.front();
    else field = v;
  };
  s.show = [member](const Config& c) {
    const auto& field = c.dra.memory_sharing.*member;
    if constexpr (std::is_same_v<T, bool>) return show_bool(field);
    else if constexpr (std::is_same_v<T, uint64_t>) return std::to_string(field);
    else if constexpr (std::is_same_v<T, std::string>) return quoted(field);
    else return "[" + join(field, ", ") + "]";
  };
  return s;
}

Setting health_ms(std::string key, std::string help, uint32_t HealthConfig::*member) {
  Setting s;
  s.key = std::move(key);
  s.kind = SettingKind::UInt;
  s.help = std::move(help);
  s.apply = [member](Config& c, const Values& v) {
    c.health.*member = static_cast<uint32_t>(std::min<uint64_t>(*parse_uint(v.front()), UINT32_MAX));
  };
  s.show = [member](const Config& c) { return std::to_string(c.health.*member); };
  return s;
}

std::vector<Setting> build_settings() {
  std::vector<Setting> t;
  // --- flags: NVIDIA k8s-device-plugin's names, flags and env vars ---
  t.push_back(enumeration("flags.migStrategy", "MIG strategy", {"--mig-strategy"},
                          {"MIG_STRATEGY", "GFD_MIG_STRATEGY"}, "how MIG devices are exposed",
                          &Config::mig_strategy,
                          std::vector{MigStrategy::None, MigStrategy::Single, MigStrategy::Mixed}));
  t.push_back(boolean("flags.failOnInitError", {"--fail-on-init-error"},
                      {"FAIL_ON_INIT_ERROR", "GFD_FAIL_ON_INIT_ERROR"},
                      "exit when initialisation fails instead of idling", &Config::fail_on_init_error));
  t.push_back(text("flags.mpsRoot", {"--mps-root"}, {"MPS_ROOT"}, "host folder for MPS pipes and shm",
                   &Config::mps_root));
  t.push_back(text("flags.nvidiaDriverRoot", {"--nvidia-driver-root", "--driver-root"},
                   {"NVIDIA_DRIVER_ROOT"}, "driver root on the host", &Config::nvidia_driver_root));
  t.push_back(text("flags.nvidiaDevRoot", {"--nvidia-dev-root", "--dev-root"}, {"NVIDIA_DEV_ROOT"},
                   "device-node root on the host (default: the driver root)", &Config::nvidia_dev_root));
  {
    Setting s = text("flags.deviceDiscoveryStrategy", {"--device-discovery-strategy"},
                     {"DEVICE_DISCOVERY_STRATEGY"}, "how NVIDIA's plugin finds GPUs (kgpu: NVML and sysfs always)",
                     &Config::device_discovery_strategy);
    s.kind = SettingKind::Enum;
    s.noun = "device discovery strategy";
    s.choices = {"auto", "nvml", "tegra"};
    s.show = [](const Config& c) { return c.device_discovery_strategy; };
    t.push_back(std::move(s));
  }
  t.push_back(boolean("flags.gdsEnabled", {"--gds-enabled"}, {"GDS_ENABLED"}, "GPUDirect Storage",
                      &Config::gds_enabled));
  t.push_back(boolean("flags.mofedEnabled", {"--mofed-enabled"}, {"MOFED_ENABLED"}, "Mellanox OFED",
                      &Config::mofed_enabled));
  t.push_back(boolean("flags.gdrcopyEnabled", {"--gdrcopy-enabled"}, {"GDRCOPY_ENABLED"}, "GDRCopy",
                      &Config::gdrcopy_enabled));
  t.push_back(boolean("flags.useNodeFeatureAPI", {"--use-node-feature-api"},
                      {"GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API"},
                      "write the labels to a NodeFeature object (NFD API) instead of the feature file",
                      &Config::use_node_feature_api));
  t.push_back(boolean("flags.plugin.passDeviceSpecs", {"--pass-device-specs"}, {"PASS_DEVICE_SPECS"},
                      "add device specs to Allocate responses", &Config::pass_device_specs));
  {
    Setting s;
    s.key = "flags.plugin.deviceListStrategy";
    s.kind = SettingKind::List;
    s.noun = "device list strategy";
    s.choices = {"envvar", "volume-mounts", "cdi-annotations", "cdi-cri"};
    s.flags = {"--device-list-strategy"};
    s.envs = {"DEVICE_LIST_STRATEGY"};
    s.help = "how devices are passed to the runtime (repeatable, or a comma list)";
    s.apply = [](Config& c, const Values& v) {
      c.device_list_strategy.clear();
      const std::vector all{DeviceListStrategy::EnvVar, DeviceListStrategy::VolumeMounts,
                            DeviceListStrategy::CdiAnnotations, DeviceListStrategy::CdiCri};
      for (const auto& name : v)
        for (auto strategy : all)
          if (name == to_string(strategy) && !c.has_strategy(strategy))
            c.device_list_strategy.push_back(strategy);
    };
    s.show = [](const Config& c) {
      Values names;
      for (auto strategy : c.device_list_strategy) names.emplace_back(to_string(strategy));
      return "[" + join(names, ", ") + "]";
    };
    t.push_back(std::move(s));
  }
  t.push_back(enumeration("flags.plugin.deviceIDStrategy", "device ID strategy", {"--device-id-strategy"},
                          {"DEVICE_ID_STRATEGY"}, "the IDs the container runtime sees", &Config::device_id_strategy,
                          std::vector{DeviceIdStrategy::Uuid, DeviceIdStrategy::Index}));
  t.push_back(text("flags.plugin.cdiAnnotationPrefix", {"--cdi-annotation-prefix"},
                   {"CDI_ANNOTATION_PREFIX"}, "prefix of CDI annotation keys", &Config::cdi_annotation_prefix));
  t.push_back(text("flags.plugin.nvidiaCTKPath", {"--nvidia-ctk-path", "--nvidia-cdi-hook-path"},
                   {"NVIDIA_CTK_PATH", "NVIDIA_CDI_HOOK_PATH"}, "hook binary written into CDI specs",
                   &Config::nvidia_ctk_path));
  t.push_back(text("flags.plugin.containerDriverRoot", {"--container-driver-root", "--driver-root-ctr-path"},
                   {"CONTAINER_DRIVER_ROOT", "DRIVER_ROOT_CTR_PATH"},
                   "where the host driver root is mounted in the plugin container",
                   &Config::container_driver_root));
  t.push_back(enumeration("flags.plugin.sharedDevicesAllocationPolicy", "shared devices allocation policy",
                          {"--shared-devices-allocation-policy"}, {"SHARED_DEVICES_ALLOCATION_POLICY"},
                          "how replicas of shared GPUs and MIG devices are picked",
                          &Config::shared_devices_allocation_policy,
                          std::vector{SharedAllocationPolicy::Distributed, SharedAllocationPolicy::Packed}));
  t.push_back(boolean("flags.gfd.oneshot", {"--oneshot"}, {"GFD_ONESHOT"}, "label once and exit",
                      &Config::gfd_oneshot));
  t.push_back(boolean("flags.gfd.noTimestamp", {"--no-timestamp"}, {"GFD_NO_TIMESTAMP"},
                      "leave the timestamp label out", &Config::gfd_no_timestamp));
  t.push_back(text("flags.gfd.sleepInterval", {"--sleep-interval"}, {"GFD_SLEEP_INTERVAL"},
                   "time between labelling passes", &Config::gfd_sleep_interval));
  t.push_back(text("flags.gfd.outputFile", {"--output-file"}, {"GFD_OUTPUT_FILE"},
                   "label file for node-feature-discovery", &Config::gfd_output_file));
  t.push_back(text("flags.gfd.machineTypeFile", {"--machine-type-file"}, {"GFD_MACHINE_TYPE_FILE"},
                   "file holding the machine type", &Config::gfd_machine_type_file));

  // --- imex: NVIDIA's `imex` section, --imex-channel-ids / --imex-required and their env vars ---
  {
    Setting s;
    s.key = "imex.channelIDs";
    s.kind = SettingKind::UIntList;
    s.flags = {"--imex-channel-ids"};
    s.envs = {"IMEX_CHANNEL_IDS"};
    s.help = "IMEX channels every container gets: [] or [0] (comma list)";
    s.apply = [](Config& c, const Values& v) {
      c.imex_channel_ids.clear();
      for (const auto& x : v)
        c.imex_channel_ids.push_back(static_cast<int>(std::min<uint64_t>(*parse_uint(x), 1u << 30)));
    };
    s.show = [](const Config& c) {
      Values ids;
      for (int id : c.imex_channel_ids) ids.push_back(std::to_string(id));
      return "[" + join(ids, ", ") + "]";
    };
    t.push_back(std::move(s));
  }
  t.push_back(boolean("imex.required", {"--imex-required"}, {"IMEX_REQUIRED"},
                      "fail when a configured IMEX channel is missing (else: warn and skip it)",
                      &Config::imex_required));

  // --- CLI-only (no file key), as in NVIDIA's plugin ---
  {
    Setting s = text("kubeletSocket", {"--kubelet-socket"}, {"KUBELET_SOCKET"},
                     "kubelet registration socket (empty: do not register)", &Config::kubelet_socket);
    s.in_file = false;
    t.push_back(std::move(s));
    Setting f = text("configFile", {"--config-file"}, {"CONFIG_FILE", "GFD_CONFIG_FILE"},
                     "config file (YAML or JSON)", &Config::config_file);
    f.in_file = false;
    t.push_back(std::move(f));
  }

  // --- kgpu: section ---
  t.push_back(text("kgpu.sysfsRoot", {"--sysfs-root"}, {"KGPU_SYSFS_ROOT"}, "sysfs mount point",
                   &Config::sysfs_root));
  t.push_back(text("kgpu.procRoot", {"--proc-root"}, {"KGPU_PROC_ROOT"}, "procfs mount point",
                   &Config::proc_root));
  t.push_back(text("kgpu.cdiSpecDir", {"--cdi-spec-dir"}, {"KGPU_CDI_SPEC_DIR"},
                   "folder for generated CDI specs", &Config::cdi_spec_dir));
  t.push_back(text("kgpu.cdiKind", {"--cdi-kind"}, {"KGPU_CDI_KIND"}, "CDI kind (vendor/class)",
                   &Config::cdi_kind));
  t.push_back(text("kgpu.metricsAddr", {"--metrics-addr"}, {"KGPU_METRICS_ADDR"},
                   "address for Prometheus metrics (empty: off)", &Config::metrics_addr));
  t.push_back(boolean("kgpu.gpuTelemetry", {"--gpu-telemetry"}, {"KGPU_GPU_TELEMETRY"},
                      "GPU telemetry on /metrics under dcgm-exporter's names (with --metrics-addr)",
                      &Config::gpu_telemetry));
  t.push_back(enumeration("kgpu.migAllocationPolicy", "MIG allocation policy", {"--mig-allocation-policy"},
                          {"KGPU_MIG_ALLOCATION_POLICY"},
                          "MIG devices: shared follows sharedDevicesAllocationPolicy; same-parent (packed) or spread "
                          "(distributed) overrides it for MIG",
                          &Config::mig_allocation_policy,
                          std::vector{MigAllocationPolicy::Shared, MigAllocationPolicy::SameParent,
                                      MigAllocationPolicy::Spread}));
  {
    Setting s;
    s.key = "kgpu.backends";
    s.kind = SettingKind::List;
    s.noun = "backend";
    s.choices = {"auto", "nvidia", "amd", "intel", "generic"};
    s.flags = {"--backends"};
    s.envs = {"KGPU_BACKENDS"};
    s.help = "device backends to run (comma list)";
    s.apply = [](Config& c, const Values& v) {
      c.backends.clear();
      for (const auto& b : v)
        if (std::find(c.backends.begin(), c.backends.end(), b) == c.backends.end()) c.backends.push_back(b);
    };
    s.show = [](const Config& c) { return "[" + join(c.backends, ", ") + "]"; };
    t.push_back(std::move(s));
  }
  t.push_back(boolean("kgpu.labels.enabled", {"--labels-enabled", "--labels"}, {"KGPU_LABELS_ENABLED"},
                      "write node labels from the daemon", &Config::labels_enabled));
  t.push_back(boolean("kgpu.labels.keepOnExit", {"--keep-labels-on-exit"}, {"KGPU_KEEP_LABELS_ON_EXIT"},
                      "leave labels in place when the daemon stops", &Config::keep_labels_on_exit));
  t.push_back(nested("kgpu.dra.enabled", {"--dra"}, {"KGPU_DRA"},
                     "also be the DRA driver (resource.k8s.io) for the NVIDIA GPUs in kgpu.dra.gpus", &Config::dra,
                     &DraConfig::enabled));
  t.push_back(nested("kgpu.dra.devicePlugin", {"--device-plugin"}, {"KGPU_DEVICE_PLUGIN"},
                     "serve the device-plugin API (false with DRA on: DRA only)", &Config::dra,
                     &DraConfig::device_plugin));
  t.push_back(nested("kgpu.dra.gpus", {"--dra-gpus"}, {"KGPU_DRA_GPUS"},
                     "NVIDIA GPUs (indexes or UUIDs) DRA owns; the rest stay with the device-plugin API (default: all)",
                     &Config::dra, &DraConfig::gpus));
  {
    auto vendors = nested("kgpu.dra.vendors", {"--dra-vendors"}, {"KGPU_DRA_VENDORS"},
                          "whose GPUs DRA serves; AMD and Intel GPUs are served whole", &Config::dra,
                          &DraConfig::vendors);
    vendors.choices = {"nvidia", "amd", "intel"};
    vendors.noun = "DRA vendor";
    t.push_back(std::move(vendors));
  }
  t.push_back(nested("kgpu.dra.driver", {"--dra-driver"}, {"KGPU_DRA_DRIVER"},
                     "DRA driver name for NVIDIA GPUs", &Config::dra, &DraConfig::driver));
  t.push_back(nested("kgpu.dra.amdDriver", {"--dra-amd-driver"}, {"KGPU_DRA_AMD_DRIVER"},
                     "DRA driver name for AMD GPUs", &Config::dra, &DraConfig::amd_driver));
  t.push_back(nested("kgpu.dra.intelDriver", {"--dra-intel-driver"}, {"KGPU_DRA_INTEL_DRIVER"},
                     "DRA driver name for Intel GPUs", &Config::dra, &DraConfig::intel_driver));
  t.push_back(nested("kgpu.dra.nvidiaSmiPath", {"--dra-nvidia-smi"}, {"KGPU_DRA_NVIDIA_SMI"},
                     "nvidia-smi that applies DRA claims' time-slice intervals (default: the driver root's)",
                     &Config::dra, &DraConfig::nvidia_smi_path));
  t.push_back(nested("kgpu.dra.noExecuteXids", {"--dra-no-execute-xids"}, {"KGPU_DRA_NO_EXECUTE_XIDS"},
                     "XIDs whose DRA device taint evicts the pods using the device (NoExecute; default: none, "
                     "NoSchedule)",
                     &Config::dra, &DraConfig::no_execute_xids));
  t.push_back(nested("kgpu.dra.deviceMetadata", {"--dra-device-metadata"}, {"KGPU_DRA_DEVICE_METADATA"},
                     "write device metadata for prepared claims (KEP-5304, alpha): the containers read their "
                     "devices' attributes under /var/run/kubernetes.io/dra-device-attributes",
                     &Config::dra, &DraConfig::device_metadata));
  t.push_back(nested("kgpu.dra.mig.dynamic", {"--dra-mig-dynamic"}, {"KGPU_DRA_MIG_DYNAMIC"},
                     "NVIDIA GPUs (indexes, UUIDs or all) published with every MIG placement they could host; "
                     "prepare creates the allocated placement, unprepare destroys it (dynamic MIG)",
                     &Config::dra, &DraConfig::mig_dynamic));
  t.push_back(memory_sharing("kgpu.dra.sharing.memory.gpus", {"--dra-share-memory-gpus"},
                             {"KGPU_DRA_SHARE_MEMORY_GPUS"},
                             "full NVIDIA GPUs (indexes, UUIDs or all) DRA publishes for memory shares (consumable "
                             "capacity; each share an MPS client with its memory as limit)",
                             &DraMemorySharing::gpus));
  t.push_back(memory_sharing("kgpu.dra.sharing.memory.requestPolicy.default", {"--dra-share-memory-default"},
                             {"KGPU_DRA_SHARE_MEMORY_DEFAULT"}, "memory a share takes when its request names none",
                             &DraMemorySharing::default_share));
  t.push_back(memory_sharing("kgpu.dra.sharing.memory.requestPolicy.min", {"--dra-share-memory-min"},
                             {"KGPU_DRA_SHARE_MEMORY_MIN"}, "smallest memory share", &DraMemorySharing::min_share));
  t.push_back(memory_sharing("kgpu.dra.sharing.memory.requestPolicy.step", {"--dra-share-memory-step"},
                             {"KGPU_DRA_SHARE_MEMORY_STEP"},
                             "memory shares are the minimum plus whole steps (requests are rounded up)",
                             &DraMemorySharing::share_step));
  t.push_back(memory_sharing("kgpu.dra.sharing.memory.multiprocessorsDefault", {"--dra-share-multiprocessors-default"},
                             {"KGPU_DRA_SHARE_MULTIPROCESSORS_DEFAULT"},
                             "publish multiprocessors as a second consumable capacity, a share that names none "
                             "taking this many (0: not published)",
                             &DraMemorySharing::multiprocessors_default));
  t.push_back(memory_sharing("kgpu.dra.sharing.memory.activeThreadPercentage", {"--dra-share-thread-percentage"},
                             {"KGPU_DRA_SHARE_THREAD_PERCENTAGE"},
                             "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of a share that consumed no multiprocessors "
                             "(1-100; 0: none)",
                             &DraMemorySharing::active_thread_percentage));
  t.push_back(memory_sharing("kgpu.dra.sharing.memory.oneNamespacePerGpu", {"--dra-share-one-namespace-per-gpu"},
                             {"KGPU_DRA_SHARE_ONE_NAMESPACE_PER_GPU"},
                             "keep each GPU's memory shares within one namespace (the shares of a GPU share one "
                             "MPS server: one trust domain)",
                             &DraMemorySharing::one_namespace_per_gpu));
  t.push_back(health_bool("kgpu.health.enabled", "health checks", &HealthConfig::enabled));
  t.push_back(health_bool("kgpu.health.xidsEnabled", "XID event checks", &HealthConfig::xids_enabled));
  t.push_back(nested("kgpu.health.ignoredXids", {}, {}, "XIDs that never mark a device unhealthy", &Config::health,
                     &HealthConfig::ignored_xids));
  {
    Setting s;
    s.key = "kgpu.health.xidActions";
    s.kind = SettingKind::ActionMap;
    s.noun = "XID action";
    s.choices = {"ignore", "mark-unhealthy", "mark-unhealthy-until-reset"};
    s.help = "per-XID action overrides";
    s.apply = [](Config& c, const Values& v) {
      c.health.xid_actions.clear();
      const std::vector all{XidAction::Ignore, XidAction::MarkUnhealthy, XidAction::MarkUnhealthyUntilReset};
      for (const auto& entry : v) {
        auto eq = entry.find('=');
        uint64_t xid = *parse_uint(entry.substr(0, eq));
        for (auto a : all)
          if (entry.substr(eq + 1) == to_string(a)) c.health.xid_actions[xid] = a;
      }
    };
    s.show = [](const Config& c) {
      Values xs;
      for (const auto& [xid, action] : c.health.xid_actions)
        xs.push_back(std::to_string(xid) + ": " + to_string(action));
      return "{" + join(xs, ", ") + "}";
    };
    t.push_back(std::move(s));
  }
  t.push_back(health_bool("kgpu.health.recovery.enabled", "re-probe unhealthy devices",
                          &HealthConfig::recovery_enabled));
  t.push_back(health_ms("kgpu.health.recovery.probeIntervalMs", "first re-probe delay",
                        &HealthConfig::recovery_probe_interval_ms));
  t.push_back(health_ms("kgpu.health.recovery.probeMaxIntervalMs", "longest re-probe delay",
                        &HealthConfig::recovery_probe_max_interval_ms));
  t.push_back(health_ms("kgpu.health.recovery.quietPeriodMs", "healthy time before re-advertising",
                        &HealthConfig::recovery_quiet_period_ms));
  return t;
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = build_settings();
  return table;
}

const Setting* find_setting(std::string_view key) {
  for (const auto& s : settings())
    if (s.key == key) return &s;
  return nullptr;
}

std::optional<bool> parse_bool(std::string_view text) {
  // Go's strconv.ParseBool spellings (what NVIDIA's env vars accept) plus YAML 1.1's yes/no/on/off.
  std::string t = lower(text);
  if (t == "true" || t == "t" || t == "1" || t == "yes" || t == "y" || t == "on") return true;
  if (t == "false" || t == "f" || t == "0" || t == "no" || t == "n" || t == "off") return false;
  return std::nullopt;
}

std::optional<uint64_t> parse_uint(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  return v;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) part.remove_prefix(1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    start = end + 1;
  }
  return out;
}


namespace {
std::string valid_choices(const Setting& s) { return "(valid: " + join(s.choices, ", ") + ")"; }

std::string unknown_choice(const Setting& s, const std::string& value) {
  return "unknown " + s.noun + " " + quoted(value) + " " + valid_choices(s);
}

bool is_choice(const Setting& s, const std::string& value) {
  return std::find(s.choices.begin(), s.choices.end(), value) != s.choices.end();
}
}  // namespace

std::optional<std::string> check_values(const Setting& s, const Values& values) {
  switch (s.kind) {
    case SettingKind::String:
      return std::nullopt;
    case SettingKind::Bool:
      if (!parse_bool(values.front()))
        return "expected a boolean (true or false) for " + s.key + ", got " + quoted(values.front());
      return std::nullopt;
    case SettingKind::Enum:
      if (!is_choice(s, values.front())) return unknown_choice(s, values.front());
      return std::nullopt;
    case SettingKind::UInt:
      if (!parse_uint(values.front()))
        return "expected a non-negative integer for " + s.key + ", got " + quoted(values.front());
      return std::nullopt;
    case SettingKind::List:
      if (values.empty())
        return s.key + " needs at least one value" + (s.choices.empty() ? "" : " " + valid_choices(s));
      for (const auto& v : values)
        if (!s.choices.empty() && !is_choice(s, v)) return unknown_choice(s, v);
      return std::nullopt;
    case SettingKind::UIntList:
      for (const auto& v : values)
        if (!parse_uint(v)) return "expected a non-negative integer in " + s.key + ", got " + quoted(v);
      return std::nullopt;
    case SettingKind::ActionMap:
      for (const auto& v : values) {
        auto eq = v.find('=');
        if (eq == std::string::npos || !parse_uint(v.substr(0, eq)))
          return "expected XID=ACTION with a numeric XID in " + s.key + ", got " + quoted(v);
        if (!is_choice(s, v.substr(eq + 1))) return unknown_choice(s, v.substr(eq + 1));
      }
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace kgpu::config_detail
