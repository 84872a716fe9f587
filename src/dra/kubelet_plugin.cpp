#include "dra/kubelet_plugin.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/thread_name.h"
#include "dra/v1/dra.pb.h"
#include "pluginregistration/v1/registration.pb.h"
#include "rpc/server.h"

namespace kgpu::dra {

namespace fs = std::filesystem;
namespace wire = k8s::io::kubelet::pkg::apis::dra::v1;

namespace {

// Binds a socket under a dot-name (the kubelet's plugin watcher ignores those), makes it 0600 and
// only then renames it into place: the watcher never sees a half-made socket.
Result<UniqueFd> listen_in_place(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return Error::unavailable("cannot create " + fs::path(path).parent_path().string() + ": " + ec.message());
  std::string staging = (fs::path(path).parent_path() / ("." + fs::path(path).filename().string() + ".new")).string();
  ::unlink(staging.c_str());
  auto fd = rpc::listen_unix(staging);
  if (!fd) return fd.error();
  if (::chmod(staging.c_str(), 0600) != 0 || ::rename(staging.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(staging.c_str());
    return Error::unavailable("cannot put the socket in place at " + path + ": " + why);
  }
  return fd;
}

template <typename Message>
bool parse(std::string_view bytes, Message& out) {
  return out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

ClaimRef claim_ref(const wire::Claim& c) { return {c.uid(), c.namespace_(), c.name()}; }

// Checks what the kubelet must send for every claim; the error names the field.
std::string missing_field(const wire::Claim& c) {
  if (c.uid().empty()) return "claim without a uid";
  if (c.namespace_().empty()) return "claim " + c.uid() + " without a namespace";
  if (c.name().empty()) return "claim " + c.uid() + " without a name";
  return {};
}

void fill(wire::NodePrepareResourceResponse& out, const std::vector<PreparedDevice>& prepared, bool share_ids) {
  for (const auto& d : prepared) {
    auto* dev = out.add_devices();
    for (const auto& r : d.requests) dev->add_request_names(r);
    dev->set_pool_name(d.pool);
    dev->set_device_name(d.device);
    for (const auto& id : d.cdi_device_ids) dev->add_cdi_device_ids(id);
    if (share_ids && d.share_id) dev->set_share_id(*d.share_id);
  }
}

// One claim task per well-formed claim of the request, each writing its own entry of `resp` (made
// here, before any task runs, so the map is never changed while they run; two entries of one UID
// are one entry, written by tasks that never run at once). `done` answers the call.
// `share_ids`: v1 carries Device.share_id; v1beta1 has no such field.
ClaimCalls::Call prepare_call(const ClaimHandler& handler, const wire::NodePrepareResourcesRequest& req,
                              std::shared_ptr<wire::NodePrepareResourcesResponse> resp, bool share_ids) {
  ClaimCalls::Call call;
  for (const auto& claim : req.claims()) {
    auto* out = &(*resp->mutable_claims())[claim.uid()];
    if (auto problem = missing_field(claim); !problem.empty()) {
      out->set_error(problem);
      continue;
    }
    ClaimRef ref = claim_ref(claim);
    auto run = [&handler, out, ref, share_ids] {
      out->Clear();
      auto prepared = handler.prepare(ref);
      if (!prepared) {
        spdlog::warn("DRA: preparing claim {}/{} ({}) failed: {}", ref.ns, ref.name, ref.uid, prepared.error().message);
        out->set_error(prepared.error().message);
        return;
      }
      fill(*out, *prepared, share_ids);
      spdlog::info("DRA: prepared claim {}/{} ({}): {} device(s)", ref.ns, ref.name, ref.uid, prepared->size());
    };
    auto skip = [out, ref](Skipped why) {
      out->Clear();
      out->set_error(describe(why));
      spdlog::warn("DRA: claim {}/{} ({}) not prepared: {}", ref.ns, ref.name, ref.uid, describe(why));
    };
    // A claim already prepared is answered from the record: no API round trip (claim_calls.h).
    const Lane lane = handler.prepared && handler.prepared(ref) ? Lane::Local : Lane::Api;
    call.tasks.push_back({ref.uid, std::move(run), std::move(skip), lane, ref.ns});
  }
  return call;
}

// The UIDs of a call whose unprepare succeeded, for ClaimHandler::settle_unprepares.
struct Unprepared {
  std::mutex mu;
  std::vector<ClaimRef> claims;
};

ClaimCalls::Call unprepare_call(const ClaimHandler& handler, const wire::NodeUnprepareResourcesRequest& req,
                                std::shared_ptr<wire::NodeUnprepareResourcesResponse> resp,
                                const std::shared_ptr<Unprepared>& unprepared) {
  ClaimCalls::Call call;
  for (const auto& claim : req.claims()) {
    auto* out = &(*resp->mutable_claims())[claim.uid()];  // every claim gets an entry, even empty
    if (claim.uid().empty()) {
      out->set_error("claim without a uid");
      continue;
    }
    ClaimRef ref = claim_ref(claim);
    auto run = [&handler, out, ref, unprepared] {
      out->Clear();
      if (auto st = handler.unprepare(ref); !st) {
        spdlog::warn("DRA: unpreparing claim {} failed: {}", ref.uid, st.error().message);
        out->set_error(st.error().message);
        return;
      }
      std::lock_guard lock(unprepared->mu);
      unprepared->claims.push_back(ref);
    };
    auto skip = [out, ref](Skipped why) {
      out->Clear();
      out->set_error(describe(why));
      spdlog::warn("DRA: claim {} not unprepared: {}", ref.uid, describe(why));
    };
    // An unprepare never reads the API server.
    call.tasks.push_back({ref.uid, std::move(run), std::move(skip), Lane::Local, ref.ns});
  }
  return call;
}

constexpr size_t kTrimAfterClaims = 64;

// Runs the call's claims on `calls`; the responder gets the whole answer once every claim is done.
// A call of many claims (the kubelet's batch after a node drain) leaves the heap holding what its
// claims allocated (API reads, CDI specs, checkpoint texts) in pages that the few objects living on
// pin: it sets `trim`, and the claim threads give the free pages back to the system once they are
// all idle (KubeletPlugin's when_idle), off the kubelet's clock. Trimming here, before the call's
// request, claims and answer were released, left 1.9 MiB of the heap resident after 1,000 claims
// came and went (issue 40).
void answer_with(ClaimCalls& calls, ClaimCalls::Call call, std::shared_ptr<google::protobuf::Message> resp,
                 const rpc::Responder& r, std::atomic<bool>& trim, std::function<void()> before_answer = {}) {
  const bool big = call.tasks.size() >= kTrimAfterClaims;
  call.done = [resp, r, big, &trim, before_answer = std::move(before_answer)] {
    if (before_answer) before_answer();
    r.reply(resp->SerializeAsString());
    if (big) trim = true;
  };
  call.cancelled = [r] { return r.cancelled(); };
  if (!calls.submit(std::move(call))) r.fail({rpc::Code::Unavailable, "the DRA driver is stopping"});
}

}  // namespace

KubeletPlugin::KubeletPlugin(KubeletPluginOptions options, ClaimHandler handler,
                             std::shared_ptr<rpc::Server> transport)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      transport_(std::move(transport)),
      calls_(ClaimCallsOptions{options_.claim_threads, options_.call_budget, "kgpu-dra",
                               options_.local_claim_threads, 0, [this] {
                                 if (trim_when_idle_.exchange(false)) ::malloc_trim(0);
                               }}) {}

KubeletPlugin::~KubeletPlugin() { stop(); }

std::string KubeletPlugin::registration_socket() const {
  return options_.kubelet_root + "/plugins_registry/" + options_.driver + "-reg.sock";
}

std::string KubeletPlugin::dra_socket() const {
  return options_.kubelet_root + "/plugins/" + options_.driver + "/dra.sock";
}

Status KubeletPlugin::start() {
  if (!transport_) return Error::unavailable("DRA: no gRPC transport");
  calls_.restart();

  auto node = std::make_shared<rpc::Service>();
  for (const std::string version : {"v1", "v1beta1"}) {
    // v1beta1's messages are v1's, field for field (v1 adds Device.share_id, which kgpu leaves unset).
    const std::string base = "/k8s.io.kubelet.pkg.apis.dra." + version + ".DRAPlugin/";
    const bool share_ids = version == "v1";
    node->unary(base + "NodePrepareResources", [this, share_ids](std::string_view bytes, rpc::Responder r) {
      wire::NodePrepareResourcesRequest req;
      if (!parse(bytes, req)) return r.fail({rpc::Code::InvalidArgument, "not a NodePrepareResourcesRequest"});
      auto resp = std::make_shared<wire::NodePrepareResourcesResponse>();
      answer_with(calls_, prepare_call(handler_, req, resp, share_ids), resp, r, trim_when_idle_);
    });
    node->unary(base + "NodeUnprepareResources", [this](std::string_view bytes, rpc::Responder r) {
      wire::NodeUnprepareResourcesRequest req;
      if (!parse(bytes, req)) return r.fail({rpc::Code::InvalidArgument, "not a NodeUnprepareResourcesRequest"});
      auto resp = std::make_shared<wire::NodeUnprepareResourcesResponse>();
      auto unprepared = std::make_shared<Unprepared>();
      auto settle = [this, resp, unprepared] {
        std::vector<ClaimRef> claims;
        {
          std::lock_guard lock(unprepared->mu);
          claims.swap(unprepared->claims);
        }
        std::vector<std::string> uids;
        for (const auto& c : claims) uids.push_back(c.uid);
        Status st = handler_.settle_unprepares && !uids.empty() ? handler_.settle_unprepares(uids) : ok_status();
        for (const auto& c : claims) {
          if (st) {
            spdlog::info("DRA: unprepared claim {}/{} ({})", c.ns, c.name, c.uid);
            continue;
          }
          spdlog::warn("DRA: unpreparing claim {} failed: {}", c.uid, st.error().message);
          (*resp->mutable_claims())[c.uid].set_error(st.error().message);
        }
      };
      answer_with(calls_, unprepare_call(handler_, req, resp, unprepared), resp, r, trim_when_idle_,
                  std::move(settle));
    });
  }
  if (options_.health_watch)
    node->server_streaming("/v1alpha1.DRAResourceHealth/NodeWatchResources",
                           [watch = options_.health_watch](std::string_view, std::shared_ptr<rpc::ServerStream> s) {
                             watch(std::move(s));  // the request is empty (reserved): nothing to read
                           });
  auto dra_fd = listen_in_place(dra_socket());
  if (!dra_fd) return Error{dra_fd.error().code, "DRA socket: " + dra_fd.error().message};
  auto dra_id = transport_->serve(std::move(*dra_fd), node);
  if (!dra_id) return dra_id.error();
  dra_listener_ = *dra_id;

  auto registration = std::make_shared<rpc::Service>();
  registration->unary("/pluginregistration.Registration/GetInfo", [this](std::string_view, rpc::Responder r) {
    pluginregistration::PluginInfo info;
    info.set_type("DRAPlugin");
    info.set_name(options_.driver);
    info.set_endpoint(dra_socket());
    for (const auto& v : kDraServiceVersions) info.add_supported_versions(v);
    if (options_.health_watch) info.add_supported_versions(kDraHealthService);
    r.reply(info.SerializeAsString());
  });
  registration->unary("/pluginregistration.Registration/NotifyRegistrationStatus",
                      [this](std::string_view bytes, rpc::Responder r) {
                        pluginregistration::RegistrationStatus status;
                        if (!parse(bytes, status)) return r.fail({rpc::Code::InvalidArgument, "not a RegistrationStatus"});
                        {
                          std::lock_guard lock(mu_);
                          registered_ = status.plugin_registered();
                          registration_error_ = status.error();
                        }
                        if (status.plugin_registered()) {
                          spdlog::info("DRA: registered with the kubelet as {}", options_.driver);
                          if (options_.on_registered) options_.on_registered();
                        } else {
                          spdlog::error("DRA: the kubelet refused driver {}: {}", options_.driver, status.error());
                        }
                        r.reply(pluginregistration::RegistrationStatusResponse{}.SerializeAsString());
                      });
  auto reg_fd = listen_in_place(registration_socket());
  if (!reg_fd) return Error{reg_fd.error().code, "DRA registration socket: " + reg_fd.error().message};
  auto reg_id = transport_->serve(std::move(*reg_fd), registration);
  if (!reg_id) return reg_id.error();
  registration_listener_ = *reg_id;
  spdlog::info("DRA: serving driver {} on {} (registration {})", options_.driver, dra_socket(), registration_socket());
  return ok_status();
}

void KubeletPlugin::stop() {
  if (registration_listener_) {
    ::unlink(registration_socket().c_str());
    transport_->close(std::exchange(registration_listener_, 0));
  }
  if (dra_listener_) {
    transport_->close(std::exchange(dra_listener_, 0));
    ::unlink(dra_socket().c_str());
  }
  // Queued claims are answered "stopping"; running ones finish (the daemon has ended what they
  // wait on: API reads, nvidia-smi runs, MPS waits) and every thread of the pool is joined.
  calls_.stop();
}

bool KubeletPlugin::registered() const {
  std::lock_guard lock(mu_);
  return registered_;
}

std::string KubeletPlugin::registration_error() const {
  std::lock_guard lock(mu_);
  return registration_error_;
}

}  // namespace kgpu::dra
