// End to end against the kubelet's own gRPC: the real `kgpu plugin` on the simulated DGX A100,
// with grpc-go (Debian's golang-google-grpc-dev, tests/interop/grpc-go) as the kubelet on every
// socket, for each way a kubelet dials. kgpu's transport (src/rpc) is its own HTTP/2 code, and gRPC
// C++ (the simulators) is not what kubelets run: a transport change that breaks grpc-go, as a strict
// :authority check did for every kubelet before 1.26, fails here. grpc-go only moves bytes; this
// file serializes and checks with the C++ protobuf classes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "deviceplugin/v1beta1/api.pb.h"
#include "dra-health/v1alpha1/api.pb.h"
#include "dra/v1/dra.pb.h"
#include "dra/v1beta1/dra.pb.h"
#include "e2e/grpc_go_peer.h"
#include "e2e/harness.h"
#include "fake-nvml/fake_nvml_control.h"
#include "pluginregistration/v1/registration.pb.h"
#include "podresources/v1/api.pb.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

namespace fs = std::filesystem;
namespace dp = ::v1beta1;
const std::string kGpu = "nvidia.com/gpu";
const std::string kDriver = "gpu.nvidia.com";
const std::string kRegister = "/v1beta1.Registration/Register";
const std::string kList = "/v1.PodResourcesLister/List";

