// Concurrent scrapes share one read: a caller arriving while a read runs waits for it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/eventually.h"
#include "telemetry/collector.h"
#include "telemetry/single_flight.h"

namespace kgpu::telemetry {
namespace {

using namespace std::chrono_literals;

TEST(SingleFlight, CallerArrivingDuringARunSharesItsResult) {
  SingleFlight<int> flight;
  std::atomic<int> runs{0};
  std::shared_ptr<const int> second;
  std::thread first([&] {
    auto v = flight.run([&] {
      ++runs;
      // Hold the run open until the second caller waits on it (bounded by a deadline).
      EXPECT_TRUE(flight.wait_for_waiters(1, std::chrono::steady_clock::now() + 5s));
      return std::make_shared<const int>(7);
    });
    EXPECT_EQ(*v, 7);
  });
  // Start the second caller only once the first run is in flight.
  while (runs.load() == 0) std::this_thread::yield();
  std::thread other([&] {
    second = flight.run([&] {
      ++runs;
      return std::make_shared<const int>(8);
    });
  });
  first.join();
  other.join();
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, 7);
  EXPECT_EQ(runs.load(), 1);
}

TEST(SingleFlight, NextCallerAfterARunStartsAFreshOne) {
  SingleFlight<int> flight;
  int n = 0;
  EXPECT_EQ(*flight.run([&] { return std::make_shared<const int>(++n); }), 1);
  EXPECT_EQ(*flight.run([&] { return std::make_shared<const int>(++n); }), 2);
}

// A source whose read blocks until told, counting reads.
class BlockingSource final : public ReadingSource {
 public:
  std::atomic<int> reads{0};
  std::atomic<bool> release{false};
  void set_targets(std::vector<Target> targets) override { targets_ = std::move(targets); }
  size_t read(std::vector<Reading>& readings) override {
    ++reads;
    while (!release.load()) std::this_thread::yield();
    readings.assign(targets_.size(), Reading{});
    for (auto& r : readings) r[Field::GpuUtil] = 50;
    return targets_.size();
  }

 private:
  std::vector<Target> targets_;
};

TEST(Collector, ConcurrentScrapesCostOneRead) {
  auto source = std::make_unique<BlockingSource>();
  BlockingSource* src = source.get();
  Collector collector(std::move(source), CollectorOptions{"node-1", nullptr, nullptr});
  Inventory inv;
  Gpu g;
  g.uuid = "GPU-0";
  inv.gpus = {g};
  collector.set_inventory(inv);

  constexpr int kScrapers = 4;
  std::vector<std::string> outputs(kScrapers);
  std::vector<std::thread> threads;
  threads.emplace_back([&] { collector.append(outputs[0]); });
  while (src->reads.load() == 0) std::this_thread::yield();
  for (int i = 1; i < kScrapers; ++i) threads.emplace_back([&, i] { collector.append(outputs[i]); });
  // Release the read only once every late scrape waits on it.
  EXPECT_TRUE(test::eventually([&] { return collector.waiting_scrapes() == kScrapers - 1; }));
  src->release = true;
  for (auto& t : threads) t.join();
  for (const auto& out : outputs) EXPECT_NE(out.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\""), std::string::npos);
  EXPECT_EQ(src->reads.load(), 1);
  EXPECT_EQ(collector.reads(), 1u);
  // The next scrape reads afresh: nothing is served stale.
  std::string later;
  collector.append(later);
  EXPECT_EQ(src->reads.load(), 2);
}

}  // namespace
}  // namespace kgpu::telemetry
