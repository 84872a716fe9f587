#include "sysfs/fs_util.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

#include "core/safe_file.h"

namespace kgpu::sysfs {

std::string join(std::string_view root, std::string_view abs_path) {
  std::string r(root);
  while (!r.empty() && r.back() == '/') r.pop_back();
  std::string p(abs_path);
  if (p.empty() || p.front() != '/') p.insert(p.begin(), '/');
  return r + p;
}

bool exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

std::optional<std::string> read_trimmed(const fs::path& p) {
  // Bounded and non-blocking (core/safe_file.h): a FIFO or a device planted in a fixture or a
  // --sysfs-root tree cannot hang discovery, a huge file cannot exhaust memory.
  auto text = read_regular_file(p.string(), kAttributeFileLimit);
  if (!text) return std::nullopt;
  std::string s = std::move(*text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::vector<std::string> list_dir(const fs::path& p) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> link_basename(const fs::path& p) {
  std::error_code ec;
  fs::path target = fs::read_symlink(p, ec);
  if (ec) return std::nullopt;
  while (!target.empty() && target.filename().empty()) target = target.parent_path();
  if (target.empty()) return std::nullopt;
  return target.filename().string();
}

std::optional<uint64_t> parse_u64(std::string_view text, int base) {
  if (base == 0) {
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      text.remove_prefix(2);
      base = 16;
    } else {
      base = 10;
    }
  }
  if (text.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_i64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<int> parse_numa(std::string_view text) {
  auto v = parse_i64(text);
  if (!v || *v < 0 || *v > 4096) return std::nullopt;
  return static_cast<int>(*v);
}

bool is_pci_address(std::string_view s) {
  // dddd:bb:ss.f, hex digits
  if (s.size() != 12) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (i == 4 || i == 7) {
      if (c != ':') return false;
    } else if (i == 10) {
      if (c != '.') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> glob(std::string_view root, std::string_view pattern) {
  // Walk the pattern one component at a time, expanding wildcard components by listing the
  // directory; literal components are just appended (checked for existence at the end).
  std::vector<std::string> parts;
  std::string cur;
  for (char c : pattern) {
    if (c == '/') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) parts.push_back(cur);

  std::vector<std::string> partial = {""};  // in-root prefixes, "" means the root itself
  for (const auto& part : parts) {
    std::vector<std::string> next;
    bool wild = part.find_first_of("*?[") != std::string::npos;
    for (const auto& prefix : partial) {
      if (!wild) {
        next.push_back(prefix + "/" + part);
        continue;
      }
      for (const auto& name : list_dir(join(root, prefix.empty() ? "/" : prefix)))
        if (fnmatch(part.c_str(), name.c_str(), FNM_PERIOD) == 0) next.push_back(prefix + "/" + name);
    }
    partial = std::move(next);
  }
  std::vector<std::string> out;
  for (auto& p : partial)
    if (!p.empty() && exists(join(root, p))) out.push_back(std::move(p));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kgpu::sysfs