template <typename Message>
std::optional<Message> parse(const std::string& bytes) {
  Message m;
  if (!m.ParseFromString(bytes)) return std::nullopt;
  return m;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// Device ID -> health of one ListAndWatch message.
std::map<std::string, std::string> health_of(const dp::ListAndWatchResponse& list) {
  std::map<std::string, std::string> out;
  for (const auto& d : list.devices()) out[d.id()] = d.health();
  return out;
}

class GrpcGoInterop : public ::testing::TestWithParam<DialStyle> {
 protected:
  void SetUp() override {
    if (grpc_go_peer().empty())
      GTEST_SKIP() << "kgpu-grpc-go was not built (no Go or golang-google-grpc-dev; CI builds it with "
                      "-DKGPU_GRPC_GO_INTEROP=ON)";
    plugin_dir = work.file("dp");
    fs::create_directories(plugin_dir);
    fs::create_directories(work.file("pod-resources"));
  }

  // The kubelet's Registration server, played by grpc-go (its Register answer: an empty message).
  std::unique_ptr<GoServer> start_kubelet() {
    auto server = std::make_unique<GoServer>(plugin_dir + "/kubelet.sock", std::map<std::string, std::string>{},
                                             work.path(), "kubelet");
    EXPECT_TRUE(server->wait_listening(20s)) << server->log();
    return server;
  }

  std::unique_ptr<ChildProcess> start(PluginOptions options) {
    options.plugin_dir = plugin_dir;
    options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
    return start_plugin(options, work.path());
  }

  GoCall call(const std::string& socket, const std::string& method, const google::protobuf::MessageLite& request) {
    return go_call(GetParam(), socket, method, request.SerializeAsString(), work.path());
  }

  std::unique_ptr<GoClient> list_and_watch(size_t count, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    GoClient::Options options;
    options.style = GetParam();
    options.socket = gpu_socket();
    options.method = "/v1beta1.DevicePlugin/ListAndWatch";
    options.request = dp::Empty{}.SerializeAsString();
    options.stream = true;
    options.count = count;
    options.timeout = timeout;
    return std::make_unique<GoClient>(options, work.path());
  }

  std::string gpu_socket() const { return plugin_dir + "/" + socket_name(kGpu); }

  // What to print when an assertion fails: the peer's view and the daemon's.
  static std::string diagnostics(const GoCall& call, const ChildProcess& plugin) {
    return call.describe() + "\nplugin stderr:\n" + plugin.stderr_text();
  }

  TempDir work{"kgpu-go"};
  std::string plugin_dir;
  fake_nvml::Control control{work.file("nvml.control")};
};

// The peer itself: each style sends the :authority its kubelet generation sends (seen by grpc-go's
// server), so what the tests below show about a style holds for those kubelets.
TEST_P(GrpcGoInterop, PeerSendsItsKubeletsAuthority) {
  const std::string socket = work.file("echo.sock");
  GoServer echo(socket, {{"/test.Echo/Call", "pong"}}, work.path(), "echo");
  ASSERT_TRUE(echo.wait_listening(20s)) << echo.log();
  auto answer = go_call(GetParam(), socket, "/test.Echo/Call", "ping", work.path());
  ASSERT_TRUE(answer.ok()) << answer.describe();
  EXPECT_EQ(answer.messages, std::vector<std::string>{"pong"}) << answer.describe();
  auto calls = echo.calls("/test.Echo/Call");
  ASSERT_EQ(calls.size(), 1u) << echo.log();
  EXPECT_EQ(calls[0].request, "ping");
  EXPECT_EQ(calls[0].authority, expected_authority(GetParam(), socket));
}

// Registration (kgpu the client), then every DevicePlugin method as the device manager calls them.
TEST_P(GrpcGoInterop, DevicePluginApi) {
  auto kubelet = start_kubelet();
  PluginOptions options;
  options.extra_args = {"--pass-device-specs"};
  auto plugin = start(options);

  ASSERT_TRUE(kubelet->wait_calls(kRegister, 1, 20s)) << kubelet->log() << "\n" << plugin->stderr_text();
  auto registered = parse<dp::RegisterRequest>(kubelet->calls(kRegister)[0].request);
  ASSERT_TRUE(registered);
  EXPECT_EQ(registered->version(), "v1beta1");
  EXPECT_EQ(registered->endpoint(), socket_name(kGpu));
  EXPECT_EQ(registered->resource_name(), kGpu);
  EXPECT_TRUE(registered->options().get_preferred_allocation_available());
  EXPECT_FALSE(registered->options().pre_start_required());

  auto options_call = call(gpu_socket(), "/v1beta1.DevicePlugin/GetDevicePluginOptions", dp::Empty{});
  ASSERT_TRUE(options_call.ok()) << diagnostics(options_call, *plugin);
  ASSERT_EQ(options_call.messages.size(), 1u) << diagnostics(options_call, *plugin);
  auto plugin_options = parse<dp::DevicePluginOptions>(options_call.messages[0]);
  ASSERT_TRUE(plugin_options);
  EXPECT_TRUE(plugin_options->get_preferred_allocation_available());
  EXPECT_FALSE(plugin_options->pre_start_required());

  // ListAndWatch: the first list, then an XID's health change as the next message, one stream.
  ASSERT_TRUE(wait_until([&] { return contains(plugin->stderr_text(), "health: watching"); }, 20s))
      << plugin->stderr_text();
  auto stream = list_and_watch(2);
  ASSERT_TRUE(stream->wait_messages(1, 20s)) << diagnostics(stream->now(), *plugin);
  auto first = parse<dp::ListAndWatchResponse>(stream->now().messages[0]);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->devices_size(), 8);
  std::vector<std::string> ids;
  for (const auto& d : first->devices()) {
    ids.push_back(d.id());
    EXPECT_EQ(d.id().rfind("GPU-", 0), 0u) << d.id();
    EXPECT_EQ(d.health(), "Healthy") << d.id();
    EXPECT_EQ(d.topology().nodes_size(), 1) << d.id();  // every GPU of the fleet has a NUMA node
  }
  ASSERT_TRUE(control.inject_xid(ids[3], 79));
  ASSERT_TRUE(stream->wait_messages(2, 20s)) << diagnostics(stream->now(), *plugin);
  auto second = parse<dp::ListAndWatchResponse>(stream->now().messages[1]);
  ASSERT_TRUE(second);
  auto health = health_of(*second);
  ASSERT_EQ(health.size(), 8u);
  for (const auto& id : ids) EXPECT_EQ(health[id], id == ids[3] ? "Unhealthy" : "Healthy") << id;
  auto ended = stream->finish();
  EXPECT_EQ(ended.stopped_after, 2u) << diagnostics(ended, *plugin);

  // GetPreferredAllocation over the healthy seven, one of them required.
  dp::PreferredAllocationRequest preferred_request;
  auto* container = preferred_request.add_container_requests();
  for (const auto& id : ids)
    if (id != ids[3]) container->add_available_deviceids(id);
  container->add_must_include_deviceids(ids[5]);
  container->set_allocation_size(4);
  auto preferred_call = call(gpu_socket(), "/v1beta1.DevicePlugin/GetPreferredAllocation", preferred_request);
  ASSERT_TRUE(preferred_call.ok() && preferred_call.messages.size() == 1) << diagnostics(preferred_call, *plugin);
  auto preferred = parse<dp::PreferredAllocationResponse>(preferred_call.messages[0]);
  ASSERT_TRUE(preferred);
  ASSERT_EQ(preferred->container_responses_size(), 1);
  const auto& chosen_ids = preferred->container_responses(0).deviceids();
  std::vector<std::string> chosen(chosen_ids.begin(), chosen_ids.end());
  EXPECT_EQ(std::set<std::string>(chosen.begin(), chosen.end()).size(), 4u) << join(chosen);
  EXPECT_EQ(std::count(chosen.begin(), chosen.end(), ids[5]), 1) << join(chosen);
  EXPECT_EQ(std::count(chosen.begin(), chosen.end(), ids[3]), 0) << join(chosen);

  // Allocate what was preferred: the IDs in the env, a device node per GPU and the control nodes.
  dp::AllocateRequest allocate_request;
  auto* allocate_container = allocate_request.add_container_requests();
  for (const auto& id : chosen) allocate_container->add_devices_ids(id);
  auto allocate_call = call(gpu_socket(), "/v1beta1.DevicePlugin/Allocate", allocate_request);
  ASSERT_TRUE(allocate_call.ok() && allocate_call.messages.size() == 1) << diagnostics(allocate_call, *plugin);
  auto allocated = parse<dp::AllocateResponse>(allocate_call.messages[0]);
  ASSERT_TRUE(allocated);
  ASSERT_EQ(allocated->container_responses_size(), 1);
  const auto& edits = allocated->container_responses(0);
  ASSERT_EQ(edits.envs().count("NVIDIA_VISIBLE_DEVICES"), 1u);
  EXPECT_EQ(edits.envs().at("NVIDIA_VISIBLE_DEVICES"), join(chosen));
  std::set<std::string> gpu_nodes, paths;
  for (const auto& spec : edits.devices()) {
    paths.insert(spec.container_path());
    const auto& p = spec.container_path();
    auto digit = [](unsigned char ch) { return std::isdigit(ch) != 0; };
    if (p.rfind("/dev/nvidia", 0) == 0 && p.size() > 11 && std::all_of(p.begin() + 11, p.end(), digit))
      gpu_nodes.insert(p);
    EXPECT_TRUE(spec.host_path().ends_with(p)) << spec.host_path() << " for " << p;
  }
  EXPECT_EQ(gpu_nodes.size(), 4u) << "device specs: " << join({paths.begin(), paths.end()});
  EXPECT_EQ(paths.count("/dev/nvidiactl"), 1u);

  dp::PreStartContainerRequest pre_start;
  for (const auto& id : chosen) pre_start.add_devices_ids(id);
  auto pre_start_call = call(gpu_socket(), "/v1beta1.DevicePlugin/PreStartContainer", pre_start);
  ASSERT_TRUE(pre_start_call.ok() && pre_start_call.messages.size() == 1) << diagnostics(pre_start_call, *plugin);
  EXPECT_TRUE(parse<dp::PreStartContainerResponse>(pre_start_call.messages[0]));

  // An ID the plugin never advertised: an error status that grpc-go reads as such.
  dp::AllocateRequest bad;
  bad.add_container_requests()->add_devices_ids("GPU-does-not-exist");
  auto refused = call(gpu_socket(), "/v1beta1.DevicePlugin/Allocate", bad);
  EXPECT_EQ(refused.code, 3) << diagnostics(refused, *plugin);  // INVALID_ARGUMENT
  EXPECT_TRUE(contains(refused.status_message, "GPU-does-not-exist")) << diagnostics(refused, *plugin);
  EXPECT_TRUE(plugin->running());
}

