// The DRA kubelet plugin over real unix sockets, called by gRPC C++ clients as the kubelet calls it:
// registration (GetInfo, NotifyRegistrationStatus) and NodePrepareResources / NodeUnprepareResources
// in both API versions.
#include "dra/kubelet_plugin.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "dra/v1/dra.grpc.pb.h"
#include "dra/v1beta1/dra.grpc.pb.h"
#include "pluginregistration/v1/registration.grpc.pb.h"
#include "rpc/server.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"

namespace kgpu::dra {
namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

class KubeletPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/kgpu-dra-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    auto transport = rpc::Server::start();
    ASSERT_TRUE(transport);
    transport_ = std::move(*transport);
    ClaimHandler handler;
    handler.prepare = [this](const ClaimRef& c) -> Result<std::vector<PreparedDevice>> {
      std::unique_lock lock(mu_);
      prepared_.push_back(c);
      ++in_prepare_;
      gate_.notify_all();
      // while a test holds calls, or claims of this name
      gate_.wait_for(lock, std::chrono::seconds(10), [&] { return !hold_ && !held_names_.count(c.name); });
      if (c.name == "broken") return Error::not_found("ResourceClaim default/broken has no allocation");
      PreparedDevice first{{"gpu"}, "node-1", "gpu-0", {"k8s.gpu.nvidia.com/claim=" + c.uid + "-gpu-0"}, {}, false, "GPU-0", true};
      PreparedDevice second{{}, "node-1", "gpu-1", {}, std::string("share-1"), false, "GPU-1", true};
      return std::vector<PreparedDevice>{first, second};
    };
    handler.unprepare = [this](const ClaimRef& c) -> Status {
      std::unique_lock lock(mu_);
      unprepared_.push_back(c);
      gate_.notify_all();
      gate_.wait_for(lock, std::chrono::seconds(10), [&] { return !held_names_.count(c.name); });
      return ok_status();
    };
    handler_ = handler;
    KubeletPluginOptions options{"gpu.nvidia.com", root_, [this] { registrations_++; }};
    restart_plugin(options);
  }
  void restart_plugin(const KubeletPluginOptions& options) {
    plugin_.reset();
    plugin_ = std::make_unique<KubeletPlugin>(options, handler_, transport_);
    auto st = plugin_->start();
    ASSERT_TRUE(st) << st.error().message;
  }
  void release(const std::string& name) {
    std::lock_guard lock(mu_);
    held_names_.erase(name);
    gate_.notify_all();
  }
  // Waits (at most 10 s) until the handler has seen this many prepares / unprepares of `uid`.
  bool wait_handled(const std::string& uid, size_t prepares, size_t unprepares = 0) {
    auto count = [&](const std::vector<ClaimRef>& v) {
      return static_cast<size_t>(std::count_if(v.begin(), v.end(), [&](const ClaimRef& c) { return c.uid == uid; }));
    };
    std::unique_lock lock(mu_);
    return gate_.wait_for(lock, std::chrono::seconds(10),
                          [&] { return count(prepared_) >= prepares && count(unprepared_) >= unprepares; });
  }
  size_t prepares_of(const std::string& uid) {
    std::lock_guard lock(mu_);
    return static_cast<size_t>(
        std::count_if(prepared_.begin(), prepared_.end(), [&](const ClaimRef& c) { return c.uid == uid; }));
  }
  void TearDown() override {
    plugin_.reset();
    std::filesystem::remove_all(root_);
  }
  std::shared_ptr<grpc::Channel> channel(const std::string& path) {
    return grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
  }
  template <typename Request>
  static void add_claim(Request& req, const std::string& uid, const std::string& name) {
    auto* c = req.add_claims();
    c->set_uid(uid);
    c->set_namespace_("default");
    c->set_name(name);
  }

  std::string root_;
  ClaimHandler handler_;
  std::set<std::string> held_names_;  // claims of these names wait in the handler until released
  std::shared_ptr<rpc::Server> transport_;
  std::unique_ptr<KubeletPlugin> plugin_;
  std::mutex mu_;
  std::condition_variable gate_;
  bool hold_ = false;   // prepare calls wait in the handler while set
  int in_prepare_ = 0;  // prepare calls that reached the handler
  std::vector<ClaimRef> prepared_, unprepared_;
  std::atomic<int> registrations_{0};
};

// Threads of this process with this name (/proc/self/task/*/comm).
int threads_named(const std::string& name) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++n;
  }
  return n;
}

