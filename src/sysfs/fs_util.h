#pragma once
// Small read-only filesystem helpers for the sysfs backends. Every function is noexcept-in-spirit:
// failures come back as empty optionals / empty lists, so callers decide what is a warning.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kgpu::sysfs {

namespace fs = std::filesystem;

// root + an absolute in-root path: join("/", "/dev/kfd") == "/dev/kfd",
// join("/tmp/fx", "/dev/kfd") == "/tmp/fx/dev/kfd".
std::string join(std::string_view root, std::string_view abs_path);

bool exists(const fs::path& p);
bool is_dir(const fs::path& p);
// File contents without trailing whitespace/newlines; nullopt when unreadable, not a regular file
// or over kAttributeFileLimit (64 KiB).
std::optional<std::string> read_trimmed(const fs::path& p);
// Sorted entry names of a directory (empty when missing).
std::vector<std::string> list_dir(const fs::path& p);
// Last component of a symlink's target ("../../bus/pci/drivers/i915" -> "i915"); nullopt if not a link.
std::optional<std::string> link_basename(const fs::path& p);

// Strict number parsing: the whole text must be the number. base 0 accepts "0x" hex.
std::optional<uint64_t> parse_u64(std::string_view text, int base = 10);
std::optional<int64_t> parse_i64(std::string_view text);
// sysfs numa_node: "-1" (no affinity) -> nullopt.
std::optional<int> parse_numa(std::string_view text);

// "0000:c1:00.0"
bool is_pci_address(std::string_view name);

// Shell-style match of one path (components with '*' / '?') under root. Returns matched paths in
// in-root form ("/dev/infiniband/uverbs0"), sorted.
std::vector<std::string> glob(std::string_view root, std::string_view pattern);

}  // namespace kgpu::sysfs
