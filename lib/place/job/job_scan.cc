// The flat job record read in one pass over memory.
//
// A JSON Lines job is a dozen bytes of keys and a few numbers; building
// nlohmann's tree for it (a std::map, a string per key, a virtual call per
// character through the stream) costs some 25,000 instructions, this a few
// hundred. Being exact is the point, not being general: each rule below
// accepts only inputs on which nlohmann's lexer and job_from_json agree
// with it by construction, and says kNotMine for the rest.
//
//   - Strings: bytes 0x20-0x7E other than '"' and '\'. So no escapes to
//     decode, no UTF-8 to validate, and no control character for
//     get_string to reject.
//   - Numbers: the JSON grammar without a sign. An integer must fit in 64
//     bits (nlohmann makes a larger one a float); a fraction or an
//     exponent is a double read by from_chars, correctly rounded like the
//     strtod nlohmann calls, and one outside double's normal range is
//     not mine (nlohmann's handling of overflow is its own).
//   - Each known field at most once (nlohmann keeps the last of a repeated
//     key); unknown fields are skipped but must still be a string or a
//     number, so their syntax is checked as strictly.
//   - A field's value must be one job_from_json accepts as it stands;
//     a value it would convert (a float number of GPUs) or reject is
//     not mine.
#include "place/job/job_scan.h"

#include <charconv>
#include <cstdint>
#include <optional>

namespace gpushare::place {
namespace {

/// One scalar value as read: a string, an unsigned integer or a double.
struct Value {
  enum Type { kString, kInteger, kDouble } type = kString;
  std::string_view text;
  std::uint64_t integer = 0;
  double number = 0;

  std::optional<double> as_number() const {
    if (type == kInteger) return static_cast<double>(integer);
    if (type == kDouble) return number;
    return std::nullopt;
  }
};

class Scanner {
 public:
  explicit Scanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  /// The outcome so far: once incomplete or not mine, it stays so.
  ScanResult result = ScanResult::kJob;

  bool ok() const { return result == ScanResult::kJob; }
  std::size_t offset(const char* start) const { return static_cast<std::size_t>(p_ - start); }

  bool fail(ScanResult why) {
    if (ok()) result = why;
    return false;
  }

  /// The next byte after whitespace, or false at the end of the text.
  bool peek(char* c) {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    if (p_ == end_) return fail(ScanResult::kIncomplete);
    *c = *p_;
    return true;
  }

  bool expect(char wanted) {
    char c;
    if (!peek(&c)) return false;
    if (c != wanted) return fail(ScanResult::kNotMine);
    ++p_;
    return true;
  }

  /// A string after its opening quote, up to and past the closing one.
  bool string(std::string_view* out) {
    const char* start = p_;
    for (; p_ < end_; ++p_) {
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20 || c > 0x7e || c == '\\') return fail(ScanResult::kNotMine);
    }
    return fail(ScanResult::kIncomplete);
  }

  /// A JSON number without a sign; the byte after it must be in the text,
  /// since only that byte says the number has ended.
  bool number(Value* out) {
    const char* start = p_;
    bool integral = true;
    if (!digits(/*leading=*/true)) return false;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      integral = false;
      if (!digits(false)) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integral = false;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits(false)) return false;
    }
    if (p_ == end_) return fail(ScanResult::kIncomplete);
    if (integral) {
      out->type = Value::kInteger;
      auto [at, error] = std::from_chars(start, p_, out->integer);
      if (error != std::errc() || at != p_) return fail(ScanResult::kNotMine);
    } else {
      out->type = Value::kDouble;
      auto [at, error] = std::from_chars(start, p_, out->number);
      if (error != std::errc() || at != p_) return fail(ScanResult::kNotMine);
      // from_chars gives a subnormal result as a range error, but be sure.
      if (out->number != 0 && !(out->number >= 2.2250738585072014e-308)) {
        return fail(ScanResult::kNotMine);
      }
    }
    return true;
  }

  bool value(Value* out) {
    char c;
    if (!peek(&c)) return false;
    if (c == '"') {
      ++p_;
      out->type = Value::kString;
      return string(&out->text);
    }
    if (c >= '0' && c <= '9') return number(out);
    return fail(ScanResult::kNotMine);  // a sign, a literal, an array, an object
  }

 private:
  /// One or more digits; with `leading`, no leading zero before a digit.
  bool digits(bool leading) {
    const char* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ == end_) return fail(ScanResult::kIncomplete);
    if (p_ == start) return fail(ScanResult::kNotMine);
    if (leading && *start == '0' && p_ - start > 1) return fail(ScanResult::kNotMine);
    return true;
  }

  const char* p_;
  const char* end_;
};

