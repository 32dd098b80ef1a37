// The size grammar ("16GiB", "1.5G", "50%") as allocation-free,
// exception-free code, so that the interposer (which may not depend on
// libstdc++) parses GPUSHARE_MEM_LIMIT exactly as gpushare-run does, and the
// one table of what is wrong with a size, which every caller words its
// message with.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpushare {

enum class SizeError {
  kNone,
  kEmpty,
  kNegative,
  kNoNumber,
  kTooLarge,        ///< the number itself overflows
  kFractionOfByte,  ///< "1.5" or "1.5B"
  kUnknownUnit,
  kOverflow,            ///< number times unit overflows 64 bits
  kPercentNoCapacity,   ///< "50%" where no capacity is known
  kPercentOverHundred,  ///< "101%"
};

/// A parsed size before resolution: an exact decimal and a unit.
struct SizeSpec {
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;        ///< fraction digits as an integer
  std::uint64_t fraction_scale = 1;  ///< 10^(number of fraction digits)
  bool has_fraction = false;
  bool percent = false;
  std::uint64_t multiplier = 1;  ///< bytes per unit (1 for percentages)
};

/// Parses the text; on kUnknownUnit, `*unit` is the offending unit text.
SizeError parse_size_spec(std::string_view text, SizeSpec* spec, std::string_view* unit);

/// Bytes for a spec; percentages need `capacity_bytes` (has_capacity).
SizeError resolve_size(const SizeSpec& spec, bool has_capacity, std::uint64_t capacity_bytes,
                       std::uint64_t* bytes);

/// Parses a decimal number at the start of `text` (used for durations too).
SizeError parse_decimal_prefix(std::string_view text, SizeSpec* spec, std::string_view* rest);

/// Whether a parsed limit is above zero: a percentage above 0%, or at least
/// one byte. Checked on the spec, before any device is known, so that
/// gpushare-run and the interposer accept the same limits.
bool size_spec_positive(const SizeSpec& spec);

/// whole * multiplier + fraction * multiplier / scale, false on overflow.
bool scale_decimal(const SizeSpec& number, std::uint64_t multiplier, std::uint64_t* result);

/// What is wrong, worded to follow the quoted text: "'8XB' has an unknown
/// unit". "invalid" for kNone (a caller's mistake).
const char* size_error_reason(SizeError error);

/// The units a size may have, for messages: "(use B, KiB, ... or %)".
inline constexpr const char* kSizeUnitsHint =
    "(use B, KiB, MiB, GiB, TiB, K, M, G, T, KB, MB, GB, TB or %)";

}  // namespace gpushare
