#include "server/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "core/unique_fd.h"
#include "core/strings.h"
#include "health/health_events.h"
#include "plan/plan.h"
#include "plan/plan_diff.h"
#include "server/config_file_watcher.h"
#include "server/plugin_dir_watcher.h"
#include "server/registrar.h"
#include "rpc/server.h"
#include "server/resource_server.h"

namespace kgpu::server {
namespace fs = std::filesystem;

std::string plugin_dir_of(const std::string& kubelet_socket) {
  fs::path p(kubelet_socket);
  std::string dir = p.parent_path().string();
  return dir.empty() ? "." : dir;
}

Result<Ok> check_plugin_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return Error::not_found("the device-plugin folder " + dir +
                              " (the folder of --kubelet-socket) does not exist; kgpu does not create it: mount "
                              "the kubelet's device-plugin folder there (hostPath /var/lib/kubelet/device-plugins) "
                              "or fix --kubelet-socket / KUBELET_SOCKET");
    return Error::precondition("cannot inspect the device-plugin folder " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return Error::precondition("the device-plugin folder " + dir + " is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return Error::precondition("cannot create sockets in the device-plugin folder " + dir + ": " +
                               std::strerror(errno) + "; kgpu needs root or a writable mount of that folder");
  return Ok{};
}

namespace {

void arm_timer(int fd, std::chrono::milliseconds delay) {
  itimerspec spec{};
  auto ms = std::max<int64_t>(1, delay.count());
  spec.it_value.tv_sec = ms / 1000;
  spec.it_value.tv_nsec = (ms % 1000) * 1000000;
  ::timerfd_settime(fd, 0, &spec, nullptr);
}

void disarm_timer(int fd) {
  itimerspec spec{};
  ::timerfd_settime(fd, 0, &spec, nullptr);
}

void drain(int fd) {
  uint64_t v;
  while (::read(fd, &v, sizeof(v)) == sizeof(v)) {
  }
}

// Identity of a socket file (inode and change time, since inodes are reused), {0,0} when absent:
// tells a recreated kubelet.sock from the one we registered with.
struct FileId {
  ino_t ino = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileId&) const = default;
};
FileId socket_inode(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

bool socket_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

sigset_t daemon_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

std::string device_summary(const Resource& r) {
  size_t healthy = 0;
  for (const auto& d : r.devices) healthy += d.healthy;
  return std::to_string(r.devices.size()) + " devices, " + std::to_string(healthy) + " healthy";
}

}  // namespace

// The gRPC transport every resource of the daemon is served on: one thread, created once.
std::shared_ptr<rpc::Server> start_transport(std::function<void(const std::string&)> on_failure) {
  auto server = rpc::Server::start(std::move(on_failure));
  if (!server) {
    spdlog::error("{}", server.error().message);
    return nullptr;
  }
  return std::shared_ptr<rpc::Server>(std::move(*server));
}

struct Daemon::Impl {
  // First member: outlives every server. If its thread ever fails, nothing is served: the daemon
  // exits (1) so that its pod is restarted, instead of looking healthy with dead sockets.
  std::shared_ptr<rpc::Server> transport =
      start_transport([this](const std::string& why) { fail("the gRPC transport stopped: " + why); });
  DaemonOptions options;
  std::string plugin_dir;

  UniqueFd signal_fd, event_fd, register_timer, discovery_timer, replan_timer, first_list_timer;
  std::optional<PluginDirWatcher> watcher;
  std::optional<ConfigFileWatcher> config_watcher;  // when the config comes from a file

  std::mutex mu;  // guards tasks, observers, state (read by other threads)
  std::deque<std::function<void()>> tasks;
  std::vector<PlanObserver> observers;
  StatePtr state;
  bool stop_requested = false;
  int exit_code = 0;

