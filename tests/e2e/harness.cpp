#include "e2e/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/mounts.h"

extern char** environ;

namespace kgpu::test {
namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp " + templ + ": " + std::strerror(errno));
  path_ = buf.data();
}

TempDir::~TempDir() {
  unmount_all_under(path_);  // a DRA MPS claim's shared memory, when a test ended with it prepared
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  std::string p = file(name);
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

namespace {
int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
}  // namespace

ChildProcess::ChildProcess(ProcessOptions options, const std::string& log_dir, const std::string& name) {
  if (options.argv.empty()) throw std::runtime_error("ChildProcess: empty argv");
  stdout_path_ = options.stdout_path.empty() ? log_dir + "/" + name + ".stdout" : options.stdout_path;
  stderr_path_ = options.stderr_path.empty() ? log_dir + "/" + name + ".stderr" : options.stderr_path;

  // Build argv/envp before fork: only async-signal-safe calls are allowed in the child.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    if (options.env.count(key)) continue;
    bool drop = false;
    for (const auto& u : options.unset_env) drop = drop || u == key;
    if (!drop) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& a : options.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out = ::open(stdout_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) throw std::runtime_error("cannot open log files in " + log_dir);

  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  pidfd_ = pidfd_open(pid_);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) record_status(status);
  }
  if (pidfd_ >= 0) ::close(pidfd_);
}

void ChildProcess::record_status(int status) {
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) exit_code_ = 128 + WTERMSIG(status);
}

bool ChildProcess::running() {
  if (exit_code_) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    record_status(status);
    return false;
  }
  return true;
}

void ChildProcess::signal(int sig) {
  if (running()) ::kill(pid_, sig);
}

std::optional<int> ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (!running()) return exit_code_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    if (pidfd_ >= 0) {
      // The pidfd becomes readable when the process exits: block on it, no polling sleeps.
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(left.count()));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!running()) return exit_code_;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
  }
}

std::string ChildProcess::stdout_text() const { return read_file(stdout_path_); }
std::string ChildProcess::stderr_text() const { return read_file(stderr_path_); }

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// KGPU_E2E_BINARY runs the e2e tests against another build of kgpu: CI's tsan phase drives a
// ThreadSanitizer kgpu with these (uninstrumented) tests, so what TSan checks is the daemon itself.
std::string kgpu_binary() {
  const char* other = std::getenv("KGPU_E2E_BINARY");
  return other && *other ? other : KGPU_BINARY;
}
std::string fleet_path(const std::string& fleet_file) {
  if (fleet_file.starts_with("/")) return fleet_file;  // a fleet a test wrote itself
  return std::string(KGPU_FIXTURES_DIR) + "/fleets/" + fleet_file;
}
std::string fake_nvml_dir() { return KGPU_FAKE_NVML_DIR; }

FakeNode make_fake_node(const std::string& fleet_file, const std::string& root) {
  FakeNode node;
  node.fleet = fleet_path(fleet_file);
  std::string tool = fake_nvml_dir() + "/kgpu-fake-nvml-fixture";
  if (::access(tool.c_str(), X_OK) == 0) {
    fs::create_directories(root);
    ProcessOptions opts;
    opts.argv = {tool, node.fleet, root};
    ChildProcess gen(opts, root, "fixture");
    auto rc = gen.wait_exit(std::chrono::seconds(30));
    if (!rc || *rc != 0)
      throw std::runtime_error("kgpu-fake-nvml-fixture failed: " + gen.stderr_text());
    node.root = root;
    node.sysfs_root = root + "/sys";
    node.proc_root = root + "/proc";
    node.dev_root = root;
  }
  return node;
}

std::map<std::string, std::string> fake_nvml_env(const FakeNode& node) {
  // KGPU_FAKE_NVML_ROOT: the capability files of MIG instances made at run time go to the node's tree.
  return {{"LD_LIBRARY_PATH", fake_nvml_dir()}, {"KGPU_FAKE_NVML_FLEET", node.fleet}, {"KGPU_FAKE_NVML_ROOT", node.root}};
}

std::unique_ptr<ChildProcess> start_plugin(const PluginOptions& options, const std::string& work_dir) {
  ProcessOptions p;
  p.argv = {kgpu_binary(), "plugin", "--kubelet-socket", options.plugin_dir + "/kubelet.sock"};
  if (!options.fleet_file.empty()) {
    FakeNode node = make_fake_node(options.fleet_file, work_dir + "/node-" + options.name);
    if (options.fake_nvml) p.env = fake_nvml_env(node);
    if (!node.root.empty() && options.node_dir.empty()) {
      p.argv.insert(p.argv.end(), {"--sysfs-root", node.sysfs_root, "--proc-root", node.proc_root,
                                   "--dev-root", node.dev_root});
    }
  }
  if (!options.fake_nvml) {
    // Make sure no real or fake NVML is found through the environment.
    p.env["LD_LIBRARY_PATH"] = work_dir + "/no-nvml-here";
    p.unset_env.push_back("KGPU_FAKE_NVML_FLEET");
  }
  if (!options.node_dir.empty())
    p.argv.insert(p.argv.end(), {"--sysfs-root", options.node_dir + "/sys", "--dev-root", options.node_dir});
  if (!options.config_file.empty()) p.argv.insert(p.argv.end(), {"--config-file", options.config_file});
  p.argv.insert(p.argv.end(), options.extra_args.begin(), options.extra_args.end());
  for (const auto& [k, v] : options.env) p.env[k] = v;
  return std::make_unique<ChildProcess>(std::move(p), work_dir, options.name);
}

std::string socket_name(const std::string& resource) {
  std::string s = resource;
  for (char& c : s)
    if (c == '/') c = '-';
  return "kgpu-" + s + ".sock";
}

}  // namespace kgpu::test
