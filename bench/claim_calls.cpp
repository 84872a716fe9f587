// The kubelet's NodePrepareResources / NodeUnprepareResources through dra::KubeletPlugin, over its
// real unix socket, called by the DRA kubelet simulator (gRPC C++), with one claim whose API read
// hangs (issue 28, item 6). The handler is a stand-in: each claim costs --cost-us of waiting (an
// API GET and a checkpoint write; default 1,000 µs), the claim named "hang" waits --hang-ms
// (default 2,000 ms). For 1, 8 and 1,000 claims, prepare and unprepare:
//   alone      N claims in one request, none hanging: the whole call;
//   one-call   N claims in one request, the first of them hanging: the whole call;
//   beside     the hanging claim in one request, then (once it hangs) the N other claims in a second
//              request, as the kubelet sends for another pod: that second call.
// Then one tenant's 80 slow claims (issue 38, item 3): 80 pods of namespace team-slow, one prepare
// call each, whose claim reads all hang (--slow-ms, default 5,000 ms); meanwhile, for team-b, the
// unprepare of a claim, the repeated prepare of a prepared claim (both need no API round trip)
// and a first prepare (an API read, of another tenant): each call's milliseconds.
// How to run:
//   cmake --build build --target bench_claim_calls && build/bench/bench_claim_calls [--reps R]
//     [--cost-us C] [--hang-ms H] [--slow-ms S]
// Prints one line per case (median of R runs, default 3; 1 run for 1,000 claims), to paste into
// an issue note.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dra/kubelet_plugin.h"
#include "rpc/server.h"
#include "sim/dra_kubelet_sim.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using namespace kgpu;

struct Handler {
  std::chrono::microseconds cost{1000};
  std::chrono::milliseconds hang{2000};
  std::chrono::milliseconds slow{5000};
  std::mutex mu;
  std::condition_variable cv;
  int hanging = 0;      // hanging claims that reached the handler
  bool released = false;

  void work(const dra::ClaimRef& c) {
    if (c.ns == "team-slow") {  // a read that hangs until released or --slow-ms
      std::unique_lock lock(mu);
      ++hanging;
      cv.notify_all();
      cv.wait_for(lock, slow, [&] { return released; });
      return;
    }
    if (c.name != "hang") {
      std::this_thread::sleep_for(cost);
      return;
    }
    std::unique_lock lock(mu);
    ++hanging;
    cv.notify_all();
    cv.wait_for(lock, hang, [&] { return released; });
  }
  bool wait_hanging(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 60s, [&] { return hanging >= n; });
  }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::vector<sim::DraClaim> claims(size_t n, const std::string& prefix) {
  std::vector<sim::DraClaim> out;
  for (size_t i = 0; i < n; ++i) out.push_back({"team-a", "claim-" + std::to_string(i), prefix + std::to_string(i)});
  return out;
}

