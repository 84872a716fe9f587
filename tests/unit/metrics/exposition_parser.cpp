#include "exposition_parser.h"

#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

namespace kgpu::testing {

namespace {

bool valid_metric_name(const std::string& n) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool parse_value(const std::string& text, double& out) {
  if (text == "+Inf") { out = std::numeric_limits<double>::infinity(); return true; }
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

// Parses `name{a="x",b="y"} value` into `s`; returns an error text or "".
std::string parse_sample(const std::string& line, Sample& s) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  s.name = line.substr(0, i);
  if (!valid_metric_name(s.name)) return "bad metric name";
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      std::size_t eq = line.find('=', i);
      if (eq == std::string::npos) return "label without '='";
      const std::string key = line.substr(i, eq - i);
      if (!valid_metric_name(key) || key.find(':') != std::string::npos) return "bad label name";
      i = eq + 1;
      if (i >= line.size() || line[i] != '"') return "label value not quoted";
      ++i;
      std::string value;
      for (;; ++i) {
        if (i >= line.size()) return "unterminated label value";
        const char c = line[i];
        if (c == '"') break;
        if (c == '\\') {
          if (++i >= line.size()) return "dangling escape";
          const char e = line[i];
          if (e == 'n') value += '\n';
          else if (e == '\\' || e == '"') value += e;
          else return "unknown escape";
        } else {
          value += c;
        }
      }
      ++i;  // closing quote
      if (s.labels.count(key)) return "duplicate label";
      s.labels[key] = value;
      if (i < line.size() && line[i] == ',') ++i;
      else if (i < line.size() && line[i] != '}') return "expected ',' or '}'";
    }
    if (i >= line.size()) return "unterminated label set";
    ++i;  // '}'
  }
  if (i >= line.size() || line[i] != ' ') return "missing value";
  if (!parse_value(line.substr(i + 1), s.value)) return "bad value";
  return "";
}

}  // namespace

const Family* Exposition::family(const std::string& name) const {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::optional<double> Exposition::value(const std::string& sample_name,
                                        const std::map<std::string, std::string>& labels) const {
  for (const auto& f : families) {
    for (const auto& s : f.samples) {
      if (s.name == sample_name && s.labels == labels) return s.value;
    }
  }
  return std::nullopt;
}

Exposition parse_exposition(const std::string& text) {
  Exposition out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::set<std::string> seen;
  auto fail = [&](const std::string& why) {
    out.error = "line " + std::to_string(number) + ": " + why + ": " + line;
    return out;
  };
  if (!text.empty() && text.back() != '\n') {
    out.error = "text does not end with a newline";
    return out;
  }
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) return fail("empty line");
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string rest = line.substr(7);
      const auto sp = rest.find(' ');
      Family f;
      f.name = rest.substr(0, sp);
      f.help = sp == std::string::npos ? "" : rest.substr(sp + 1);
      if (!valid_metric_name(f.name)) return fail("bad family name");
      if (!seen.insert(f.name).second) return fail("family declared twice");
      out.families.push_back(f);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      if (out.families.empty() || out.families.back().name != name) return fail("TYPE without HELP");
      if (!out.families.back().type.empty()) return fail("second TYPE");
      if (type != "counter" && type != "gauge" && type != "histogram") return fail("unknown type");
      out.families.back().type = type;
      continue;
    }
    if (line[0] == '#') return fail("unexpected comment");
    if (out.families.empty() || out.families.back().type.empty()) return fail("sample before TYPE");
    Sample s;
    if (auto err = parse_sample(line, s); !err.empty()) return fail(err);
    Family& f = out.families.back();
    bool belongs = s.name == f.name;
    if (f.type == "histogram") {
      belongs = s.name == f.name + "_bucket" || s.name == f.name + "_sum" || s.name == f.name + "_count";
    }
    if (f.type == "counter" && f.name.size() > 6 && f.name.substr(f.name.size() - 6) != "_total") {
      return fail("counter family not named *_total");
    }
    if (!belongs) return fail("sample outside its family");
    f.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace kgpu::testing
