#pragma once
// Every key the config file schema accepts (NVIDIA's v1 format and the `kgpu:` section), with what
// it changes. One table, so that a key that is accepted but read by nothing cannot go unnoticed:
// tests/unit/config/accepted_keys_test.cpp walks the schema, requires every key here, and proves
// each Plan / Edits / Preference / Labels / Discovery effect by comparing outputs; keys with no
// effect in kgpu are CompatibilityOnly, and docs/operations.md lists exactly those.
// List entries are spelled with "[]": "sharing.timeSlicing.resources[].replicas".
#include <string_view>
#include <vector>

namespace kgpu {

enum class KeyEffect {
  Plan,               // what is advertised: resources, IDs, replicas, health projection
  Edits,              // what a container gets in the Allocate response
  Preference,         // GetPreferredAllocation's choice
  Labels,             // node labels
  Discovery,          // which devices the sysfs / device-group backends find
  Daemon,             // how the daemon runs (paths, sockets, health monitor, CDI files, metrics)
  CompatibilityOnly,  // accepted so that NVIDIA configs load unchanged; no effect in kgpu
};

const char* to_string(KeyEffect effect);

struct AcceptedKey {
  std::string_view key;
  KeyEffect effect;
  std::string_view what;  // what it changes, or (CompatibilityOnly) why it has no effect
};

const std::vector<AcceptedKey>& accepted_keys();

}  // namespace kgpu
