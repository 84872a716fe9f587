// The slice publisher against writers it cannot win against (issue 28, item 9): what kgpu sends
// the API server per minute, with the production timing (dra::SlicePublisher::Timing defaults).
// It runs the real publisher and its watch against the fake API server of the tests, in this
// process, over loopback HTTP, for --seconds (default 60) per fight:
//   second-writer   after each of kgpu's writes, another writer empties kgpu's slice again (a second
//                   driver or a controller with an old spec): kgpu's writes and LISTs per minute.
//                   Before the pacing (main at 052e9b9) this cost ~65 writes/s.
//   other-nodes     another writer rewrites other nodes' gpu.nvidia.com slices as fast as it can,
//                   and the server ignores the watch's field selector, so every event reaches
//                   kgpu: events sent, kgpu's LISTs and writes (before: one LIST per event, 2,724
//                   LISTs for 269,200 events).
// How to run:
//   cmake --build build --target bench_slice_fight && build/bench/bench_slice_fight [--seconds S]
// Prints one line per fight, to paste into an issue note.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "dra/publish/slice_publisher.h"
#include "support/fake_api_server.h"
#include "unit/dra/synthetic_node.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using kgpu::dra::SlicePublisher;

const std::string kNode = "node-1";
const std::string kSlice = "node-1-gpu.nvidia.com-0";

kgpu::dra::SliceOptions options() {
  kgpu::dra::SliceOptions o;
  o.node_name = kNode;
  o.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  return o;
}

struct Started {
  std::unique_ptr<SlicePublisher> publisher;
  bool ok = false;
};

// A publisher with the production timing, its pool at the server and its watch open.
Started start(kgpu::test::FakeApiServer& api) {
  Started s;
  s.publisher = std::make_unique<SlicePublisher>(kgpu::kube::ApiServer{api.url(), "", "", ""}, options());
  s.publisher->start();
  s.publisher->start_watch();
  auto pools = kgpu::dra::build_publication(kgpu::testing::a100_node(8, 0), options());
  if (!pools) return s;
  s.publisher->publish(pools->pools);
  s.ok = api.wait_slices([](const auto& slices) { return slices.count(kSlice) > 0; }, 10s) &&
         api.wait_slice_counts([](const auto& c) { return c.watches >= 1; }, 10s);
  return s;
}

double per_minute(int count, Clock::duration spent) {
  return count * 60.0 / std::chrono::duration<double>(spent).count();
}

bool second_writer(std::chrono::seconds duration) {
  kgpu::test::FakeApiServer api(kNode, {});
  Started s = start(api);
  if (!s.ok) return false;
  std::this_thread::sleep_for(1s);  // the events of kgpu's own first write have been handled
  const auto before = api.slice_counts();
  const auto t0 = Clock::now();
  int seen = before.writes();
  int edits = 0;
  while (Clock::now() - t0 < duration) {
    auto slices = api.slices();
    auto it = slices.find(kSlice);
    if (it != slices.end()) {
      nlohmann::json edited = it->second;
      edited["spec"]["devices"] = nlohmann::json::array();
      api.put_slice(edited);
      ++edits;
    }
    const auto left = duration - (Clock::now() - t0);
    if (left <= 0s) break;
    api.wait_slice_counts([&](const auto& c) { return c.writes() > seen; },
                          std::chrono::duration_cast<std::chrono::milliseconds>(left));
    seen = api.slice_counts().writes();
  }
  const auto spent = Clock::now() - t0;
  const auto after = api.slice_counts();
  const int writes = after.writes() - before.writes(), lists = after.lists - before.lists;
  std::printf(
      "second-writer: %.0f s, %d edits by the other writer; kgpu: %d writes (%.1f/min), %d LISTs (%.1f/min), "
      "fighting=%s\n",
      std::chrono::duration<double>(spent).count(), edits, writes, per_minute(writes, spent), lists,
      per_minute(lists, spent), s.publisher->state().fighting ? "yes" : "no");
  return true;
}

bool other_nodes(std::chrono::seconds duration) {
  kgpu::test::FakeApiServer api(kNode, {});
  Started s = start(api);
  if (!s.ok) return false;
  std::this_thread::sleep_for(1s);
  nlohmann::json other = api.slices().at(kSlice);
  const auto before = api.slice_counts();
  const auto t0 = Clock::now();
  int events = 0;
  while (Clock::now() - t0 < duration) {
    const int n = events++ % 100;
    other["metadata"]["name"] = "node-" + std::to_string(n + 2) + "-gpu.nvidia.com-0";
    other["spec"]["nodeName"] = "node-" + std::to_string(n + 2);
    api.put_slice(other);
    if (events % 64 == 0) std::this_thread::sleep_for(1ms);  // let the watch keep up
  }
  const auto spent = Clock::now() - t0;
  const auto after = api.slice_counts();
  const int writes = after.writes() - before.writes(), lists = after.lists - before.lists;
  std::printf("other-nodes: %.0f s, %d events of other nodes' slices; kgpu: %d LISTs (%.1f/min), %d writes\n",
              std::chrono::duration<double>(spent).count(), events, lists, per_minute(lists, spent), writes);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::chrono::seconds duration = 60s;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      duration = std::chrono::seconds(std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
      return 2;
    }
  }
  if (!second_writer(duration)) {
    std::fprintf(stderr, "second-writer: kgpu did not publish\n");
    return 1;
  }
  if (!other_nodes(duration)) {
    std::fprintf(stderr, "other-nodes: kgpu did not publish\n");
    return 1;
  }
  return 0;
}
