// kgpu-fake-nvml-fixture FLEET OUTDIR: writes the sysfs/proc/dev tree of a simulated node.
#include <cstdio>
#include <string>

#include "fixture_writer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s FLEET.yaml OUTDIR\n  writes OUTDIR/{sys,proc,dev} for the fleet's GPUs\n", argv[0]);
    return 2;
  }
  auto status = kgpu::fake_nvml::write_fixture(std::string(argv[1]), std::string(argv[2]));
  if (!status) {
    std::fprintf(stderr, "kgpu-fake-nvml-fixture: %s\n", status.error().message.c_str());
    return 1;
  }
  return 0;
}
