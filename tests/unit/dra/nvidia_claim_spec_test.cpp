// NVIDIA's per-claim CDI spec as kgpu reads it to hold the GPUs of a claim that driver prepared
// (issue 38): the claim's device names and the GPUs' device nodes, from YAML or JSON; anything else
// an error, never an exception; and which file names are such specs.
#include "dra/claims/nvidia_claim_spec.h"

#include <gtest/gtest.h>

namespace kgpu::dra {
namespace {

const std::string kUid = "0d9a4c5e-1111-4a3b-8c2d-000000000001";

TEST(NvidiaClaimSpec, DeviceNamesAndGpuNodesOfTheClaim) {
  const std::string yaml = "---\ncdiVersion: 0.5.0\nkind: k8s.gpu.nvidia.com/claim\ndevices:\n"
                           "- name: " + kUid + "-gpu-3\n  containerEdits:\n    deviceNodes:\n"
                           "    - path: /dev/nvidia3\n    - path: /dev/nvidiactl\n"
                           "- name: " + kUid + "-gpu-1-mig-1g10gb-19-0\n  containerEdits:\n    deviceNodes:\n"
                           "    - path: /dev/nvidia1\n    - path: /dev/nvidia-caps/nvidia-cap21\n"
                           "- name: another-claim-gpu-5\n  containerEdits:\n    deviceNodes:\n"
                           "    - path: /dev/nvidia5\n"
                           "containerEdits:\n  deviceNodes:\n  - path: /dev/nvidia7\n";
  auto hold = parse_nvidia_claim_spec(yaml, kUid);
  ASSERT_TRUE(hold.ok()) << hold.error().message;
  EXPECT_EQ(hold->devices, (std::vector<std::string>{"gpu-3", "gpu-1-mig-1g10gb-19-0"}));
  EXPECT_EQ(hold->minors, (std::set<int>{1, 3}));  // another claim's device and spec-wide edits: not this claim's

  const std::string json = R"({"cdiVersion": "0.5.0", "devices": [{"name": ")" + kUid +
                           R"(-gpu-0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}]})";
  auto from_json = parse_nvidia_claim_spec(json, kUid);
  ASSERT_TRUE(from_json.ok());
  EXPECT_EQ(from_json->devices, std::vector<std::string>{"gpu-0"});
  EXPECT_EQ(from_json->minors, std::set<int>{0});
}

TEST(NvidiaClaimSpec, WhatIsNotASpecIsAnErrorOrHoldsNothing) {
  EXPECT_FALSE(parse_nvidia_claim_spec("devices: [unclosed", kUid).ok());
  EXPECT_FALSE(parse_nvidia_claim_spec("- a list\n", kUid).ok());
  EXPECT_FALSE(parse_nvidia_claim_spec(std::string(100, '[') + std::string(100, ']'), kUid).ok());
  EXPECT_FALSE(parse_nvidia_claim_spec(std::string(kMaxNvidiaClaimSpecBytes + 1, ' '), kUid).ok());
  auto odd = parse_nvidia_claim_spec("devices:\n- 5\n- name: [x]\n- name: " + kUid + "-\n- name: " + kUid +
                                         "-gpu-2\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia2x\n"
                                         "    - path: /dev/nvidia99999999\n    - 7\n",
                                     kUid);
  ASSERT_TRUE(odd.ok()) << odd.error().message;
  EXPECT_EQ(odd->devices, std::vector<std::string>{"gpu-2"});
  EXPECT_TRUE(odd->minors.empty());
}

TEST(NvidiaClaimSpec, OnlyNvidiasYamlSpecFileNamesNameAClaim) {
  const std::string driver = "gpu.nvidia.com";
  EXPECT_EQ(nvidia_claim_spec_uid("k8s.gpu.nvidia.com-claim_" + kUid + ".yaml", driver), kUid);
  EXPECT_FALSE(nvidia_claim_spec_uid("k8s.gpu.nvidia.com-claim_" + kUid + ".json", driver));  // kgpu's own
  EXPECT_FALSE(nvidia_claim_spec_uid("k8s.gpu.nvidia.com-claim_.yaml", driver));
  EXPECT_FALSE(nvidia_claim_spec_uid("k8s.gpu.nvidia.com-claim_../x.yaml", driver));
  EXPECT_FALSE(nvidia_claim_spec_uid(".k8s.gpu.nvidia.com-claim_" + kUid + ".yaml", driver));
  EXPECT_FALSE(nvidia_claim_spec_uid("k8s.gpu.amd.com-claim_" + kUid + ".yaml", driver));
}

}  // namespace
}  // namespace kgpu::dra
