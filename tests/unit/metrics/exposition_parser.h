#pragma once
// A small, strict parser for the Prometheus text format, used by the tests to read back what
// Metrics::render() wrote. Strictness is the point: anything it does not understand is a failure.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kgpu::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

struct Family {
  std::string name;
  std::string type;
  std::string help;
  std::vector<Sample> samples;
};

struct Exposition {
  std::vector<Family> families;  // in order of appearance
  std::string error;             // empty when the text parsed

  const Family* family(const std::string& name) const;
  // The value of the sample with exactly these labels, if present.
  std::optional<double> value(const std::string& sample_name,
                              const std::map<std::string, std::string>& labels) const;
};

Exposition parse_exposition(const std::string& text);

}  // namespace kgpu::testing
