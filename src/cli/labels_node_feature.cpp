#include "cli/labels_node_feature.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>

#include "config/loader.h"
#include "kube/api_request.h"
#include "kube/node_feature_client.h"
#include "kube/node_feature_sync.h"

namespace kgpu::cli {
namespace {

using namespace std::chrono_literals;

// How long SIGTERM waits for the object's deletion before leaving it to the garbage collector
// (its owner is the DaemonSet, so it goes with the DaemonSet).
constexpr auto kDeleteGrace = 5s;

}  // namespace

int run_node_feature_daemon(const std::function<Result<LabelMap>()>& next_labels,
                            const std::function<bool()>& next_round, bool keep_on_exit, const std::string& when) {
  auto sync = kube::NodeFeatureSync::start(process_environment());
  if (!sync) {
    spdlog::error("labels: {}", sync.error().message);
    return 1;
  }
  spdlog::info("labels: writing {} (node-feature-discovery's NodeFeature API, flags.useNodeFeatureAPI) {}",
               (*sync)->describe(), when);
  int rc = 0;
  do {
    auto labels = next_labels();
    if (!labels) {
      spdlog::error("labels: {}", labels.error().message);
      rc = 1;
      break;
    }
    (*sync)->publish(std::move(*labels));
  } while (next_round());
  if (keep_on_exit) spdlog::info("labels: leaving {} in place (keepLabelsOnExit)", (*sync)->describe());
  (*sync)->stop(!keep_on_exit, kDeleteGrace);
  return rc;
}

int write_node_feature_once(const LabelMap& labels) {
  const auto env = process_environment();
  auto settings = kube::node_feature_settings(env);
  if (!settings) {
    std::cerr << "labels: " << settings.error().message << "\n";
    return 1;
  }
  auto server = kube::find_api_server(env);
  if (!server) {
    std::cerr << "labels: flags.useNodeFeatureAPI needs the API server: " << server.error().message << "\n";
    return 1;
  }
  kube::Interrupter interrupter;
  kube::ApiClient api(std::move(*server), interrupter);
  kube::NodeFeatureClient client(api, std::move(*settings));
  auto written = client.write(labels);
  if (!written) {
    std::cerr << "labels: cannot write " << client.place().describe() << ": " << written.error().message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kgpu::cli
