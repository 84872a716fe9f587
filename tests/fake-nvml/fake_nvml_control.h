// Test-side client of the fake NVML's control channel (FLEET_FORMAT.md, "Control channel").
// Header-only so any test can include it: it appends command lines to the control file that a
// library loaded in this or any other process watches, and waits for the library's
// acknowledgements in "<control>.ack" with inotify (no sleeps).
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace kgpu::fake_nvml {

class Control {
 public:
  // Creates the control file if needed. Point the library at it with
  // KGPU_FAKE_NVML_CONTROL=<path()> before the first nvmlInit in the process under test.
  explicit Control(std::string path) : path_(std::move(path)) {
    int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  }

  const std::string& path() const { return path_; }
  std::string ack_path() const { return path_ + ".ack"; }

  // XID on a GPU (GPU uuid) or on a MIG device (MIG uuid).
  bool inject_xid(std::string_view uuid, unsigned long long xid) {
    return send("xid " + std::string(uuid) + " " + std::to_string(xid));
  }
  // XID on the MIG device of `gpu_uuid` with GPU instance `gi` and compute instance `ci`.
  bool inject_xid_mig(std::string_view gpu_uuid, unsigned long long xid, unsigned gi, unsigned ci) {
    return send("xid " + std::string(gpu_uuid) + " " + std::to_string(xid) + " " + std::to_string(gi) + " " +
                std::to_string(ci));
  }
  bool inject_ecc_double(std::string_view uuid) { return send("ecc_double " + std::string(uuid)); }
  bool inject_ecc_single(std::string_view uuid) { return send("ecc_single " + std::string(uuid)); }
  // Any event type mask (nvmlEventType*), with optional MIG instance ids.
  bool inject_event(std::string_view uuid, unsigned long long type, unsigned long long data) {
    return send("event " + std::string(uuid) + " " + std::to_string(type) + " " + std::to_string(data));
  }
  // Marks a GPU lost (NVML_ERROR_GPU_IS_LOST from then on) or brings it back.
  bool set_lost(std::string_view gpu_uuid, bool lost) {
    return send("lost " + std::string(gpu_uuid) + (lost ? " 1" : " 0"));
  }
  // Marks a GPU lost at the next nvmlEventSetCreate in the process under test: discovery still
  // sees it, the health monitor (which creates the set, then registers events) finds it lost.
  // A later set_lost() of that GPU disarms it.
  bool lose_at_next_event_set(std::string_view gpu_uuid) { return send("lose_at_event_set " + std::string(gpu_uuid)); }
  // Makes `call` (e.g. "nvmlDeviceGetMemoryInfo") on the device return `code`; 0 clears.
  bool fail_call(std::string_view uuid, std::string_view call, unsigned code) {
    return send("fail " + std::string(uuid) + " " + std::string(call) + " " + std::to_string(code));
  }

  // True once a library instance has applied every command sent before this call.
  bool sync(std::chrono::milliseconds timeout) {
    static std::atomic<unsigned> counter{0};
    const std::string token = std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    return wait_for_ack("synced " + token + "\n", timeout, [&] { return send("sync " + token); });
  }

  // True once some process has registered events for `gpu_uuid` (nvmlDeviceRegisterEvents succeeded).
  bool wait_registered(std::string_view gpu_uuid, std::chrono::milliseconds timeout) {
    return wait_for_ack("registered " + std::string(gpu_uuid) + " ", timeout, [] { return true; });
  }

  // True once some thread has blocked in nvmlEventSetWait with nothing pending (it then stays
  // there until an event or its timeout: the real library offers no way to interrupt it).
  bool wait_waiting(std::chrono::milliseconds timeout) {
    return wait_for_ack("waiting\n", timeout, [] { return true; });
  }

  // Sends one raw command line (see FLEET_FORMAT.md).
  bool send(const std::string& command) {
    int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    const std::string line = command + "\n";
    // A single append keeps lines from concurrent writers whole.
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    return ok;
  }

 private:
  template <typename Before>
  bool wait_for_ack(const std::string& needle, std::chrono::milliseconds timeout, Before&& before) {
    const std::string ack = ack_path();
    int created = ::open(ack.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (created >= 0) ::close(created);
    int in = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (in < 0) return false;
    // Watch before acting, so an acknowledgement cannot slip between the check and the wait.
    if (::inotify_add_watch(in, ack.c_str(), IN_MODIFY) < 0 || !before()) {
      ::close(in);
      return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool found = false;
    for (;;) {
      std::ifstream file(ack);
      std::stringstream content;
      content << file.rdbuf();
      if (content.str().find(needle) != std::string::npos) {
        found = true;
        break;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd pfd{in, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count()) + 1) > 0) {
        alignas(inotify_event) char buf[4096];
        while (::read(in, buf, sizeof buf) > 0) {
        }
      }
    }
    ::close(in);
    return found;
  }

  std::string path_;
};

}  // namespace kgpu::fake_nvml
