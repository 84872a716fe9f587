#include "dra/kubelet_plugin.h"

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

struct KubeletPlugin::Job {
  std::function<void()> run;
  std::function<void()> refuse;  // answers the call when it cannot run (stopping)
};

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

// `share_ids`: v1 carries Device.share_id; v1beta1 has no such field.
std::string prepare_all(const ClaimHandler& handler, const wire::NodePrepareResourcesRequest& req, bool share_ids) {
  wire::NodePrepareResourcesResponse resp;
  for (const auto& claim : req.claims()) {
    auto& out = (*resp.mutable_claims())[claim.uid()];
    if (auto problem = missing_field(claim); !problem.empty()) {
      out.set_error(problem);
      continue;
    }
    auto prepared = handler.prepare(claim_ref(claim));
    if (!prepared) {
      spdlog::warn("DRA: preparing claim {}/{} ({}) failed: {}", claim.namespace_(), claim.name(), claim.uid(),
                   prepared.error().message);
      out.set_error(prepared.error().message);
      continue;
    }
    for (const auto& d : *prepared) {
      auto* dev = out.add_devices();
      for (const auto& r : d.requests) dev->add_request_names(r);
      dev->set_pool_name(d.pool);
      dev->set_device_name(d.device);
      for (const auto& id : d.cdi_device_ids) dev->add_cdi_device_ids(id);
      if (share_ids && d.share_id) dev->set_share_id(*d.share_id);
    }
    spdlog::info("DRA: prepared claim {}/{} ({}): {} device(s)", claim.namespace_(), claim.name(), claim.uid(),
                 prepared->size());
  }
  return resp.SerializeAsString();
}

std::string unprepare_all(const ClaimHandler& handler, const wire::NodeUnprepareResourcesRequest& req) {
  wire::NodeUnprepareResourcesResponse resp;
  for (const auto& claim : req.claims()) {
    auto& out = (*resp.mutable_claims())[claim.uid()];  // every claim gets an entry, even empty
    if (claim.uid().empty()) {
      out.set_error("claim without a uid");
      continue;
    }
    if (auto st = handler.unprepare(claim_ref(claim)); !st) {
      spdlog::warn("DRA: unpreparing claim {} failed: {}", claim.uid(), st.error().message);
      out.set_error(st.error().message);
      continue;
    }
    spdlog::info("DRA: unprepared claim {}/{} ({})", claim.namespace_(), claim.name(), claim.uid());
  }
  return resp.SerializeAsString();
}

}  // namespace

KubeletPlugin::KubeletPlugin(KubeletPluginOptions options, ClaimHandler handler,
                             std::shared_ptr<rpc::Server> transport)
    : options_(std::move(options)), handler_(std::move(handler)), transport_(std::move(transport)) {}

KubeletPlugin::~KubeletPlugin() { stop(); }

std::string KubeletPlugin::registration_socket() const {
  return options_.kubelet_root + "/plugins_registry/" + options_.driver + "-reg.sock";
}

std::string KubeletPlugin::dra_socket() const {
  return options_.kubelet_root + "/plugins/" + options_.driver + "/dra.sock";
}

void KubeletPlugin::post(Job job) {
  bool refused = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      refused = true;
    } else {
      jobs_.push_back(std::move(job.run));
      if (!worker_running_) {
        // The previous worker cleared worker_running_ under mu_ as it left run_jobs(): joining it
        // takes no longer than a thread's exit.
        if (worker_.joinable()) worker_.join();
        // On the transport's thread: nothing may escape.
        try {
          worker_ = std::thread([this] { run_jobs(); });
          worker_running_ = true;
        } catch (const std::exception& e) {
          spdlog::error("DRA: cannot start a thread for the kubelet's call: {}", e.what());
          jobs_.pop_back();
          refused = true;
        }
      }
    }
  }
  if (refused && job.refuse) job.refuse();
}

void KubeletPlugin::run_jobs() {
  name_this_thread("kgpu-dra");  // prepares and unprepares claims (may wait on the API server)
  for (;;) {
    std::function<void()> job;
    {
      std::lock_guard lock(mu_);
      // Queued calls still run while stopping (stop() ended what they wait on): each gets its answer.
      if (jobs_.empty()) {
        worker_running_ = false;  // the next post() starts a worker again
        return;
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job();
    } catch (const std::exception& e) {
      spdlog::error("DRA: a claim job failed: {}", e.what());
    } catch (...) {
      spdlog::error("DRA: a claim job failed");
    }
  }
}

Status KubeletPlugin::start() {
  if (!transport_) return Error::unavailable("DRA: no gRPC transport");
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }

  auto node = std::make_shared<rpc::Service>();
  for (const std::string version : {"v1", "v1beta1"}) {
    // v1beta1's messages are v1's, field for field (v1 adds Device.share_id, which kgpu leaves unset).
    const std::string base = "/k8s.io.kubelet.pkg.apis.dra." + version + ".DRAPlugin/";
    const bool share_ids = version == "v1";
    node->unary(base + "NodePrepareResources", [this, share_ids](std::string_view bytes, rpc::Responder r) {
      auto req = std::make_shared<wire::NodePrepareResourcesRequest>();
      if (!parse(bytes, *req)) return r.fail({rpc::Code::InvalidArgument, "not a NodePrepareResourcesRequest"});
      post({[this, req, r, share_ids] { r.reply(prepare_all(handler_, *req, share_ids)); },
            [r] { r.fail({rpc::Code::Unavailable, "the DRA driver is stopping"}); }});
    });
    node->unary(base + "NodeUnprepareResources", [this](std::string_view bytes, rpc::Responder r) {
      auto req = std::make_shared<wire::NodeUnprepareResourcesRequest>();
      if (!parse(bytes, *req)) return r.fail({rpc::Code::InvalidArgument, "not a NodeUnprepareResourcesRequest"});
      post({[this, req, r] { r.reply(unprepare_all(handler_, *req)); },
            [r] { r.fail({rpc::Code::Unavailable, "the DRA driver is stopping"}); }});
    });
  }
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
  {
    std::lock_guard lock(mu_);
    stopping_ = true;  // from here on no worker starts, so worker_ stays as it is
  }
  // A worker still running finishes the queued calls (their waits on the API server and on
  // nvidia-smi are ended by the caller's cancellation) and ends.
  if (worker_.joinable()) worker_.join();
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
