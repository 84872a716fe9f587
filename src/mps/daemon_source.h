#pragma once
// Something that decides which MPS control daemons should run, and may change its mind while the
// supervisor runs: the config's MPS resources (re-planned when the config file or the Node's
// config label changes; src/cli/mps_config_source.h) and the DRA claims' request folder
// (mps/claim_request_folder.h). The supervisor polls fd() with its daemons and, when it is
// readable, asks wanted() again and starts, restarts or quits exactly the daemons that differ, so
// a change elsewhere never interrupts a running daemon (and the MPS clients it serves).
#include <optional>
#include <string>
#include <vector>

#include "mps/daemon_spec.h"

namespace kgpu {

class MpsDaemonSource {
 public:
  virtual ~MpsDaemonSource() = default;
  virtual std::string name() const = 0;  // for the log: "the config", "DRA claims"
  virtual int fd() const = 0;            // readable: wanted() may have changed
  // The daemons wanted now; drains fd(). nullopt: no change (what runs stays as it is).
  virtual std::optional<std::vector<MpsDaemonSpec>> wanted() = 0;
  // A daemon no longer wanted takes its folder (pipe, log, markers) with it: a DRA claim's folder
  // belongs to the claim. A config resource's folder stays (its clients may still hold the path).
  virtual bool removes_released_folders() const { return false; }
  // Folders of this source's daemons that nothing asks for now (a request withdrawn while the
  // supervisor was down: a claim unprepared meanwhile), as the specs their daemons had (paths
  // only): the supervisor sweeps them at its start — quits the daemon still listening there,
  // unmounts the shared memory, removes the folder. A claim folder whose request is there
  // (valid or not) is never one of them.
  virtual std::vector<MpsDaemonSpec> leftovers() const { return {}; }
};

}  // namespace kgpu