// Known fields, one bit each, so a repeated one is seen.
enum Field : unsigned {
  kId = 1u << 0,
  kKind = 1u << 1,
  kTenant = 1u << 2,
  kGpus = 1u << 3,
  kMem = 1u << 4,
  kPeakMem = 1u << 5,
  kClass = 1u << 6,
  kUtil = 1u << 7,
  kQueued = 1u << 8,
  kNodeOrder = 1u << 9,
  kGpuOrder = 1u << 10,
  kUnknown = 0,
};

Field field_of(std::string_view key) {
  if (key == "id") return kId;
  if (key == "kind") return kKind;
  if (key == "tenant") return kTenant;
  if (key == "gpus") return kGpus;
  if (key == "mem_bytes") return kMem;
  if (key == "peak_mem_bytes") return kPeakMem;
  if (key == "class") return kClass;
  if (key == "util") return kUtil;
  if (key == "queued_s") return kQueued;
  if (key == "node_order") return kNodeOrder;
  if (key == "gpu_order") return kGpuOrder;
  return kUnknown;
}

constexpr std::uint64_t kMaxBytes = static_cast<std::uint64_t>(INT64_MAX);

/// Sets the field from the value as job_from_json would; false when it
/// would not take the value as it stands.
bool apply(Field field, const Value& value, Job* job, std::uint64_t* mem, std::uint64_t* peak) {
  bool is_string = value.type == Value::kString;
  bool is_integer = value.type == Value::kInteger;
  switch (field) {
    case kId:
      if (is_string && !value.text.empty()) {
        job->id = JobId{std::string(value.text), {}};
        return true;
      }
      if (is_integer && value.integer <= kMaxBytes) {
        auto number = static_cast<std::int64_t>(value.integer);
        job->id = JobId{std::to_string(number), number};
        return true;
      }
      return false;
    case kKind:
      return is_string;
    case kTenant:
      if (!is_string || value.text.empty()) return false;
      job->tenant = std::string(value.text);
      return true;
    case kGpus:
      if (!is_integer || value.integer < 1 || value.integer > 1000000000) return false;
      job->gpus = static_cast<std::int64_t>(value.integer);
      return true;
    case kMem:
    case kPeakMem:
      if (!is_integer || value.integer > kMaxBytes) return false;
      *(field == kMem ? mem : peak) = value.integer;
      return true;
    case kClass:
      if (!is_string) return false;
      if (value.text == "production") {
        job->hint = ClassHint::kProduction;
      } else if (value.text == "opportunistic") {
        job->hint = ClassHint::kOpportunistic;
      } else if (value.text == "auto") {
        job->hint = ClassHint::kAuto;
      } else {
        return false;
      }
      return true;
    case kUtil:
    case kQueued: {
      std::optional<double> number = value.as_number();
      if (!number || *number < 0) return false;
      if (field == kUtil) {
        if (*number > 1) return false;
        job->util = *number;
      } else {
        job->queued_s = *number;
      }
      return true;
    }
    case kNodeOrder:
    case kGpuOrder: {
      if (!is_string) return false;
      std::optional<Order> order = parse_order(value.text);
      if (!order) return false;
      (field == kNodeOrder ? job->node_order : job->gpu_order) = *order;
      return true;
    }
    case kUnknown:
      return true;  // ignored, as job_from_json ignores it
  }
  return false;
}

}  // namespace

ScanResult scan_job(std::string_view text, Job* job, std::size_t* consumed) {
  Scanner scan(text);
  *job = Job{};
  if (!scan.expect('{')) return scan.result;
  unsigned seen = 0;
  std::uint64_t mem = 0;
  std::uint64_t peak = 0;
  char c;
  if (!scan.peek(&c)) return scan.result;
  if (c != '}') {
    for (;;) {
      std::string_view key;
      Value value;
      if (!scan.expect('"') || !scan.string(&key) || !scan.expect(':') || !scan.value(&value)) {
        return scan.result;
      }
      Field field = field_of(key);
      if ((seen & field) != 0 || !apply(field, value, job, &mem, &peak)) {
        return ScanResult::kNotMine;
      }
      seen |= field;
      if (!scan.peek(&c)) return scan.result;
      if (c == '}') break;
      if (!scan.expect(',')) return scan.result;
    }
  }
  if (!scan.expect('}')) return scan.result;
  if ((seen & kId) == 0) return ScanResult::kNotMine;  // an error: its words are job.cc's
  job->mem_bytes = (seen & kMem) != 0 ? mem : (seen & kPeakMem) != 0 ? peak : 0;
  *consumed = scan.offset(text.data());
  return ScanResult::kJob;
}

}  // namespace gpushare::place