// One call of `op` for `cs`; its milliseconds, or -1 when it failed.
double call(sim::DraKubeletSim& kubelet, bool prepare, const std::vector<sim::DraClaim>& cs) {
  auto t0 = Clock::now();
  bool ok = false;
  if (prepare) {
    auto r = kubelet.prepare("gpu.nvidia.com", cs, 120s);
    ok = r && std::all_of(r->begin(), r->end(), [](const auto& e) { return e.second.error.empty(); });
    if (!r) std::fprintf(stderr, "prepare failed: %s\n", r.error().message.c_str());
  } else {
    auto r = kubelet.unprepare("gpu.nvidia.com", cs, 120s);
    ok = r && std::all_of(r->begin(), r->end(), [](const auto& e) { return e.second.empty(); });
    if (!r) std::fprintf(stderr, "unprepare failed: %s\n", r.error().message.c_str());
  }
  double ms = ms_since(t0);
  return ok ? ms : -1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 3;
  long cost_us = 1000, hang_ms = 2000, slow_ms = 5000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--cost-us")) cost_us = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--hang-ms")) hang_ms = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--slow-ms")) slow_ms = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--reps R] [--cost-us C] [--hang-ms H] [--slow-ms S]\n", argv[0]);
      return 2;
    }
  }
  char templ[] = "/tmp/kgpu-bench-claims-XXXXXX";
  if (!::mkdtemp(templ)) return 1;
  const std::string root = templ;

  auto handler_state = std::make_shared<Handler>();
  handler_state->cost = std::chrono::microseconds(cost_us);
  handler_state->hang = std::chrono::milliseconds(hang_ms);
  handler_state->slow = std::chrono::milliseconds(slow_ms);
  dra::ClaimHandler handler;
  handler.prepare = [h = handler_state](const dra::ClaimRef& c) -> Result<std::vector<dra::PreparedDevice>> {
    h->work(c);
    return std::vector<dra::PreparedDevice>{{{"gpu"}, "node-1", "gpu-0", {"k8s.gpu.nvidia.com/claim=" + c.uid + "-gpu-0"}, {}, false, "GPU-0", true}};
  };
  // Claims named "prepared-*" are prepared already: a repeated prepare reads no API (Local lane).
  handler.prepared = [](const dra::ClaimRef& c) { return c.name.starts_with("prepared-"); };
  handler.unprepare = [h = handler_state](const dra::ClaimRef& c) -> Status {
    h->work(c);
    return ok_status();
  };
  auto transport = rpc::Server::start();
  if (!transport) return 1;
  std::shared_ptr<rpc::Server> server = std::move(*transport);
  dra::KubeletPluginOptions options;
  options.driver = "gpu.nvidia.com";
  options.kubelet_root = root;
  auto plugin = std::make_unique<dra::KubeletPlugin>(options, handler, server);
  if (auto st = plugin->start(); !st) {
    std::fprintf(stderr, "%s\n", st.error().message.c_str());
    return 1;
  }
  sim::DraKubeletSim kubelet(root);
  if (auto p = kubelet.wait_for_plugin(10s); !p) {
    std::fprintf(stderr, "%s\n", p.error().message.c_str());
    return 1;
  }

  std::printf("per claim %ld us, hanging claim %ld ms; median ms\n", cost_us, hang_ms);
  std::printf("%-10s %6s %10s %10s %10s\n", "op", "claims", "alone", "one-call", "beside");
  int run = 0;
  for (bool prepare : {true, false}) {
    for (size_t n : {size_t{1}, size_t{8}, size_t{1000}}) {
      std::vector<double> alone, one_call, beside;
      int r_n = n >= 1000 ? 1 : reps;
      for (int r = 0; r < r_n; ++r) {
        ++run;
        const std::string prefix = "uid-" + std::to_string(run) + "-";
        alone.push_back(call(kubelet, prepare, claims(n, prefix + "a")));

        // The first claim of the request hangs.
        {
          std::lock_guard lock(handler_state->mu);
          handler_state->hanging = 0;
          handler_state->released = false;
        }
        auto cs = claims(n, prefix + "b");
        cs[0].name = "hang";
        one_call.push_back(call(kubelet, prepare, cs));

        // The hanging claim alone, the others in a second request sent once it hangs.
        {
          std::lock_guard lock(handler_state->mu);
          handler_state->hanging = 0;
        }
        std::vector<sim::DraClaim> hang_only{{"team-a", "hang", prefix + "hang"}};
        auto hung = std::async(std::launch::async, [&] { return call(kubelet, prepare, hang_only); });
        if (!handler_state->wait_hanging(1)) return 1;
        beside.push_back(call(kubelet, prepare, claims(n, prefix + "c")));
        hung.get();
      }
      std::printf("%-10s %6zu %10.1f %10.1f %10.1f\n", prepare ? "prepare" : "unprepare", n, median(alone),
                  median(one_call), median(beside));
      std::fflush(stdout);
    }
  }
  handler_state->release();

  // One tenant's 80 slow claims, one call per pod; then team-b's calls.
  {
    std::lock_guard lock(handler_state->mu);
    handler_state->hanging = 0;
    handler_state->released = false;
  }
  std::vector<std::future<double>> slow;
  for (int i = 0; i < 80; ++i)
    slow.push_back(std::async(std::launch::async, [&, i] {
      return call(kubelet, true, {{"team-slow", "slow-" + std::to_string(i), "uid-slow-" + std::to_string(i)}});
    }));
  if (!handler_state->wait_hanging(6)) return 1;  // one tenant's share of the API lane (claim_calls.h)
  std::vector<double> unprepare_ms, repeated_ms, other_ms;
  for (int r = 0; r < reps; ++r) {
    const std::string n = std::to_string(r);
    unprepare_ms.push_back(call(kubelet, false, {{"team-b", "done-" + n, "uid-done-" + n}}));
    repeated_ms.push_back(call(kubelet, true, {{"team-b", "prepared-" + n, "uid-prepared-" + n}}));
    other_ms.push_back(call(kubelet, true, {{"team-b", "new-" + n, "uid-new-" + n}}));
  }
  int hanging = 0;
  {
    std::lock_guard lock(handler_state->mu);
    hanging = handler_state->hanging;
  }
  std::printf("80 claims of one namespace whose reads hang %ld ms (%d of them hanging): team-b's unprepare %.1f ms, "
              "repeated prepare %.1f ms, first prepare %.1f ms (median of %d)\n",
              slow_ms, hanging, median(unprepare_ms), median(repeated_ms), median(other_ms), reps);
  handler_state->release();
  for (auto& f : slow) f.get();
  plugin.reset();
  server->stop();
  std::filesystem::remove_all(root);
  return 0;
}
