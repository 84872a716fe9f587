#pragma once
// What /proc says about a running process, for the end-to-end benchmarks: RSS, threads (with their
// names), every thread's context switches and on-CPU time, and the process's utime+stime. Two
// samples taken around an idle period show which thread wakes up and what it costs.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace kgpu::bench {

struct ThreadSample {
  std::string name;     // /proc/PID/task/TID/comm (the kernel keeps 15 characters)
  long switches = 0;    // voluntary + nonvoluntary context switches
  long long cpu_ns = 0; // time on a CPU (first field of schedstat); 0 where the kernel has no schedstat
};

struct ProcSample {
  bool ok = false;       // false when the process was gone
  long rss_kib = 0;      // VmRSS
  long threads = 0;      // Threads
  double cpu_ms = 0;     // utime + stime of the whole process (exited threads included), clock-tick resolution
  std::map<pid_t, ThreadSample> tasks;

  long switches() const {
    long sum = 0;
    for (const auto& [tid, t] : tasks) sum += t.switches;
    return sum;
  }
  long long cpu_ns() const {
    long long sum = 0;
    for (const auto& [tid, t] : tasks) sum += t.cpu_ns;
    return sum;
  }
};

namespace detail {

inline std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The numbers after "Key:" in a /proc status file.
inline std::map<std::string, long> status_fields(const std::filesystem::path& path) {
  std::map<std::string, long> fields;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string key;
    long value = 0;
    if (l >> key >> value) fields[key] = value;
  }
  return fields;
}

// utime + stime (fields 14 and 15 of /proc/PID/stat; the command name before them may hold spaces).
inline double stat_cpu_ms(const std::filesystem::path& path) {
  std::string line = first_line(path);
  auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  if (fields.size() < 13) return 0;
  double ticks = std::stod(fields[11]) + std::stod(fields[12]);
  return ticks * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace detail

inline ProcSample sample_process(pid_t pid) {
  namespace fs = std::filesystem;
  ProcSample s;
  fs::path proc = "/proc/" + std::to_string(pid);
  auto status = detail::status_fields(proc / "status");
  if (status.empty()) return s;
  s.ok = true;
  s.rss_kib = status["VmRSS:"];
  s.threads = status["Threads:"];
  s.cpu_ms = detail::stat_cpu_ms(proc / "stat");
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(proc / "task", ec)) {
    ThreadSample t;
    t.name = detail::first_line(task.path() / "comm");
    auto fields = detail::status_fields(task.path() / "status");
    if (fields.empty()) continue;  // the thread exited while we read
    t.switches = fields["voluntary_ctxt_switches:"] + fields["nonvoluntary_ctxt_switches:"];
    std::istringstream sched(detail::first_line(task.path() / "schedstat"));
    sched >> t.cpu_ns;
    s.tasks[static_cast<pid_t>(std::stol(task.path().filename().string()))] = t;
  }
  return s;
}

// What each thread did between two samples, busiest first: threads that started in between count
// from zero; threads that exited in between are listed, marked exited, with zero (what they did
// after the first sample left with them; the process's utime+stime still holds their CPU).
struct ThreadDelta {
  std::string name;
  long switches = 0;
  long long cpu_ns = 0;
  bool exited = false;
};

inline std::vector<ThreadDelta> thread_deltas(const ProcSample& before, const ProcSample& after) {
  std::vector<ThreadDelta> out;
  for (const auto& [tid, t] : after.tasks) {
    auto it = before.tasks.find(tid);
    long s0 = it == before.tasks.end() ? 0 : it->second.switches;
    long long c0 = it == before.tasks.end() ? 0 : it->second.cpu_ns;
    out.push_back({t.name, t.switches - s0, t.cpu_ns - c0, false});
  }
  for (const auto& [tid, t] : before.tasks)
    if (!after.tasks.count(tid)) out.push_back({t.name, 0, 0, true});
  std::stable_sort(out.begin(), out.end(), [](const ThreadDelta& a, const ThreadDelta& b) {
    return a.switches > b.switches;
  });
  return out;
}

}  // namespace kgpu::bench