// The DRA node service's messages in one API version (v1 and v1beta1 have the same ones).
template <typename Prepare, typename PrepareResponse, typename Unprepare, typename UnprepareResponse>
struct DraApi {
  using NodePrepareResourcesRequest = Prepare;
  using NodePrepareResourcesResponse = PrepareResponse;
  using NodeUnprepareResourcesRequest = Unprepare;
  using NodeUnprepareResourcesResponse = UnprepareResponse;
};
namespace dra_v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace dra_v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
using DraV1 = DraApi<dra_v1::NodePrepareResourcesRequest, dra_v1::NodePrepareResourcesResponse,
                     dra_v1::NodeUnprepareResourcesRequest, dra_v1::NodeUnprepareResourcesResponse>;
using DraV1beta1 = DraApi<dra_v1beta1::NodePrepareResourcesRequest, dra_v1beta1::NodePrepareResourcesResponse,
                          dra_v1beta1::NodeUnprepareResourcesRequest, dra_v1beta1::NodeUnprepareResourcesResponse>;

class GrpcGoDra : public GrpcGoInterop {
 protected:
  static nlohmann::json claim(const std::string& uid, const std::string& device) {
    nlohmann::json result = {{"request", "gpu"}, {"driver", kDriver}, {"pool", "node-1"}, {"device", device}};
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", {{"name", "train-" + uid}, {"namespace", "team-a"}, {"uid", uid}}},
            {"spec", {{"devices", {{"requests", nlohmann::json::array()}}}}},
            {"status", {{"allocation", {{"devices", {{"results", {result}}, {"config", nlohmann::json::array()}}}}}}}};
  }
  static std::vector<std::string> published(const FakeApiServer& api) {
    std::vector<std::string> names;
    for (const auto& [name, slice] : api.slices())
      if (slice["spec"].value("driver", "") == kDriver)
        for (const auto& d : slice["spec"].value("devices", nlohmann::json::array())) names.push_back(d.value("name", ""));
    std::sort(names.begin(), names.end());
    return names;
  }
  size_t spec_files_naming(const std::string& uid) const {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cdi_dir, ec)) n += contains(e.path().filename().string(), uid);
    return n;
  }

  // One claim prepared and unprepared through the DRA service of `version` (`Api`: its messages).
  template <typename Api>
  void prepare_and_unprepare(FakeApiServer& api, const std::string& endpoint, const std::string& version,
                             const std::string& device, const ChildProcess& plugin) {
    SCOPED_TRACE("DRA " + version);
    const std::string uid = "uid-" + version;
    api.put_resource_claim(claim(uid, device));
    const std::string base = "/k8s.io.kubelet.pkg.apis.dra." + version + ".DRAPlugin/";

    typename Api::NodePrepareResourcesRequest prepare;
    auto* c = prepare.add_claims();
    c->set_namespace_("team-a");
    c->set_name("train-" + uid);
    c->set_uid(uid);
    auto prepared_call = call(endpoint, base + "NodePrepareResources", prepare);
    ASSERT_TRUE(prepared_call.ok() && prepared_call.messages.size() == 1) << diagnostics(prepared_call, plugin);
    auto prepared = parse<typename Api::NodePrepareResourcesResponse>(prepared_call.messages[0]);
    ASSERT_TRUE(prepared);
    ASSERT_EQ(prepared->claims().count(uid), 1u);
    const auto& answer = prepared->claims().at(uid);
    ASSERT_EQ(answer.error(), "") << plugin.stderr_text();
    ASSERT_EQ(answer.devices_size(), 1);
    EXPECT_EQ(answer.devices(0).device_name(), device);
    EXPECT_EQ(answer.devices(0).pool_name(), "node-1");
    ASSERT_GE(answer.devices(0).cdi_device_ids_size(), 1);
    EXPECT_TRUE(contains(answer.devices(0).cdi_device_ids(0), "=")) << answer.devices(0).cdi_device_ids(0);
    EXPECT_EQ(spec_files_naming(uid), 1u);

    typename Api::NodeUnprepareResourcesRequest unprepare;
    *unprepare.add_claims() = *c;
    auto unprepared_call = call(endpoint, base + "NodeUnprepareResources", unprepare);
    ASSERT_TRUE(unprepared_call.ok() && unprepared_call.messages.size() == 1) << diagnostics(unprepared_call, plugin);
    auto unprepared = parse<typename Api::NodeUnprepareResourcesResponse>(unprepared_call.messages[0]);
    ASSERT_TRUE(unprepared);
    ASSERT_EQ(unprepared->claims().count(uid), 1u);
    EXPECT_EQ(unprepared->claims().at(uid).error(), "");
    EXPECT_EQ(spec_files_naming(uid), 0u);
  }

  std::string cdi_dir = work.file("cdi");
};

