// Metrics registry: the rendered text must parse back as valid Prometheus exposition and carry
// exactly what was recorded.
#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "exposition_parser.h"

namespace kgpu {
namespace {

using testing::parse_exposition;

TEST(Metrics, EmptyRegistryRendersEveryFamilyWithHelpAndType) {
  Metrics m("1.2.3");
  const auto e = parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"kgpu_build_info", "gauge"},
      {"kgpu_start_time_seconds", "gauge"},
      {"kgpu_devices", "gauge"},
      {"kgpu_resource_registered", "gauge"},
      {"kgpu_allocations_total", "counter"},
      {"kgpu_allocated_devices_total", "counter"},
      {"kgpu_allocate_errors_total", "counter"},
      {"kgpu_kubelet_registrations_total", "counter"},
      {"kgpu_kubelet_registration_errors_total", "counter"},
      {"kgpu_allocate_duration_seconds", "histogram"},
      {"kgpu_preferred_allocation_duration_seconds", "histogram"},
      {"kgpu_health_xid_events_total", "counter"},
      {"kgpu_config_reloads_total", "counter"},
      {"kgpu_config_invalid", "gauge"},
  };
  for (const auto& [name, type] : expected) {
    const auto* f = e.family(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type, type) << name;
    EXPECT_FALSE(f->help.empty()) << name;
  }
  EXPECT_EQ(e.value("kgpu_build_info", {{"version", "1.2.3"}}), 1.0);
  EXPECT_GT(*e.value("kgpu_start_time_seconds", {}), 1.6e9);
  EXPECT_EQ(e.value("kgpu_config_reloads_total", {{"result", "success"}}), 0.0);
  EXPECT_EQ(e.value("kgpu_config_invalid", {}), 0.0);
}

// Issue 41: an invalid file on disk (a failed reload) shows as a gauge and a /readyz reason until
// a reload succeeds.
TEST(Metrics, AnInvalidConfigOnDiskIsAGaugeAndANotReadyReason) {
  Metrics m;
  m.mark_planned();
  EXPECT_EQ(m.not_ready_reason(), "");
  m.count_reload(false);
  EXPECT_EQ(parse_exposition(m.render()).value("kgpu_config_invalid", {}), 1.0);
  EXPECT_NE(m.not_ready_reason().find("not ready: the configuration file on disk is invalid; the last valid one is "
                                      "still served"),
            std::string::npos)
      << m.not_ready_reason();
  m.count_reload(true);
  EXPECT_EQ(parse_exposition(m.render()).value("kgpu_config_invalid", {}), 0.0);
  EXPECT_EQ(m.not_ready_reason(), "");
}

TEST(Metrics, RecordsPerResourceValues) {
  Metrics m;
  m.set_devices("nvidia.com/gpu", 7, 1);
  m.set_registered("nvidia.com/gpu", true);
  m.count_allocation("nvidia.com/gpu", 2);
  m.count_allocation("nvidia.com/gpu", 1);
  m.count_allocate_error("nvidia.com/gpu");
  m.count_registration("nvidia.com/gpu");
  m.count_registration("nvidia.com/gpu");
  m.count_registration_error("nvidia.com/mig-1g.10gb");
  m.count_xid(79);
  m.count_xid(79);
  m.count_xid(48);
  m.count_reload(true);
  m.count_reload(false);
  m.count_reload(false);

  const auto e = parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  const std::map<std::string, std::string> gpu = {{"resource", "nvidia.com/gpu"}};
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", "nvidia.com/gpu"}, {"health", "healthy"}}), 7.0);
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", "nvidia.com/gpu"}, {"health", "unhealthy"}}), 1.0);
  EXPECT_EQ(e.value("kgpu_resource_registered", gpu), 1.0);
  EXPECT_EQ(e.value("kgpu_resource_registered", {{"resource", "nvidia.com/mig-1g.10gb"}}), 0.0);
  EXPECT_EQ(e.value("kgpu_allocations_total", gpu), 2.0);
  EXPECT_EQ(e.value("kgpu_allocated_devices_total", gpu), 3.0);
  EXPECT_EQ(e.value("kgpu_allocate_errors_total", gpu), 1.0);
  EXPECT_EQ(e.value("kgpu_kubelet_registrations_total", gpu), 2.0);
  EXPECT_EQ(e.value("kgpu_kubelet_registration_errors_total", {{"resource", "nvidia.com/mig-1g.10gb"}}), 1.0);
  EXPECT_EQ(e.value("kgpu_health_xid_events_total", {{"xid", "79"}}), 2.0);
  EXPECT_EQ(e.value("kgpu_health_xid_events_total", {{"xid", "48"}}), 1.0);
  EXPECT_EQ(e.value("kgpu_config_reloads_total", {{"result", "success"}}), 1.0);
  EXPECT_EQ(e.value("kgpu_config_reloads_total", {{"result", "error"}}), 2.0);
}

// Which GPU raised an XID is a label, as in dcgm-exporter's series (issue 30, item 6).
TEST(Metrics, XidEventsCarryTheGpu) {
  Metrics m;
  m.count_xid(79, "GPU-a");
  m.count_xid(79, "GPU-a");
  m.count_xid(79, "GPU-b");
  m.count_xid(31);
  auto e = testing::parse_exposition(m.render());
  EXPECT_EQ(e.value("kgpu_health_xid_events_total", {{"gpu", "GPU-a"}, {"xid", "79"}}), 2.0);
  EXPECT_EQ(e.value("kgpu_health_xid_events_total", {{"gpu", "GPU-b"}, {"xid", "79"}}), 1.0);
  EXPECT_EQ(e.value("kgpu_health_xid_events_total", {{"xid", "31"}}), 1.0);
  EXPECT_EQ(m.last_xid("GPU-b"), 79u);
}

