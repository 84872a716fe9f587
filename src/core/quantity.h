#pragma once
// Kubernetes resource.Quantity values as whole numbers, parsed the way the API server reads them,
// for every place kgpu takes a quantity from outside (claims, config, flags). Pure.
#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace kgpu {

// A Kubernetes resource.Quantity (k8s.io/apimachinery ParseQuantity) as a whole number of bytes,
// what Quantity.Value() gives: an optional sign, digits with an optional fraction ("1.5", ".5",
// "5."), then nothing or one suffix: binary Ki Mi Gi Ti Pi Ei, decimal n u m k M G T P E, or a
// decimal exponent e/E with an optional sign ("1e9", "5E-3"). Fractions of a byte are rounded up
// ("100m" -> 1, "0.3Ki" -> 308). Errors: empty, no digit (Kubernetes reads a few such forms, "Gi"
// or ".", as 0), anything left after the suffix ("1.5.3Gi", "10 Gi", "1GB"), an unknown suffix
// ("1K", "1e"), negative (other than -0), over 2^63-1 bytes (Kubernetes clamps binary quantities
// there and wraps decimal ones), an exponent outside the int32 range.
Result<uint64_t> parse_quantity_bytes(std::string_view text);

}  // namespace kgpu