  // Loop-thread only.
  Config config;
  Inventory inventory;
  ResourcePlan plan;
  // One server per resource of `plan`, always (serving or not): the map and the plan never disagree.
  std::map<std::string, std::unique_ptr<ResourceServer>> servers;
  std::set<std::string> unregistered;         // serving resources waiting for a successful Register
  // Resources of the plan whose server could not start, with the reason. Retried on the register
  // timer (with its backoff) unless the reason is permanent (a path too long: only a new config helps).
  struct Unserved {
    std::string reason;
    bool retry = true;
  };
  std::map<std::string, Unserved> unserved;
  bool kubelet_reachable = true;              // for logging once per state change
  FileId registered_inode;                     // kubelet.sock inode of our last successful Register
  Backoff register_backoff{std::chrono::milliseconds(20), std::chrono::milliseconds(5000)};
  Backoff discovery_backoff{std::chrono::milliseconds(1000), std::chrono::milliseconds(300000)};
  bool discovery_failed = false;
  // Resources registered whose kubelet has not opened ListAndWatch since. Checked once,
  // first_list_deadline after the registration: the kubelet's own stream must be open then,
  // whatever other local peers opened (issue 39).
  std::set<std::string> awaiting_first_list;

  std::string kubelet_socket() const { return plugin_dir + "/kubelet.sock"; }
  // DRA alone (kgpu.dra.devicePlugin false) registers nothing with the device manager: no kubelet
  // restart to watch for, and no inotify instance whose close would hold the exit.
  bool serves_device_plugin_api() const { return !(options.config.dra.enabled && !options.config.dra.device_plugin); }

