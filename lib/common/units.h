// Human units on the command line and in TOML: sizes and durations.
//
// Sizes: a number (digits, optionally a fraction) and a unit.
//   B or none       bytes (no fraction allowed)
//   K, KiB          2^10      KB   10^3
//   M, MiB          2^20      MB   10^6
//   G, GiB          2^30      GB   10^9
//   T, TiB          2^40      TB   10^12
//   %               a percentage (0..100) of a given capacity
// A single letter means the binary unit, as in free(1) and CUDA's own docs
// ("4G" is 4 GiB); the SI units are spelled with a B. Units are case
// sensitive except that "k" is accepted for K. Fractions are exact decimal
// arithmetic, rounded down to a whole byte: "1.5GiB" is 1610612736.
//
// Durations: a number and one of ns, us, ms, s, m, h ("250ms", "1.5s").
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "vocab/size.h"

namespace gpushare {

/// Parses a size. `capacity_bytes` resolves percentages; without it "50%"
/// is an error naming the text.
Result<std::uint64_t> parse_size(std::string_view text,
                                 std::optional<std::uint64_t> capacity_bytes = std::nullopt);

/// Parses a size without resolving it (a percentage stays one); the errors
/// are parse_size's.
Result<SizeSpec> parse_size_spec_text(std::string_view text);

/// True when the text is a percentage ("50%"), so callers can defer
/// resolving it until the device's capacity is known.
bool is_percentage(std::string_view text);

/// Formats bytes for people: the largest binary unit that keeps at least
/// one whole unit, with up to two decimals ("1.5GiB", "512MiB", "17B").
std::string format_size(std::uint64_t bytes);

/// Parses a duration into nanoseconds. Zero is allowed; negatives are not.
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

}  // namespace gpushare