// The plugin watcher's side (GetInfo, NotifyRegistrationStatus) and the DRA node service, both versions.
TEST_P(GrpcGoDra, RegistrationAndPrepareInV1AndV1beta1) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto kubelet = start_kubelet();
  PluginOptions options;
  options.env = {{"NODE_NAME", "node-1"}, {"KGPU_KUBE_API", api.url()}};
  options.extra_args = {"--dra", "--dra-gpus", "0,1,2,3", "--cdi-spec-dir", cdi_dir};
  auto plugin = start(options);

  const std::string registration = work.file("plugins_registry/" + kDriver + "-reg.sock");
  ASSERT_TRUE(wait_until([&] { return path_exists(registration); }, 20s)) << plugin->stderr_text();
  auto info_call = call(registration, "/pluginregistration.Registration/GetInfo", pluginregistration::InfoRequest{});
  ASSERT_TRUE(info_call.ok() && info_call.messages.size() == 1) << diagnostics(info_call, *plugin);
  auto info = parse<pluginregistration::PluginInfo>(info_call.messages[0]);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->type(), "DRAPlugin");
  EXPECT_EQ(info->name(), kDriver);
  EXPECT_EQ(info->endpoint(), work.file("plugins/" + kDriver + "/dra.sock"));
  std::vector<std::string> versions(info->supported_versions().begin(), info->supported_versions().end());
  // The DRA services first (kubelets take the first they know), then the health service (KEP-4680).
  EXPECT_EQ(versions, (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"}));

  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  auto notify_call = call(registration, "/pluginregistration.Registration/NotifyRegistrationStatus", status);
  ASSERT_TRUE(notify_call.ok() && notify_call.messages.size() == 1) << diagnostics(notify_call, *plugin);
  EXPECT_TRUE(parse<pluginregistration::RegistrationStatusResponse>(notify_call.messages[0]));
  EXPECT_TRUE(wait_until([&] { return contains(plugin->stderr_text(), "DRA: registered with the kubelet as " + kDriver); },
                         20s))
      << plugin->stderr_text();

  ASSERT_TRUE(wait_until([&] { return published(api).size() == 4; }, 20s)) << plugin->stderr_text();
  const auto devices = published(api);
  prepare_and_unprepare<DraV1>(api, info->endpoint(), "v1", devices[0], *plugin);
  prepare_and_unprepare<DraV1beta1>(api, info->endpoint(), "v1beta1", devices[1], *plugin);

  // The health stream on the same socket, as a kubelet with ResourceHealthStatus opens it: the first
  // message is the whole report, every published device Healthy in the node's pool.
  GoClient::Options watch;
  watch.style = GetParam();
  watch.socket = info->endpoint();
  watch.method = "/v1alpha1.DRAResourceHealth/NodeWatchResources";
  watch.request = ::v1alpha1::NodeWatchResourcesRequest{}.SerializeAsString();
  watch.stream = true;
  watch.count = 1;
  GoClient health(watch, work.path());
  auto health_call = health.finish();
  ASSERT_TRUE(health_call.ok() && health_call.messages.size() == 1) << diagnostics(health_call, *plugin);
  auto report = parse<::v1alpha1::NodeWatchResourcesResponse>(health_call.messages[0]);
  ASSERT_TRUE(report);
  std::vector<std::string> reported;
  for (const auto& d : report->devices()) {
    EXPECT_EQ(d.device().pool_name(), "node-1");
    EXPECT_EQ(d.health(), ::v1alpha1::HEALTHY) << d.device().device_name() << ": " << d.message();
    EXPECT_GT(d.last_updated_time(), 0);
    reported.push_back(d.device().device_name());
  }
  std::sort(reported.begin(), reported.end());
  EXPECT_EQ(reported, devices);
}

class GrpcGoPodResources : public GrpcGoInterop {};

// PodResources List (kgpu the client, grpc-go the kubelet): a config switch renames every GPU's IDs
// while the answer says a pod holds one; that GPU's new IDs are advertised Unhealthy until the
// answer no longer names the pod. What kgpu advertises is read on a grpc-go ListAndWatch stream.
TEST_P(GrpcGoPodResources, HeldGpuFollowsTheListAnswer) {
  auto kubelet = start_kubelet();
  v1::ListPodResourcesResponse no_pods;
  GoServer pod_resources(work.file("pod-resources/kubelet.sock"), {{kList, no_pods.SerializeAsString()}}, work.path(),
                         "pod-resources");
  ASSERT_TRUE(pod_resources.wait_listening(20s)) << pod_resources.log();
  const std::string config = work.write("config/config.yaml", "version: v1\n");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(kubelet->wait_calls(kRegister, 1, 20s)) << kubelet->log() << "\n" << plugin->stderr_text();

  auto stream = list_and_watch(0, std::chrono::seconds(90));
  ASSERT_TRUE(stream->wait_messages(1, 20s)) << diagnostics(stream->now(), *plugin);
  auto first = parse<dp::ListAndWatchResponse>(stream->now().messages[0]);
  ASSERT_TRUE(first && first->devices_size() == 8) << diagnostics(stream->now(), *plugin);
  const std::string held = first->devices(2).id();

  v1::ListPodResourcesResponse trainer;
  auto* pod = trainer.add_pod_resources();
  pod->set_name("trainer");
  pod->set_namespace_("default");
  auto* container = pod->add_containers();
  container->set_name("main");
  auto* devices = container->add_devices();
  devices->set_resource_name(kGpu);
  devices->add_device_ids(held);
  pod_resources.answer(kList, trainer.SerializeAsString());

  // Time-slicing: every GPU becomes 4 new IDs (ConfigMap-style replace).
  const std::string tmp = config + ".new";
  std::ofstream(tmp) << "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n";
  fs::rename(tmp, config);

  // The first list of 32 replicas already holds the pod's GPU back.
  auto first_with = [&](size_t n) -> std::optional<dp::ListAndWatchResponse> {
    for (const auto& bytes : stream->now().messages)
      if (auto list = parse<dp::ListAndWatchResponse>(bytes); list && static_cast<size_t>(list->devices_size()) == n)
        return list;
    return std::nullopt;
  };
  ASSERT_TRUE(wait_until([&] { return first_with(32).has_value(); }, 20s)) << diagnostics(stream->now(), *plugin);
  EXPECT_GE(pod_resources.calls(kList).size(), 1u) << pod_resources.log();
  for (const auto& [id, health] : health_of(*first_with(32)))
    EXPECT_EQ(health, id.rfind(held + "::", 0) == 0 ? "Unhealthy" : "Healthy") << id;
  EXPECT_TRUE(contains(plugin->stderr_text(), "still held by pod default/trainer as nvidia.com/gpu " + held))
      << plugin->stderr_text();

  // The kubelet's answer stops naming the pod: the GPU comes back on the same stream.
  pod_resources.answer(kList, no_pods.SerializeAsString());
  auto all_healthy = [&] {
    auto messages = stream->now().messages;
    auto last = messages.empty() ? std::nullopt : parse<dp::ListAndWatchResponse>(messages.back());
    if (!last || last->devices_size() != 32) return false;
    for (const auto& [id, health] : health_of(*last))
      if (health != "Healthy") return false;
    return true;
  };
  EXPECT_TRUE(wait_until(all_healthy, 20s)) << diagnostics(stream->now(), *plugin);
  EXPECT_TRUE(contains(plugin->stderr_text(), "released: pod default/trainer")) << plugin->stderr_text();
  EXPECT_EQ(kubelet->calls(kRegister).size(), 1u) << "the switch kept the endpoint: no second registration";
}

std::string style_test_name(const ::testing::TestParamInfo<DialStyle>& info) {
  switch (info.param) {
    case DialStyle::Old: return "kubelet_1_19_to_1_25_socket_path_authority";
    case DialStyle::New: return "kubelet_1_26_on_localhost_authority";
    case DialStyle::Unix: return "unix_target";
  }
  return "unknown";
}

const auto kStyles = ::testing::Values(DialStyle::Old, DialStyle::New, DialStyle::Unix);
INSTANTIATE_TEST_SUITE_P(DialStyles, GrpcGoInterop, kStyles, style_test_name);
INSTANTIATE_TEST_SUITE_P(DialStyles, GrpcGoDra, kStyles, style_test_name);
INSTANTIATE_TEST_SUITE_P(DialStyles, GrpcGoPodResources, kStyles, style_test_name);

}  // namespace
}  // namespace kgpu::test