  void fail(const std::string& why) {
    spdlog::critical("{}; exiting", why);
    {
      std::lock_guard lock(mu);
      stop_requested = true;
      exit_code = 1;
    }
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(event_fd.get(), &one, sizeof(one));
  }

  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mu);
      tasks.push_back(std::move(task));
    }
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(event_fd.get(), &one, sizeof(one));
  }

  // --- planning ---

  // Plans, diffs, updates servers. Returns false when a server could not start at all.
  bool apply(Config new_config, Inventory new_inventory) {
    ResourcePlan new_plan = kgpu::plan(new_config, new_inventory);
    if (options.api_share) new_plan = options.api_share(new_inventory, std::move(new_plan));
    if (options.plan_filter) {
      size_t planned = new_plan.resources.size();
      new_plan = options.plan_filter(new_config, std::move(new_plan));
      if (new_plan.resources.size() < planned)
        arm_timer(replan_timer.get(), options.withheld_replan_interval);
      else
        disarm_timer(replan_timer.get());
    }
    PlanDiff diff = diff_plans(plan, new_plan);
    for (const auto& p : new_plan.problems)
      if (std::find(plan.problems.begin(), plan.problems.end(), p) == plan.problems.end()) spdlog::warn("plan: {}", p);
    auto snapshot = std::make_shared<const ServingState>(new_config, new_inventory, new_plan);
    {
      std::lock_guard lock(mu);
      state = snapshot;
    }
    for (const auto& name : diff.removed) {
      if (auto it = servers.find(name); it != servers.end()) {
        it->second->stop();
        servers.erase(it);
      }
      if (options.events) options.events->unregistered(name);
      unregistered.erase(name);
      unserved.erase(name);
      spdlog::info("{}: no longer advertised; endpoint stopped", name);
    }
    std::set<std::string> changed(diff.changed.begin(), diff.changed.end());
    for (auto& [name, server] : servers) {
      bool push = changed.count(name) > 0;
      server->update(snapshot, push);
      if (push) spdlog::info("{}: device list changed: {}", name, device_summary(*new_plan.find(name)));
    }
    for (const auto& name : diff.added) {
      auto [it, inserted] =
          servers.try_emplace(name, std::make_unique<ResourceServer>(name, plugin_dir, snapshot, options.events, transport));
      if (!inserted) it->second->update(snapshot, true);
      if (inserted) it->second->on_list_and_watch([this, name] { post([this, name] { first_list_opened(name); }); });
      if (serve(name, *it->second))
        spdlog::info("{}: serving {} on {}", name, device_summary(*new_plan.find(name)), it->second->socket_path());
    }
    // A new plan is a new chance for servers that could not start (e.g. after a config fix).
    for (auto& [name, server] : servers)
      if (!server->serving() && !diff_added(diff, name)) serve(name, *server);
    config = std::move(new_config);
    inventory = std::move(new_inventory);
    plan = std::move(new_plan);
    // Register first: observers (labels, CDI, health monitor start) take milliseconds that the
    // kubelet need not wait for. Containers use CDI names only at creation, well after this.
    register_pending();
    notify_observers();
    return unserved.empty();
  }

  static bool diff_added(const PlanDiff& diff, const std::string& name) {
    return std::find(diff.added.begin(), diff.added.end(), name) != diff.added.end();
  }

  // Starts (or restarts) `server` unless it serves on a socket that still exists. On success the
  // resource waits for registration; on failure the exact reason is logged (once per new reason)
  // and kept in `unserved` for the retry timer. Returns whether it serves.
  bool serve(const std::string& name, ResourceServer& server) {
    if (server.serving() && socket_exists(server.socket_path())) return true;
    if (server.serving() && options.events) options.events->unregistered(name);
    auto st = server.restart();
    if (!st) {
      unregistered.erase(name);
      bool retry = st.error().code != Error::Code::InvalidArgument;
      auto [it, fresh] = unserved.try_emplace(name, Unserved{st.error().message, retry});
      if (fresh || it->second.reason != st.error().message) {
        it->second = Unserved{st.error().message, retry};
        if (retry)
          spdlog::error("{}: cannot serve: {}; retrying with backoff up to {} ms", name, st.error().message,
                        options.register_backoff_max.count());
        else
          spdlog::error("{}: cannot serve: {}; not advertised until the configuration changes", name,
                        st.error().message);
      }
      return false;
    }
    if (unserved.erase(name) > 0) spdlog::info("{}: serving on {} after earlier failures", name, server.socket_path());
    unregistered.insert(name);
    return true;
  }

  // Re-serves every server that is not serving (retryable) or whose socket vanished. Returns the
  // resources served again.
  std::vector<std::string> serve_missing() {
    std::vector<std::string> served;
    for (auto& [name, server] : servers) {
      bool vanished = server->serving() && !socket_exists(server->socket_path());
      bool retry = !server->serving() && (unserved.count(name) == 0 || unserved.at(name).retry);
      if ((vanished || retry) && serve(name, *server)) served.push_back(name);
    }
    return served;
  }

  void notify_observers() {
    std::vector<PlanObserver> obs;
    {
      std::lock_guard lock(mu);
      obs = observers;
    }
    for (auto& o : obs) o(config, inventory, plan);
  }

  // --- registration ---

  void register_pending() {
    if (unregistered.empty()) return schedule_retry();
    std::vector<std::string> done;
    Status last = ok_status();
    FileId inode = socket_inode(kubelet_socket());  // before Register: a later recreation must not be missed
    // The kubelet dials our socket as it accepts Register: the transport must know it by then, so
    // that its connection is never displaced and the first-list check looks at its stream only.
    auto since = std::chrono::steady_clock::now();
    auto learn_kubelet = [this, since](const rpc::Peer& peer) {
      if (transport) transport->set_kubelet(peer, since);
    };
    for (const auto& name : unregistered) {
      auto it = servers.find(name);
      if (it == servers.end() || !it->second->serving()) continue;
      auto& server = it->second;
      RegisterRequestInfo info{kubelet_socket(), server->endpoint(), name, true, false};
      auto st = register_with_kubelet(info, options.register_timeout, learn_kubelet);
      if (options.events) options.events->registration(name, st.ok());
      if (!st) {
        last = st;
        // Unavailable: the kubelet is not up (yet); everything else is an answer worth logging each time.
        if (st.error().code != Error::Code::Unavailable) spdlog::error("{}", st.error().message);
        if (st.error().code == Error::Code::Unavailable) break;  // the others would fail the same way
        continue;
      }
      const Resource* r = plan.find(name);
      spdlog::info("{}: registered with the kubelet (endpoint {}, {})", name, server->endpoint(),
                   r ? device_summary(*r) : "0 devices");
      done.push_back(name);
      awaiting_first_list.insert(name);
    }
    if (!done.empty()) arm_timer(first_list_timer.get(), options.first_list_deadline);
    for (const auto& n : done) unregistered.erase(n);
    if (!done.empty()) registered_inode = inode;
    if (!unregistered.empty()) {
      if (kubelet_reachable) {
        spdlog::warn("kubelet not reachable at {} ({}); retrying with backoff up to {} ms, and at once when it "
                     "creates kubelet.sock",
                     kubelet_socket(), last.ok() ? "registration pending" : last.error().message,
                     options.register_backoff_max.count());
      }
      kubelet_reachable = false;
    } else {
      if (!kubelet_reachable) spdlog::info("kubelet reachable again at {}", kubelet_socket());
      kubelet_reachable = true;
    }
    schedule_retry();
  }

  // The register timer runs while anything is pending (a registration, a server to start, the
  // directory watch to re-create) and is disarmed otherwise: no wake-ups while nothing is pending.
  void schedule_retry() {
    bool pending = !unregistered.empty() || (!watcher && serves_device_plugin_api()) ||
                   std::any_of(unserved.begin(), unserved.end(), [](const auto& u) { return u.second.retry; });
    if (pending) {
      arm_timer(register_timer.get(), register_backoff.next());
    } else {
      register_backoff.reset();
      disarm_timer(register_timer.get());
    }
  }

  void first_list_opened(const std::string& name) {
    auto it = servers.find(name);
    if (it == servers.end() || it->second->kubelet_streams() == 0) return;  // another peer's stream
    awaiting_first_list.erase(name);
    if (awaiting_first_list.empty()) disarm_timer(first_list_timer.get());  // no wake-up when all is well
  }

  // The kubelet answered Register, so it will dial us; a kubelet whose gRPC cannot talk to ours
  // (a stream reset: see the transport's warnings) never opens ListAndWatch, and the node
  // advertises zero devices of the resource without any other sign.
  void check_first_lists() {
    for (const auto& name : awaiting_first_list) {
      auto it = servers.find(name);
      if (it == servers.end() || !it->second->serving() || unregistered.count(name)) continue;
      if (it->second->kubelet_streams() > 0) continue;
      spdlog::warn("{}: the kubelet accepted Register {} ms ago but has not opened ListAndWatch on {}; the node "
                   "advertises none of these devices until it does (other peers' streams do not count; look for gRPC "
                   "warnings above and kgpu_grpc_errors_total)",
                   name, options.first_list_deadline.count(), it->second->socket_path());
    }
    awaiting_first_list.clear();
  }

  // --- plugin directory events ---

  void on_dir_changes(const DirChanges& changes) {
    if (changes.directory_gone) {
      spdlog::warn("device-plugin directory {} was removed; waiting for the kubelet to recreate it", plugin_dir);
      // Re-create the watch when it reappears: the register timer retries (with backoff) meanwhile.
      watcher.reset();
      schedule_retry();
      return;
    }
    if (changes.overflow) {
      // Events were lost, possibly the directory's own removal: watch afresh, then re-check
      // everything the watch stands for (our sockets, kubelet.sock's identity) below.
      spdlog::warn("inotify queue of {} overflowed; re-checking our sockets and kubelet.sock", plugin_dir);
      watcher.reset();
      ensure_watcher();
    }
    // Our sockets that no longer exist (the kubelet deletes every socket when it starts).
    std::vector<std::string> reserved = serve_missing();
    // A kubelet.sock that is not the one we last registered with is a new kubelet. Compared by
    // identity, not by the event alone: our socket's deletion may have come first, and we may
    // already have registered with this very kubelet.sock.
    bool kubelet_new = false;
    if (changes.kubelet_socket_created || changes.overflow) {
      FileId now = socket_inode(kubelet_socket());
      kubelet_new = now.ino != 0 && !(now == registered_inode);
    }
    if (kubelet_new) {
      for (auto& [name, server] : servers) {
        if (!server->serving() || unregistered.count(name)) continue;
        unregistered.insert(name);
        if (options.events) options.events->unregistered(name);
      }
      register_backoff.reset();
    }
    if (kubelet_new && !reserved.empty())
      spdlog::info("kubelet restart seen ({} recreated, our sockets deleted); serving again and registering every "
                   "resource",
                   kubelet_socket());
    else if (kubelet_new)
      spdlog::info("kubelet restart seen ({} recreated); registering every resource again", kubelet_socket());
    else if (!reserved.empty())
      spdlog::info("our socket of {} was deleted (a kubelet restart deletes every socket); serving it again and "
                   "registering",
                   join(reserved, ", "));
    if (kubelet_new || !reserved.empty() || changes.overflow) register_pending();
  }

  void ensure_watcher() {
    if (watcher || !serves_device_plugin_api()) return;
    std::error_code ec;
    fs::create_directories(plugin_dir, ec);
    auto w = PluginDirWatcher::open(plugin_dir);
    if (!w) {
      spdlog::error("{}", w.error().message);
      return;
    }
    watcher.emplace(std::move(*w));
  }

  // --- discovery and reload ---

  // Returns apply()'s verdict: false when a resource of the new plan cannot be served.
  bool rediscover(const Config& cfg, const char* why) {
    auto inv = options.discover(cfg);
    if (!inv) {
      auto delay = discovery_backoff.next();
      spdlog::error("discovery failed ({}): {}; retrying in {} ms", why, inv.error().message, delay.count());
      discovery_failed = true;
      arm_timer(discovery_timer.get(), delay);
      return apply(cfg, inventory);  // a new config still takes effect on the devices we know
    }
    if (discovery_failed) spdlog::info("discovery succeeded after earlier failures: {} GPUs", inv->gpus.size());
    discovery_failed = false;
    discovery_backoff.reset();
    disarm_timer(discovery_timer.get());
    for (const auto& w : inv->warnings) spdlog::warn("discovery: {}", w);
    if (inv->gpus.size() != inventory.gpus.size())
      spdlog::info("device count changed: {} -> {} GPUs", inventory.gpus.size(), inv->gpus.size());
    // A re-discovery must not resurrect devices the health monitor took away (see carry_over_health).
    return apply(cfg, carry_over_health(inventory, std::move(*inv)));
  }

  void reload() {
    Config next = config;
    if (options.reload_config) {
      auto loaded = options.reload_config();
      if (!loaded) {
        // One record per diagnostic line: a log pipeline keeps each error and hint whole, and a
        // warning of the file stays a warning (only its errors made the reload fail).
        spdlog::error("reload: the new configuration is invalid; keeping the current plan:");
        std::istringstream lines(loaded.error().message);
        for (std::string line; std::getline(lines, line);) {
          if (line.empty()) continue;
          if (line.find(": warning: ") != std::string::npos) spdlog::warn("reload: {}", line);
          else spdlog::error("reload: {}", line);
        }
        if (options.events) options.events->config_reloaded(false);
        return;
      }
      next = std::move(*loaded);
      if (options.events) options.events->config_reloaded(true);
    }
    if (next.config_file != config.config_file) watch_config_file(next.config_file);
    if (plugin_dir_of(next.kubelet_socket) != plugin_dir)
      spdlog::warn("reload: a new kubelet socket directory takes effect only after a restart");
    // Say what took effect only once it has: a resource whose server cannot start is not "loaded".
    if (rediscover(next, "reload")) {
      spdlog::info("reload: configuration applied; serving {} resource(s)", servers.size());
    } else {
      std::vector<std::string> names;
      for (const auto& [name, u] : unserved) names.push_back(name + " (" + u.reason + ")");
      spdlog::error("reload: configuration applied, but {} of {} resource(s) cannot be served: {}", unserved.size(),
                    servers.size(), join(names, ", "));
    }
  }

  // Follows the config file (which a per-node label may switch) for changes.
  void watch_config_file(const std::string& path) {
    config_watcher.reset();
    if (path.empty() || !options.reload_config) return;
    if (auto w = ConfigFileWatcher::open(path); w)
      config_watcher.emplace(std::move(*w));
    else
      spdlog::warn("config changes will need a SIGHUP: {}", w.error().message);
  }

  // --- the loop ---

  void open_fds() {
    sigset_t set = daemon_signals();
    signal_fd.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    event_fd.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    register_timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    discovery_timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    replan_timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    first_list_timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  }

  // A missing folder stops the start (ensure_watcher re-creates it only once it existed: the
  // kubelet may delete and recreate it at run time). An unwritable one stops it with
  // failOnInitError; otherwise serving is retried as for any socket that cannot be created yet.
  bool plugin_dir_usable(const Config& cfg) {
    // Not registering (no kubelet socket, or DRA alone): no folder of the device manager's is needed.
    if (cfg.kubelet_socket.empty() || !serves_device_plugin_api()) return true;
    auto st = check_plugin_dir(plugin_dir);
    if (st) return true;
    if (st.error().code == Error::Code::NotFound || cfg.fail_on_init_error) {
      spdlog::error("{}", st.error().message);
      if (st.error().code != Error::Code::NotFound)
        spdlog::error("failOnInitError=true: exiting. Set --fail-on-init-error=false to keep retrying");
      return false;
    }
    spdlog::warn("{}; failOnInitError=false: retrying", st.error().message);
    return true;
  }

  int start() {
    if (signal_fd.get() < 0 || event_fd.get() < 0 || register_timer.get() < 0 || discovery_timer.get() < 0 ||
        replan_timer.get() < 0 || first_list_timer.get() < 0) {
      spdlog::error("cannot create the event loop's file descriptors: {}", std::strerror(errno));
      return 1;
    }
    Config cfg = options.config;
    if (auto st = check_socket_path(kubelet_socket()); !st) {
      spdlog::error("{}", st.error().message);
      return 1;
    }
    if (!plugin_dir_usable(cfg)) return 1;
    ensure_watcher();  // before serving: a kubelet restart during start-up must not be missed
    watch_config_file(cfg.config_file);
    auto inv = options.discover(cfg);
    if (!inv) {
      if (cfg.fail_on_init_error) {
        spdlog::error("device discovery failed: {}", inv.error().message);
        spdlog::error("failOnInitError=true: exiting. Set --fail-on-init-error=false to keep running without "
                      "devices and retry discovery");
        return 1;
      }
      auto delay = discovery_backoff.next();
      spdlog::error("device discovery failed: {}", inv.error().message);
      spdlog::warn("failOnInitError=false: serving zero devices; retrying discovery in {} ms", delay.count());
      discovery_failed = true;
      arm_timer(discovery_timer.get(), delay);
      inv = Inventory{};
    } else {
      for (const auto& w : inv->warnings) spdlog::warn("discovery: {}", w);
      spdlog::info("discovered {} GPUs (driver {})", inv->gpus.size(),
                   inv->driver_version.empty() ? "unknown" : inv->driver_version);
    }
    // A server that cannot start for now (its folder missing, something in its socket's place) is
    // retried while the rest serve; one that never can with this config (a path too long) is a
    // config error, and start-up fails on config errors.
    if (!apply(cfg, std::move(*inv)) &&
        std::any_of(unserved.begin(), unserved.end(), [](const auto& u) { return !u.second.retry; }))
      return 1;
    if (plan.resources.empty()) spdlog::info("no resources to advertise");
    return 0;
  }

  int loop() {
    while (true) {
      {
        std::lock_guard lock(mu);
        if (stop_requested) return exit_code;
      }
      pollfd fds[8] = {{signal_fd.get(), POLLIN, 0},
                       {event_fd.get(), POLLIN, 0},
                       {register_timer.get(), POLLIN, 0},
                       {discovery_timer.get(), POLLIN, 0},
                       {watcher ? watcher->fd() : -1, POLLIN, 0},
                       {replan_timer.get(), POLLIN, 0},
                       {config_watcher ? config_watcher->fd() : -1, POLLIN, 0},
                       {first_list_timer.get(), POLLIN, 0}};
      int n = ::poll(fds, 8, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        spdlog::error("poll: {}", std::strerror(errno));
        return 1;
      }
      if (fds[4].revents & POLLIN) on_dir_changes(watcher->read_changes());
      if (fds[0].revents & POLLIN) {
        signalfd_siginfo info{};
        while (::read(signal_fd.get(), &info, sizeof(info)) == sizeof(info)) {
          if (info.ssi_signo == SIGHUP) {
            spdlog::info("SIGHUP: reloading configuration and rediscovering devices");
            reload();
          } else {
            spdlog::info("{}: shutting down", info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
            return 0;
          }
        }
      }
      if (fds[1].revents & POLLIN) {
        drain(event_fd.get());
        std::deque<std::function<void()>> work;
        {
          std::lock_guard lock(mu);
          work.swap(tasks);
        }
        for (auto& t : work) t();
      }
      if (fds[2].revents & POLLIN) {
        drain(register_timer.get());
        ensure_watcher();
        // Servers that could not start, and (after a missed event, or none at all) sockets that vanished.
        serve_missing();
        register_pending();
      }
      if (fds[3].revents & POLLIN) {
        drain(discovery_timer.get());
        rediscover(config, "retry");
      }
      if ((fds[6].revents & POLLIN) && config_watcher->changed()) {
        spdlog::info("config file {} changed: reloading", config.config_file);
        reload();
      }
      if (fds[5].revents & POLLIN) {
        drain(replan_timer.get());
        apply(config, inventory);  // the plan filter may let withheld resources through now
      }
      if (fds[7].revents & POLLIN) {
        drain(first_list_timer.get());
        check_first_lists();
      }
    }
  }

  void shutdown() {
    // The watches go first, before any socket is removed. Releasing inotify watches waits for an
    // SRCU grace period of the kernel's fsnotify: expedited (microseconds) while the node's fsnotify
    // is idle, a full one (15-25 ms on a 16-core VM) once the socket removals below have set peers'
    // watches in motion. Measured SIGTERM -> exit: 1 ms first, 16 ms last (issue 32). on_shutdown
    // releases every watch of the process in that one wait (issue 40); the folder watch's own
    // channel only unsubscribes (core/inotify_hub.h).
    if (options.on_shutdown) options.on_shutdown();
    watcher.reset();
    config_watcher.reset();
    for (auto& [name, server] : servers) server->stop();
    servers.clear();
    spdlog::info("stopped; sockets removed");
  }
};

