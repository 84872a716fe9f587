#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config/config.h"
#include "core/dir_watch.h"
#include "core/inventory.h"
#include "core/unique_fd.h"
#include "core/resource_plan.h"
#include "kube/node_feature_sync.h"
#include "labels/labels.h"

namespace kgpu::cli {

// Writes the node-feature-discovery feature file on every plan (only when the labels changed)
// and removes it on exit unless keepLabelsOnExit. The file's folder is watched (re-arming, see
// core/dir_watch.h), so a folder that appears after start gets the file, and a file someone else
// deleted or replaced is written again at once, without a timer.
// With flags.useNodeFeatureAPI the labels go to the node's NodeFeature object instead (as GFD
// writes them; kube/node_feature_sync.h, on a thread of its own), and the file is removed; switched
// off again (or labels switched off), the object is deleted. An environment that cannot reach the
// API (no NODE_NAME, no service account) is logged and the file written instead.
class LabelsWriter {
 public:
  LabelsWriter(std::optional<int64_t> start_time, std::map<std::string, std::string> env)
      : start_time_(start_time), env_(std::move(env)) {}
  ~LabelsWriter();
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);
  void on_exit();

 private:
  void watch_folder_of(const std::string& path);  // loop thread
  void stop_watch();
  void run();
  void write_locked(bool from_watch);  // mu_ held
  // Loop thread. True when the labels went to the NodeFeature (the file is not wanted then).
  bool to_node_feature(const Config& config, const Labels& labels);
  void remove_file_for_node_feature();  // the file we wrote, once the NodeFeature holds the labels

  std::optional<int64_t> start_time_;
  std::optional<LabelContext> context_;  // cached per context_key_ (GPUs + settings)
  std::string context_key_;
  bool keep_on_exit_ = false;
  std::mutex mu_;  // guards the file state below (the watcher thread rewrites the file)
  std::string path_;
  std::optional<Labels> wanted_;   // what the file should hold
  std::optional<Labels> written_;  // what it held after our last successful write
  bool ever_written_ = false;      // on_exit removes only a file we wrote
  // The folder watch and its thread (started and stopped on the loop thread).
  std::string watched_path_;
  std::optional<DirWatch> watch_;
  UniqueFd stop_fd_;
  std::thread thread_;
  // The NodeFeature output (loop thread; on_exit after the loop ended).
  std::map<std::string, std::string> env_;
  std::unique_ptr<kube::NodeFeatureSync> node_feature_;  // created when first switched on
  std::string node_feature_problem_;                    // why it could not be created (logged once)
  std::optional<Labels> node_feature_labels_;           // last published; nullopt: withdrawn / never
};

}  // namespace kgpu::cli
