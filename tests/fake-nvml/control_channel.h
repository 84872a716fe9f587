// The run-time control channel: a command file (KGPU_FAKE_NVML_CONTROL) that tests in any process
// append lines to. A thread blocks in poll() on inotify and on an eventfd (its stop signal), so it
// costs no wake-ups while idle and reacts to a new line within microseconds.
#pragma once
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace kgpu::fake_nvml {

class ControlChannel {
 public:
  // Opens (creating if needed) and watches `path`. Check ok() afterwards.
  explicit ControlChannel(std::string path);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  bool ok() const { return inotify_fd_ >= 0 && stop_fd_ >= 0; }
  const std::string& path() const { return path_; }

  // Complete lines appended since the last call (all of them on the first call).
  std::vector<std::string> read_new_lines();

  // Starts the watcher thread; `on_lines` runs on it for every batch of new lines.
  void start(std::function<void(const std::vector<std::string>&)> on_lines);

 private:
  void run();

  std::string path_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;
  long long offset_ = 0;
  std::string partial_;
  std::function<void(const std::vector<std::string>&)> on_lines_;
  std::thread thread_;
};

}  // namespace kgpu::fake_nvml
