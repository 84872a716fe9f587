#pragma once
// Structured JSON for the fuzz targets that build API-server answers field by field: any value
// nested up to a depth, with strings and (optionally) object keys drawn from the vocabulary the
// parser under test looks for, so the fuzzer reaches past "not an object" quickly.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

namespace kgpu::fuzz {

enum class Keys { Random, Words };

inline nlohmann::json any_json(FuzzedDataProvider& in, int depth, std::span<const char* const> words,
                               Keys keys = Keys::Random) {
  auto word = [&] { return words[in.ConsumeIntegralInRange<size_t>(0, words.size() - 1)]; };
  switch (in.ConsumeIntegralInRange<int>(0, depth > 0 ? 7 : 5)) {
    case 0: return nullptr;
    case 1: return in.ConsumeBool();
    case 2: return in.ConsumeIntegral<int64_t>();
    case 3: return in.ConsumeFloatingPoint<double>();
    case 4: return in.ConsumeRandomLengthString(24);
    case 5: return word();
    case 6: {
      auto a = nlohmann::json::array();
      for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) a.push_back(any_json(in, depth - 1, words, keys));
      return a;
    }
    default: {
      auto o = nlohmann::json::object();
      for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) {
        std::string key = keys == Keys::Words ? std::string(word()) : in.ConsumeRandomLengthString(12);
        o[key] = any_json(in, depth - 1, words, keys);
      }
      return o;
    }
  }
}

// The expected value most of the time, any value sometimes, absent sometimes.
inline void maybe_field(FuzzedDataProvider& in, nlohmann::json& object, const char* key,
                        const nlohmann::json& expected, std::span<const char* const> words) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return;
    case 1: object[key] = any_json(in, 2, words); return;
    default: object[key] = expected;
  }
}

}  // namespace kgpu::fuzz
