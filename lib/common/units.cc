#include "common/units.h"

#include <array>
#include <cstdio>
#include <limits>

#include "vocab/size.h"

namespace gpushare {
namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// The message for a size error; `what` is "size" or "duration". The
// wording of each error is the vocabulary's (vocab/size.h).
Error size_error(SizeError error, std::string_view what, std::string_view text,
                 std::string_view unit) {
  std::string kind(what);
  if (error == SizeError::kEmpty) return make_error("empty " + kind);
  if (error == SizeError::kUnknownUnit) {
    return make_error("unknown unit " + quoted(unit) + " in " + kind + " " + quoted(text) + " " +
                      kSizeUnitsHint);
  }
  return make_error(kind + " " + quoted(text) + " " + size_error_reason(error));
}

}  // namespace

Result<SizeSpec> parse_size_spec_text(std::string_view text) {
  SizeSpec spec;
  std::string_view unit;
  SizeError error = parse_size_spec(text, &spec, &unit);
  if (error != SizeError::kNone) return size_error(error, "size", text, unit);
  return spec;
}

bool is_percentage(std::string_view text) { return !text.empty() && text.back() == '%'; }

Result<std::uint64_t> parse_size(std::string_view text,
                                 std::optional<std::uint64_t> capacity_bytes) {
  SizeSpec spec;
  std::string_view unit;
  SizeError error = parse_size_spec(text, &spec, &unit);
  std::uint64_t bytes = 0;
  if (error == SizeError::kNone) {
    error = resolve_size(spec, capacity_bytes.has_value(), capacity_bytes.value_or(0), &bytes);
  }
  if (error != SizeError::kNone) return size_error(error, "size", text, unit);
  return bytes;
}

std::string format_size(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 6> kNames = {"B",   "KiB", "MiB",
                                                             "GiB", "TiB", "PiB"};
  std::size_t index = 0;
  std::uint64_t unit = 1;
  while (index + 1 < kNames.size() && bytes / unit >= 1024) {
    unit <<= 10;
    ++index;
  }
  if (bytes % unit == 0) return std::to_string(bytes / unit) + std::string(kNames[index]);
  // Two decimals, truncated so that the printed value never exceeds the real one.
  std::uint64_t hundredths = static_cast<std::uint64_t>(
      static_cast<unsigned __int128>(bytes % unit) * 100 / unit);
  char text[64];
  std::snprintf(text, sizeof text, "%llu.%02llu", static_cast<unsigned long long>(bytes / unit),
                static_cast<unsigned long long>(hundredths));
  std::string result = text;
  while (result.back() == '0') result.pop_back();
  if (result.back() == '.') result.pop_back();
  return result + std::string(kNames[index]);
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  struct Unit {
    std::string_view name;
    std::uint64_t multiplier;
  };
  static constexpr std::array<Unit, 6> kDurationUnits = {{
      {"ns", 1},
      {"us", 1000},
      {"ms", 1000000},
      {"s", 1000000000ull},
      {"m", 60ull * 1000000000ull},
      {"h", 3600ull * 1000000000ull},
  }};
  SizeSpec number;
  std::string_view unit;
  SizeError error = parse_decimal_prefix(text, &number, &unit);
  if (error != SizeError::kNone) return size_error(error, "duration", text, unit);
  if (unit.empty()) {
    return make_error("duration " + quoted(text) + " needs a unit (ns, us, ms, s, m or h)");
  }
  for (const Unit& candidate : kDurationUnits) {
    if (candidate.name != unit) continue;
    std::uint64_t ns = 0;
    if (!scale_decimal(number, candidate.multiplier, &ns) ||
        ns > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return make_error("duration " + quoted(text) + " is too long");
    }
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
  }
  return make_error("unknown unit " + quoted(unit) + " in duration " + quoted(text) +
                    " (use ns, us, ms, s, m or h)");
}

}  // namespace gpushare