// Prepare and unprepare run on a worker thread that exists only while a call is queued or running
// (issue 32: an idle daemon keeps no thread for them); calls are still answered one after another.
TEST_F(KubeletPluginTest, AWorkerThreadRunsOnlyWhileACallIsAnswered) {
  EXPECT_EQ(threads_named("kgpu-dra"), 0);  // serving, no call yet: no worker
  {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  auto stub = v1::DRAPlugin::NewStub(channel(plugin_->dra_socket()));
  grpc::Status first_status;
  v1::NodePrepareResourcesResponse first;
  std::thread call([&] {
    v1::NodePrepareResourcesRequest req;
    add_claim(req, "uid-1", "train");
    grpc::ClientContext ctx;
    first_status = stub->NodePrepareResources(&ctx, req, &first);
  });
  {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(gate_.wait_for(lock, std::chrono::seconds(10), [&] { return in_prepare_ == 1; }));
  }
  EXPECT_EQ(threads_named("kgpu-dra"), 1);  // the call in the handler runs on the worker
  {
    std::lock_guard lock(mu_);
    hold_ = false;
  }
  gate_.notify_all();
  call.join();
  ASSERT_TRUE(first_status.ok()) << first_status.error_message();
  EXPECT_EQ(first.claims().at("uid-1").devices_size(), 2);
  EXPECT_TRUE(test::eventually([] { return threads_named("kgpu-dra") == 0; }, std::chrono::seconds(10)));

  // The next call starts a worker again.
  v1::NodeUnprepareResourcesRequest ureq;
  add_claim(ureq, "uid-1", "train");
  grpc::ClientContext uctx;
  v1::NodeUnprepareResourcesResponse uresp;
  ASSERT_TRUE(stub->NodeUnprepareResources(&uctx, ureq, &uresp).ok());
  EXPECT_TRUE(uresp.claims().at("uid-1").error().empty());
  std::lock_guard lock(mu_);
  ASSERT_EQ(unprepared_.size(), 1u);
}

TEST_F(KubeletPluginTest, SocketsAreWhereTheKubeletLooksWithModeSixHundred) {
  EXPECT_EQ(plugin_->registration_socket(), root_ + "/plugins_registry/gpu.nvidia.com-reg.sock");
  EXPECT_EQ(plugin_->dra_socket(), root_ + "/plugins/gpu.nvidia.com/dra.sock");
  for (const auto& path : {plugin_->registration_socket(), plugin_->dra_socket()}) {
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  // Nothing half-made is left for the plugin watcher.
  for (const auto& e : std::filesystem::directory_iterator(root_ + "/plugins_registry"))
    EXPECT_NE(e.path().filename().string()[0], '.');
}

TEST_F(KubeletPluginTest, GetInfoAnnouncesADraPluginWithBothServiceVersions) {
  auto stub = pluginregistration::Registration::NewStub(channel(plugin_->registration_socket()));
  grpc::ClientContext ctx;
  pluginregistration::PluginInfo info;
  auto st = stub->GetInfo(&ctx, pluginregistration::InfoRequest{}, &info);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.nvidia.com");
  EXPECT_EQ(info.endpoint(), plugin_->dra_socket());
  ASSERT_EQ(info.supported_versions_size(), 2);
  EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
  EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");

  EXPECT_FALSE(plugin_->registered());
  grpc::ClientContext ctx2;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse resp;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&ctx2, status, &resp).ok());
  EXPECT_TRUE(plugin_->registered());
  EXPECT_EQ(registrations_.load(), 1);  // the daemon re-publishes its slices then
  grpc::ClientContext ctx3;
  status.set_plugin_registered(false);
  status.set_error("driver already registered");
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&ctx3, status, &resp).ok());
  EXPECT_FALSE(plugin_->registered());
  EXPECT_EQ(plugin_->registration_error(), "driver already registered");
}

TEST_F(KubeletPluginTest, PrepareAnswersEveryClaimInV1) {
  auto stub = v1::DRAPlugin::NewStub(channel(plugin_->dra_socket()));
  v1::NodePrepareResourcesRequest req;
  add_claim(req, "uid-1", "train");
  add_claim(req, "uid-2", "broken");
  req.add_claims()->set_uid("uid-3");  // no namespace, no name
  grpc::ClientContext ctx;
  v1::NodePrepareResourcesResponse resp;
  auto st = stub->NodePrepareResources(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.claims().size(), 3u);
  const auto& ok = resp.claims().at("uid-1");
  EXPECT_TRUE(ok.error().empty());
  ASSERT_EQ(ok.devices_size(), 2);
  EXPECT_EQ(ok.devices(0).pool_name(), "node-1");
  EXPECT_EQ(ok.devices(0).device_name(), "gpu-0");
  ASSERT_EQ(ok.devices(0).request_names_size(), 1);
  EXPECT_EQ(ok.devices(0).request_names(0), "gpu");
  ASSERT_EQ(ok.devices(0).cdi_device_ids_size(), 1);
  EXPECT_EQ(ok.devices(0).cdi_device_ids(0), "k8s.gpu.nvidia.com/claim=uid-1-gpu-0");
  EXPECT_EQ(ok.devices(1).request_names_size(), 0);
  EXPECT_NE(resp.claims().at("uid-2").error().find("has no allocation"), std::string::npos);
  EXPECT_NE(resp.claims().at("uid-3").error().find("namespace"), std::string::npos);
  std::lock_guard lock(mu_);
  ASSERT_EQ(prepared_.size(), 2u);  // the malformed claim never reached the handler
  // Claims of one call run in parallel: in no particular order.
  EXPECT_NE(std::find(prepared_.begin(), prepared_.end(), ClaimRef{"uid-1", "default", "train"}), prepared_.end());
  EXPECT_EQ(ok.devices(1).share_id(), "share-1");  // v1 carries share IDs
}

