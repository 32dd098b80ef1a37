#include "common/units.h"

#include <array>
#include <cstdio>
#include <limits>

namespace gpushare {
namespace {

struct Unit {
  std::string_view name;
  std::uint64_t multiplier;
};

constexpr std::uint64_t kKi = 1ull << 10;
constexpr std::array<Unit, 17> kSizeUnits = {{
    {"", 1},
    {"B", 1},
    {"K", kKi},
    {"k", kKi},
    {"KiB", kKi},
    {"KB", 1000ull},
    {"M", kKi * kKi},
    {"MiB", kKi * kKi},
    {"MB", 1000ull * 1000},
    {"G", kKi * kKi * kKi},
    {"GiB", kKi * kKi * kKi},
    {"GB", 1000ull * 1000 * 1000},
    {"T", kKi * kKi * kKi * kKi},
    {"TiB", kKi * kKi * kKi * kKi},
    {"TB", 1000ull * 1000 * 1000 * 1000},
    {"P", kKi * kKi * kKi * kKi * kKi},
    {"PiB", kKi * kKi * kKi * kKi * kKi},
}};

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// A decimal number split into its integer part and its fraction as an exact
// ratio (digits / 10^scale), so "1.5" is 1 + 5/10 with no floating point.
struct Decimal {
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;
  std::uint64_t fraction_scale = 1;
  bool has_fraction = false;
};

// Reads the leading number of `text`; on success `rest` holds the unit.
Result<Decimal> parse_decimal(std::string_view text, std::string_view what,
                              std::string_view* rest) {
  Decimal number;
  std::size_t pos = 0;
  if (text.empty()) return make_error("empty " + std::string(what));
  if (text[0] == '-') return make_error(std::string(what) + " must not be negative: " + quoted(text));
  if (text[0] == '+') pos = 1;
  std::size_t digits = 0;
  for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++digits) {
    if (__builtin_mul_overflow(number.whole, 10u, &number.whole) ||
        __builtin_add_overflow(number.whole, static_cast<unsigned>(text[pos] - '0'),
                               &number.whole)) {
      return make_error(std::string(what) + " " + quoted(text) + " is too large");
    }
  }
  if (pos < text.size() && text[pos] == '.') {
    number.has_fraction = true;
    ++pos;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++digits) {
      // Digits beyond 18 places cannot change a whole byte or nanosecond.
      if (number.fraction_scale >= 1000000000000000000ull) continue;
      number.fraction = number.fraction * 10 + static_cast<unsigned>(text[pos] - '0');
      number.fraction_scale *= 10;
    }
  }
  if (digits == 0) {
    return make_error("invalid " + std::string(what) + " " + quoted(text) +
                      ": expected a number first");
  }
  *rest = text.substr(pos);
  return number;
}

// whole * multiplier + fraction * multiplier / scale, or nullopt on overflow.
std::optional<std::uint64_t> scale(const Decimal& number, std::uint64_t multiplier) {
  std::uint64_t result = 0;
  if (__builtin_mul_overflow(number.whole, multiplier, &result)) return std::nullopt;
  unsigned __int128 part = static_cast<unsigned __int128>(number.fraction) * multiplier;
  part /= number.fraction_scale;
  if (part > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
  if (__builtin_add_overflow(result, static_cast<std::uint64_t>(part), &result)) {
    return std::nullopt;
  }
  return result;
}

}  // namespace

bool is_percentage(std::string_view text) { return !text.empty() && text.back() == '%'; }

Result<std::uint64_t> parse_size(std::string_view text,
                                 std::optional<std::uint64_t> capacity_bytes) {
  std::string_view unit;
  Result<Decimal> number = parse_decimal(text, "size", &unit);
  if (!number) return number.error();

  if (unit == "%") {
    if (!capacity_bytes) {
      return make_error("size " + quoted(text) +
                        " is a percentage, but no device capacity is known here");
    }
    if (number->whole > 100 || (number->whole == 100 && number->fraction != 0)) {
      return make_error("size " + quoted(text) + " is more than 100%");
    }
    // capacity * percent / 100, exactly, in 128 bits.
    unsigned __int128 scaled =
        static_cast<unsigned __int128>(*capacity_bytes) * number->whole * number->fraction_scale +
        static_cast<unsigned __int128>(*capacity_bytes) * number->fraction;
    scaled /= static_cast<unsigned __int128>(100) * number->fraction_scale;
    return static_cast<std::uint64_t>(scaled);
  }

  for (const Unit& candidate : kSizeUnits) {
    if (candidate.name != unit) continue;
    if (candidate.multiplier == 1 && number->has_fraction) {
      return make_error("size " + quoted(text) + " has a fraction of a byte");
    }
    std::optional<std::uint64_t> bytes = scale(*number, candidate.multiplier);
    if (!bytes) return make_error("size " + quoted(text) + " does not fit in 64 bits");
    return *bytes;
  }
  return make_error("unknown unit " + quoted(unit) + " in size " + quoted(text) +
                    " (use B, KiB, MiB, GiB, TiB, K, M, G, T, KB, MB, GB, TB or %)");
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
  static constexpr std::array<Unit, 6> kDurationUnits = {{
      {"ns", 1},
      {"us", 1000},
      {"ms", 1000000},
      {"s", 1000000000ull},
      {"m", 60ull * 1000000000ull},
      {"h", 3600ull * 1000000000ull},
  }};
  std::string_view unit;
  Result<Decimal> number = parse_decimal(text, "duration", &unit);
  if (!number) return number.error();
  if (unit.empty()) {
    return make_error("duration " + quoted(text) + " needs a unit (ns, us, ms, s, m or h)");
  }
  for (const Unit& candidate : kDurationUnits) {
    if (candidate.name != unit) continue;
    std::optional<std::uint64_t> ns = scale(*number, candidate.multiplier);
    if (!ns || *ns > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return make_error("duration " + quoted(text) + " is too long");
    }
    return std::chrono::nanoseconds(static_cast<std::int64_t>(*ns));
  }
  return make_error("unknown unit " + quoted(unit) + " in duration " + quoted(text) +
                    " (use ns, us, ms, s, m or h)");
}

}  // namespace gpushare
