#pragma once
// `kgpu devices -o dra` on a fresh fake node of a fleet: what the e2e tests of the DRA view read back.
#include <optional>
#include <string>
#include <vector>

#include "e2e/harness.h"

namespace kgpu::test {

struct CliRun {
  std::optional<int> rc;
  std::string out, err;
};

// The node's proc root holds the MIG capability minors: without them MIG devices are Unhealthy and
// unpublished. `extra_args` go after the node flags (e.g. --dra-mig-dynamic all).
inline CliRun devices_dra(const std::string& fleet, const std::string& node_name,
                          const std::vector<std::string>& extra_args = {}) {
  using namespace std::chrono_literals;
  TempDir work("kgpu-dra");
  const FakeNode node = make_fake_node(fleet, work.file("node"));
  ProcessOptions options;
  options.argv = {kgpu_binary(), "devices", "-o", "dra", "--sysfs-root", node.sysfs_root, "--proc-root", node.proc_root};
  options.argv.insert(options.argv.end(), extra_args.begin(), extra_args.end());
  options.env = fake_nvml_env(node);
  options.env["NODE_NAME"] = node_name;
  ChildProcess cli(options, work.path(), "devices");
  CliRun r;
  r.rc = cli.wait_exit(20s);
  r.out = cli.stdout_text();
  r.err = cli.stderr_text();
  return r;
}

}  // namespace kgpu::test