TEST(Metrics, HistogramBucketsAreCumulativeAndEndInInf) {
  Metrics m;
  auto& r = m.resource("nvidia.com/gpu");
  r.observe_allocate(5e-6);    // first bucket
  r.observe_allocate(10e-6);   // exactly on a bound: le is inclusive
  r.observe_allocate(30e-6);   // (25µs, 50µs]
  r.observe_allocate(2.0);     // above every bound
  r.observe_preferred(1e-3);

  const auto e = parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  const auto* f = e.family("kgpu_allocate_duration_seconds");
  ASSERT_NE(f, nullptr);
  double previous = 0;
  int buckets = 0;
  for (const auto& s : f->samples) {
    if (s.name != "kgpu_allocate_duration_seconds_bucket") continue;
    ++buckets;
    EXPECT_GE(s.value, previous) << "buckets must be cumulative, le=" << s.labels.at("le");
    previous = s.value;
  }
  EXPECT_EQ(buckets, static_cast<int>(LatencyHistogram::kBounds.size()) + 1);
  const std::string h = "kgpu_allocate_duration_seconds";
  auto bucket = [&](const std::string& le) {
    return e.value(h + "_bucket", {{"resource", "nvidia.com/gpu"}, {"le", le}});
  };
  EXPECT_EQ(bucket("1e-05"), 2.0);
  EXPECT_EQ(bucket("2.5e-05"), 2.0);
  EXPECT_EQ(bucket("5e-05"), 3.0);
  EXPECT_EQ(bucket("1"), 3.0);
  EXPECT_EQ(bucket("+Inf"), 4.0);
  EXPECT_EQ(e.value(h + "_count", {{"resource", "nvidia.com/gpu"}}), 4.0);
  EXPECT_NEAR(*e.value(h + "_sum", {{"resource", "nvidia.com/gpu"}}), 2.000045, 1e-9);
  EXPECT_EQ(e.value("kgpu_preferred_allocation_duration_seconds_count", {{"resource", "nvidia.com/gpu"}}),
            1.0);
}

TEST(Metrics, LabelValuesAreEscapedAndParseBack) {
  Metrics m("v\"1\\\n");
  const std::string odd = "example.com/a\"b\\c\nd";
  m.set_devices(odd, 3, 0);
  const std::string text = m.render();
  EXPECT_NE(text.find(R"(resource="example.com/a\"b\\c\nd")"), std::string::npos) << text;
  const auto e = parse_exposition(text);
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", odd}, {"health", "healthy"}}), 3.0);
  EXPECT_EQ(e.value("kgpu_build_info", {{"version", "v\"1\\\n"}}), 1.0);
}

TEST(Metrics, EscapeHelpers) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(escape_help("a\"b\\c\nd"), "a\"b\\\\c\\nd");
}

TEST(Metrics, RetiredResourcesDisappearAndComeBack) {
  Metrics m;
  auto& r = m.resource("nvidia.com/gpu.shared");
  r.count_allocation(1);
  m.retire_resource("nvidia.com/gpu.shared");
  EXPECT_EQ(m.render().find("nvidia.com/gpu.shared"), std::string::npos);
  EXPECT_EQ(&m.resource("nvidia.com/gpu.shared"), &r) << "references stay valid";
  const auto e = parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.value("kgpu_allocations_total", {{"resource", "nvidia.com/gpu.shared"}}), 1.0);
}

TEST(Metrics, ConcurrentObservationsAreAllCounted) {
  Metrics m;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  const std::vector<std::string> names = {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string& name = names[static_cast<std::size_t>(t) % names.size()];
      for (int i = 0; i < kPerThread; ++i) {
        m.observe_allocate(name, 20e-6);
        m.count_allocation(name, 2);
        m.count_xid(static_cast<uint64_t>(i % 3));
        if (i % 1000 == 0) (void)m.render();  // readers race with writers
      }
    });
  }
  for (auto& t : threads) t.join();

  const auto e = parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  const double per_resource = kThreads / 2.0 * kPerThread;
  for (const auto& name : names) {
    EXPECT_EQ(e.value("kgpu_allocations_total", {{"resource", name}}), per_resource);
    EXPECT_EQ(e.value("kgpu_allocated_devices_total", {{"resource", name}}), 2 * per_resource);
    EXPECT_EQ(e.value("kgpu_allocate_duration_seconds_count", {{"resource", name}}), per_resource);
    EXPECT_NEAR(*e.value("kgpu_allocate_duration_seconds_sum", {{"resource", name}}), per_resource * 20e-6,
                1e-6);
  }
  double xids = 0;
  for (int x = 0; x < 3; ++x) xids += *e.value("kgpu_health_xid_events_total", {{"xid", std::to_string(x)}});
  EXPECT_EQ(xids, static_cast<double>(kThreads) * kPerThread);
}

TEST(Metrics, ParserRejectsMalformedText) {
  // The parser is what the other tests trust, so make sure it can fail.
  EXPECT_NE(parse_exposition("x 1\n").error, "");                                      // no TYPE
  EXPECT_NE(parse_exposition("# HELP x h\n# TYPE x gauge\nx{a=\"1} 1\n").error, "");  // unterminated
  EXPECT_NE(parse_exposition("# HELP x h\n# TYPE x gauge\ny 1\n").error, "");          // other family
  EXPECT_NE(parse_exposition("# HELP x h\n# TYPE x gauge\nx 1").error, "");            // no final newline
  EXPECT_EQ(parse_exposition("# HELP x h\n# TYPE x gauge\nx{a=\"\\\"\"} 1\n").error, "");
}

}  // namespace
}  // namespace kgpu