Daemon::Daemon(DaemonOptions options) : impl_(std::make_unique<Impl>()) {
  block_signals();
  impl_->register_backoff = Backoff(options.register_backoff_initial, options.register_backoff_max);
  impl_->discovery_backoff = Backoff(options.discovery_backoff_initial, options.discovery_backoff_max);
  impl_->plugin_dir = plugin_dir_of(options.config.kubelet_socket);
  impl_->config = options.config;
  impl_->options = std::move(options);
  impl_->open_fds();
}

Daemon::~Daemon() = default;

void Daemon::block_signals() {
  sigset_t set = daemon_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int Daemon::run() {
  int rc = impl_->start();
  if (rc == 0) rc = impl_->loop();
  impl_->shutdown();
  return rc;
}

void Daemon::update_inventory(std::function<Inventory(const Inventory&)> change) {
  impl_->post([this, change = std::move(change)] {
    Inventory next = change(impl_->inventory);
    impl_->apply(impl_->config, std::move(next));
  });
}

void Daemon::on_plan_changed(PlanObserver observer) {
  std::lock_guard lock(impl_->mu);
  impl_->observers.push_back(std::move(observer));
}

void Daemon::request_reload() {
  impl_->post([this] { impl_->reload(); });
}

void Daemon::stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop_requested = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->event_fd.get(), &one, sizeof(one));
}

std::shared_ptr<rpc::Server> Daemon::transport() const { return impl_->transport; }

StatePtr Daemon::state() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state;
}

std::string Daemon::plugin_dir() const { return impl_->plugin_dir; }

}  // namespace kgpu::server
