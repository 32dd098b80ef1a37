#include "vocab/size.h"

namespace gpushare {
namespace {

struct Unit {
  std::string_view name;
  std::uint64_t multiplier;
};

constexpr std::uint64_t kKi = 1ull << 10;
constexpr Unit kSizeUnits[] = {
    {"", 1},
    {"B", 1},
    {"K", kKi},
    {"k", kKi},
    {"KiB", kKi},
    {"KB", 1000ull},
    {"M", kKi* kKi},
    {"MiB", kKi* kKi},
    {"MB", 1000ull * 1000},
    {"G", kKi* kKi* kKi},
    {"GiB", kKi* kKi* kKi},
    {"GB", 1000ull * 1000 * 1000},
    {"T", kKi* kKi* kKi* kKi},
    {"TiB", kKi* kKi* kKi* kKi},
    {"TB", 1000ull * 1000 * 1000 * 1000},
    {"P", kKi* kKi* kKi* kKi* kKi},
    {"PiB", kKi* kKi* kKi* kKi* kKi},
};

}  // namespace

SizeError parse_decimal_prefix(std::string_view text, SizeSpec* spec, std::string_view* rest) {
  *spec = SizeSpec{};
  std::size_t pos = 0;
  if (text.empty()) return SizeError::kEmpty;
  if (text[0] == '-') return SizeError::kNegative;
  if (text[0] == '+') pos = 1;
  std::size_t digits = 0;
  for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++digits) {
    if (__builtin_mul_overflow(spec->whole, 10u, &spec->whole) ||
        __builtin_add_overflow(spec->whole, static_cast<unsigned>(text[pos] - '0'), &spec->whole)) {
      return SizeError::kTooLarge;
    }
  }
  if (pos < text.size() && text[pos] == '.') {
    spec->has_fraction = true;
    ++pos;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++digits) {
      // Digits beyond 18 places cannot change a whole byte or nanosecond.
      if (spec->fraction_scale >= 1000000000000000000ull) continue;
      spec->fraction = spec->fraction * 10 + static_cast<unsigned>(text[pos] - '0');
      spec->fraction_scale *= 10;
    }
  }
  if (digits == 0) return SizeError::kNoNumber;
  // remove_prefix, not substr: substr may throw, and this code links without libstdc++.
  text.remove_prefix(pos);
  *rest = text;
  return SizeError::kNone;
}

bool scale_decimal(const SizeSpec& number, std::uint64_t multiplier, std::uint64_t* result) {
  if (__builtin_mul_overflow(number.whole, multiplier, result)) return false;
  unsigned __int128 part = static_cast<unsigned __int128>(number.fraction) * multiplier;
  part /= number.fraction_scale;
  if (part > ~0ull) return false;
  return !__builtin_add_overflow(*result, static_cast<std::uint64_t>(part), result);
}

bool size_spec_positive(const SizeSpec& spec) {
  if (spec.percent) return spec.whole != 0 || spec.fraction != 0;
  std::uint64_t bytes = 0;
  return scale_decimal(spec, spec.multiplier, &bytes) && bytes != 0;
}

SizeError parse_size_spec(std::string_view text, SizeSpec* spec, std::string_view* unit) {
  SizeError error = parse_decimal_prefix(text, spec, unit);
  if (error != SizeError::kNone) return error;
  if (*unit == "%") {
    spec->percent = true;
    if (spec->whole > 100 || (spec->whole == 100 && spec->fraction != 0)) {
      return SizeError::kPercentOverHundred;
    }
    return SizeError::kNone;
  }
  for (const Unit& candidate : kSizeUnits) {
    if (candidate.name != *unit) continue;
    if (candidate.multiplier == 1 && spec->has_fraction) return SizeError::kFractionOfByte;
    spec->multiplier = candidate.multiplier;
    std::uint64_t ignored;
    return scale_decimal(*spec, spec->multiplier, &ignored) ? SizeError::kNone
                                                            : SizeError::kOverflow;
  }
  return SizeError::kUnknownUnit;
}

SizeError resolve_size(const SizeSpec& spec, bool has_capacity, std::uint64_t capacity_bytes,
                       std::uint64_t* bytes) {
  if (!spec.percent) {
    return scale_decimal(spec, spec.multiplier, bytes) ? SizeError::kNone : SizeError::kOverflow;
  }
  if (!has_capacity) return SizeError::kPercentNoCapacity;
  // capacity * percent / 100, exactly, in 128 bits; at most capacity.
  unsigned __int128 scaled =
      static_cast<unsigned __int128>(capacity_bytes) * spec.whole * spec.fraction_scale +
      static_cast<unsigned __int128>(capacity_bytes) * spec.fraction;
  scaled /= static_cast<unsigned __int128>(100) * spec.fraction_scale;
  *bytes = static_cast<std::uint64_t>(scaled);
  return SizeError::kNone;
}

const char* size_error_reason(SizeError error) {
  switch (error) {
    case SizeError::kEmpty:
      return "is empty";
    case SizeError::kNegative:
      return "is negative";
    case SizeError::kNoNumber:
      return "is not a number";
    case SizeError::kTooLarge:
      return "is too large";
    case SizeError::kFractionOfByte:
      return "has a fraction of a byte";
    case SizeError::kUnknownUnit:
      return "has an unknown unit";
    case SizeError::kOverflow:
      return "does not fit in 64 bits";
    case SizeError::kPercentNoCapacity:
      return "is a percentage, but no device capacity is known here";
    case SizeError::kPercentOverHundred:
      return "is more than 100%";
    case SizeError::kNone:
      break;
  }
  return "is invalid";
}

}  // namespace gpushare