TEST_F(KubeletPluginTest, PrepareAndUnprepareWorkInV1beta1) {
  auto stub = v1beta1::DRAPlugin::NewStub(channel(plugin_->dra_socket()));
  v1beta1::NodePrepareResourcesRequest req;
  add_claim(req, "uid-9", "infer");
  grpc::ClientContext ctx;
  v1beta1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(stub->NodePrepareResources(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.claims().at("uid-9").devices_size(), 2);
  v1beta1::NodeUnprepareResourcesRequest ureq;
  add_claim(ureq, "uid-9", "infer");
  grpc::ClientContext uctx;
  v1beta1::NodeUnprepareResourcesResponse uresp;
  ASSERT_TRUE(stub->NodeUnprepareResources(&uctx, ureq, &uresp).ok());
  ASSERT_EQ(uresp.claims().size(), 1u);
  EXPECT_TRUE(uresp.claims().at("uid-9").error().empty());
  std::lock_guard lock(mu_);
  ASSERT_EQ(unprepared_.size(), 1u);
  EXPECT_EQ(unprepared_[0].uid, "uid-9");
}

// The kubelet simulator's DRA side registers the plugin as kubelets of each release would and
// prepares through the version it picked.
TEST_F(KubeletPluginTest, KubeletsOfEachReleasePickTheirVersionAndPrepare) {
  for (int minor : {33, 34}) {
    sim::DraKubeletSim kubelet(root_, minor);
    auto plugin = kubelet.wait_for_plugin(std::chrono::seconds(5));
    ASSERT_TRUE(plugin) << plugin.error().message;
    EXPECT_EQ(plugin->driver, "gpu.nvidia.com");
    EXPECT_EQ(plugin->service, minor >= 34 ? "v1.DRAPlugin" : "v1beta1.DRAPlugin");
    EXPECT_TRUE(plugin_->registered());
    auto prepared = kubelet.prepare("gpu.nvidia.com", {{"default", "train", "uid-" + std::to_string(minor)}});
    ASSERT_TRUE(prepared) << prepared.error().message;
    const auto& claim = prepared->at("uid-" + std::to_string(minor));
    EXPECT_TRUE(claim.error.empty());
    ASSERT_EQ(claim.devices.size(), 2u);
    EXPECT_EQ(claim.devices[0].device, "gpu-0");
    auto unprepared = kubelet.unprepare("gpu.nvidia.com", {{"default", "train", "uid-" + std::to_string(minor)}});
    ASSERT_TRUE(unprepared);
    EXPECT_EQ(unprepared->at("uid-" + std::to_string(minor)), "");
  }
}

// Issue 28, item 6: a claim whose prepare hangs (an API read, an MPS wait, nvidia-smi) delays no
// other claim's prepare or unprepare.
TEST_F(KubeletPluginTest, AHangingClaimDelaysNoOtherClaim) {
  held_names_ = {"hang"};
  auto stub = v1::DRAPlugin::NewStub(channel(plugin_->dra_socket()));
  grpc::Status hung_status;
  v1::NodePrepareResourcesResponse hung;
  std::thread call([&] {
    v1::NodePrepareResourcesRequest req;
    add_claim(req, "uid-h", "hang");
    grpc::ClientContext ctx;
    hung_status = stub->NodePrepareResources(&ctx, req, &hung);
  });
  ASSERT_TRUE(wait_handled("uid-h", 1));

  v1::NodeUnprepareResourcesRequest ureq;
  add_claim(ureq, "uid-2", "train");
  grpc::ClientContext uctx;
  uctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::NodeUnprepareResourcesResponse uresp;
  auto st = stub->NodeUnprepareResources(&uctx, ureq, &uresp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(uresp.claims().at("uid-2").error().empty());

  v1::NodePrepareResourcesRequest preq;
  add_claim(preq, "uid-3", "train");
  add_claim(preq, "uid-4", "train");
  grpc::ClientContext pctx;
  pctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::NodePrepareResourcesResponse presp;
  st = stub->NodePrepareResources(&pctx, preq, &presp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(presp.claims().at("uid-3").devices_size(), 2);
  EXPECT_EQ(presp.claims().at("uid-4").devices_size(), 2);

  release("hang");
  call.join();
  ASSERT_TRUE(hung_status.ok()) << hung_status.error_message();
  EXPECT_EQ(hung.claims().at("uid-h").devices_size(), 2);
}

// A call that the kubelet gave up on (its deadline passed) while its claim waited behind another
// call for the same claim is dropped: the handler never sees it.
TEST_F(KubeletPluginTest, AClaimWhoseCallerHasGoneIsNotHandled) {
  held_names_ = {"hang"};
  auto stub = v1::DRAPlugin::NewStub(channel(plugin_->dra_socket()));
  grpc::Status first_status;
  std::thread call([&] {
    v1::NodePrepareResourcesRequest req;
    add_claim(req, "uid-h", "hang");
    grpc::ClientContext ctx;
    v1::NodePrepareResourcesResponse resp;
    first_status = stub->NodePrepareResources(&ctx, req, &resp);
  });
  ASSERT_TRUE(wait_handled("uid-h", 1));

  v1::NodePrepareResourcesRequest again;
  add_claim(again, "uid-h", "hang");
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  v1::NodePrepareResourcesResponse resp;
  EXPECT_EQ(stub->NodePrepareResources(&ctx, again, &resp).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // A later call on the same connection: by its answer the server has read the first one's reset
  // (or answered its grpc-timeout itself).
  v1::NodePrepareResourcesRequest other;
  add_claim(other, "uid-o", "train");
  grpc::ClientContext octx;
  v1::NodePrepareResourcesResponse oresp;
  ASSERT_TRUE(stub->NodePrepareResources(&octx, other, &oresp).ok());

  release("hang");
  call.join();
  ASSERT_TRUE(first_status.ok()) << first_status.error_message();
  EXPECT_TRUE(test::eventually([] { return threads_named("kgpu-dra") == 0; }, std::chrono::seconds(10)));
  EXPECT_EQ(prepares_of("uid-h"), 1u);  // the abandoned call never reached the handler
}

// A claim that cannot start within its call's budget is answered with its own error (the kubelet
// calls again); the call's other claims are answered as usual.
TEST_F(KubeletPluginTest, AClaimThatCannotStartWithinTheBudgetGetsAnError) {
  KubeletPluginOptions options{"gpu.nvidia.com", root_, {}};
  options.call_budget = std::chrono::milliseconds(100);
  restart_plugin(options);
  held_names_ = {"hang"};
  auto stub = v1::DRAPlugin::NewStub(channel(plugin_->dra_socket()));
  std::thread call([&] {
    v1::NodeUnprepareResourcesRequest req;
    add_claim(req, "uid-h", "hang");
    grpc::ClientContext ctx;
    v1::NodeUnprepareResourcesResponse resp;
    ASSERT_TRUE(stub->NodeUnprepareResources(&ctx, req, &resp).ok());
  });
  ASSERT_TRUE(wait_handled("uid-h", 0, 1));

  v1::NodePrepareResourcesResponse resp;
  grpc::Status status;
  std::thread second([&] {
    v1::NodePrepareResourcesRequest req;
    add_claim(req, "uid-h", "train");  // waits behind the hanging unprepare of the same claim
    add_claim(req, "uid-2", "train");
    grpc::ClientContext ctx;
    status = stub->NodePrepareResources(&ctx, req, &resp);
  });
  ASSERT_TRUE(wait_handled("uid-2", 1));  // the second call has arrived; its budget runs out 100 ms later
  {
    std::unique_lock lock(mu_);  // what is tested is a budget running out: wait for the clock
    gate_.wait_for(lock, std::chrono::milliseconds(150), [] { return false; });
  }
  release("hang");
  call.join();
  second.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(resp.claims().at("uid-h").error().find("budget"), std::string::npos) << resp.claims().at("uid-h").error();
  EXPECT_EQ(resp.claims().at("uid-h").devices_size(), 0);
  EXPECT_TRUE(resp.claims().at("uid-2").error().empty());
  EXPECT_EQ(resp.claims().at("uid-2").devices_size(), 2);
  EXPECT_EQ(prepares_of("uid-h"), 0u);
}

TEST_F(KubeletPluginTest, StopRemovesBothSockets) {
  std::string reg = plugin_->registration_socket(), dra = plugin_->dra_socket();
  plugin_->stop();
  EXPECT_FALSE(std::filesystem::exists(reg));
  EXPECT_FALSE(std::filesystem::exists(dra));
}

}  // namespace
}  // namespace kgpu::dra
