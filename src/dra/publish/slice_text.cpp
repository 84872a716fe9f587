// ResourceSlices as compact JSON text, written directly. Keys go out in the order nlohmann's
// std::map-backed objects use (byte-wise sorted), strings escaped as its dump() escapes them, so the
// text equals resource_slices(...)[k].dump() (tests hold it to that).
#include <charconv>
#include <cstdio>

#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"

namespace kgpu::dra {

namespace {

void put_int(std::string& out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

bool needs_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

void put_string(std::string& out, std::string_view s) {
  out += '"';
  // Runs without escapes (nearly everything) go out in one append.
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!needs_escape(c)) continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

// Attribute and capacity names: literals of the vocabulary, which never need escapes.
void put_name(std::string& out, std::string_view name) {
  out += '"';
  out.append(name);
  out += "\":";
}

void put_value(std::string& out, const AttributeValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) {
    out += "{\"string\":";
    put_string(out, *s);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out += "{\"int\":";
    put_int(out, *i);
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out += *b ? "{\"bool\":true" : "{\"bool\":false";
  } else {
    out += "{\"version\":";
    put_string(out, std::get<VersionString>(v).value);
  }
  out += '}';
}

// Both lists are sorted and disjoint: a merge gives the sorted object.
void put_attributes(std::string& out, const DraDevice& d) {
  static const Attributes kNone;
  const Attributes& a = d.gpu_attributes ? *d.gpu_attributes : kNone;
  const Attributes& b = d.attributes;
  out += "\"attributes\":{";
  size_t i = 0, j = 0;
  bool first = true;
  while (i < a.size() || j < b.size()) {
    const Attribute& next = (j == b.size() || (i < a.size() && a[i].name < b[j].name)) ? a[i++] : b[j++];
    if (!first) out += ',';
    first = false;
    put_name(out, next.name);
    put_value(out, next.value);
  }
  out += "},\"capacity\":{";
  for (size_t k = 0; k < d.capacity.size(); ++k) {
    if (k) out += ',';
    put_name(out, d.capacity[k].name);
    out += '{';
    if (const auto& p = d.capacity[k].request_policy) {
      out += "\"requestPolicy\":{\"default\":\"";
      out += binary_si_quantity(p->default_value);
      out += "\",\"validRange\":{\"min\":\"";
      out += binary_si_quantity(p->min);
      out += "\",\"step\":\"";
      out += binary_si_quantity(p->step);
      out += "\"}},";
    }
    out += "\"value\":\"";
    out += binary_si_quantity(d.capacity[k].value);
    out += "\"}";
  }
  out += '}';
}

// ,"taints":[{"effect":..,"key":..,"value":..}]: keys sorted, as nlohmann's objects are.
void put_taints(std::string& out, const DraDevice& d) {
  if (d.taints.empty()) return;
  out += ",\"taints\":[";
  for (size_t k = 0; k < d.taints.size(); ++k) {
    const DeviceTaint& t = d.taints[k];
    if (k) out += ',';
    out += "{\"effect\":";
    put_string(out, t.effect);
    out += ",\"key\":";
    put_string(out, t.key);
    if (!t.value.empty()) {
      out += ",\"value\":";
      put_string(out, t.value);
    }
    out += '}';
  }
  out += ']';
}

// {"<counter>":{"value":"<quantity>"},...}: names sorted as the model keeps them.
void put_counters(std::string& out, const std::vector<Counter>& counters) {
  out += '{';
  for (size_t k = 0; k < counters.size(); ++k) {
    if (k) out += ',';
    put_string(out, counters[k].name);
    out += ":{\"value\":\"";
    out += binary_si_quantity(counters[k].value);
    out += "\"}";
  }
  out += '}';
}

// ,"consumesCounters":[{"counterSet":..,"counters":{..}}]
void put_consumes(std::string& out, const DraDevice& d) {
  if (d.consumes_counters.empty()) return;
  out += ",\"consumesCounters\":[";
  for (size_t k = 0; k < d.consumes_counters.size(); ++k) {
    if (k) out += ',';
    out += "{\"counterSet\":";
    put_string(out, d.consumes_counters[k].counter_set);
    out += ",\"counters\":";
    put_counters(out, d.consumes_counters[k].counters);
    out += '}';
  }
  out += ']';
}

void put_device(std::string& out, const DraDevice& d, SliceApi api) {
  out += '{';
  // allowMultipleAllocations sorts before attributes, as nlohmann's objects order keys.
  const char* shareable = d.allow_multiple_allocations ? "\"allowMultipleAllocations\":true," : "";
  if (api == SliceApi::V1beta1) {
    out += "\"basic\":{";
    out += shareable;
    put_attributes(out, d);
    put_consumes(out, d);
    put_taints(out, d);
    out += "},\"name\":";
    put_string(out, d.name);
  } else {
    out += shareable;
    put_attributes(out, d);
    put_consumes(out, d);
    out += ",\"name\":";
    put_string(out, d.name);
    put_taints(out, d);
  }
  out += '}';
}

}  // namespace

std::vector<std::string> resource_slice_texts(const DriverPool& pool, const SliceOptions& options,
                                              int64_t generation, SliceApi api) {
  const auto parts = slice_parts(pool, options.counter_layout);
  const size_t count = parts.size();
  std::vector<std::string> texts;
  texts.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    std::string out;
    out.reserve(1024 + 1200 * parts[k].devices.size() + 512 * parts[k].counter_sets.size());
    out += "{\"apiVersion\":";
    put_string(out, api_version(api));
    out += ",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":";
    put_string(out, options.node_name + "-" + pool.driver + "-" + std::to_string(k));
    if (!options.node_uid.empty()) {
      out += ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"controller\":true,\"kind\":\"Node\",\"name\":";
      put_string(out, options.node_name);
      out += ",\"uid\":";
      put_string(out, options.node_uid);
      out += "}]";
    }
    out += "},\"spec\":{\"devices\":[";
    bool first = true;
    for (size_t i : parts[k].devices) {
      if (!first) out += ',';
      first = false;
      put_device(out, pool.devices[i], api);
    }
    out += "],\"driver\":";
    put_string(out, pool.driver);
    out += ",\"nodeName\":";
    put_string(out, options.node_name);
    out += ",\"pool\":{\"generation\":";
    put_int(out, generation);
    out += ",\"name\":";
    put_string(out, pool.pool);
    out += ",\"resourceSliceCount\":";
    put_int(out, static_cast<int64_t>(count));
    out += '}';
    if (!parts[k].counter_sets.empty()) {
      // "sharedCounters" sorts after "pool"; each set's "counters" before its "name".
      out += ",\"sharedCounters\":[";
      for (size_t n = 0; n < parts[k].counter_sets.size(); ++n) {
        const CounterSet& set = pool.counter_sets[parts[k].counter_sets[n]];
        if (n) out += ',';
        out += "{\"counters\":";
        put_counters(out, set.counters);
        out += ",\"name\":";
        put_string(out, set.name);
        out += '}';
      }
      out += ']';
    }
    out += "}}";
    texts.push_back(std::move(out));
  }
  return texts;
}

}  // namespace kgpu::dra
