// JSON Lines in and out (docs/design.md, "Output").
//
// The reader accepts any sequence of JSON texts separated by whitespace
// (one per line, several on a line, or pretty-printed across lines), like
// jq. A malformed record is reported as "SOURCE: record N: message" and the
// reader resynchronises at the next line, so one bad line does not hide the
// records after it.
//
// The writer prints one compact object per line, "kind" and "version" first,
// flushed per record so a consumer in a pipeline sees it at once. Strings
// that are not valid UTF-8 (argv, /proc, file names) are written with
// U+FFFD in place of the bad bytes instead of failing.
//
// Only this header's users that build or inspect values include the full
// <nlohmann/json.hpp>; the declarations here need just the forward header.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpushare {

class JsonLinesReader {
 public:
  /// `source_name` prefixes errors: "stdin", or a file name.
  JsonLinesReader(std::istream& in, std::string source_name);

  /// The next JSON text; nullopt at the end of input; or an Error naming the
  /// record. After an Error, next() continues with the following line.
  Result<std::optional<nlohmann::json>> next();

  /// 1-based number of the record last returned (or failed).
  std::size_t record_number() const { return record_number_; }
  const std::string& source_name() const { return source_name_; }

 private:
  std::istream& in_;
  std::string source_name_;
  std::size_t record_number_ = 0;
};

class JsonLinesWriter {
 public:
  explicit JsonLinesWriter(std::ostream& out);

  /// Writes {"kind":KIND,"version":VERSION, ...fields} on one line and
  /// flushes. `fields` must be an object; its own "kind"/"version" are ignored.
  void write(std::string_view kind, int version, const nlohmann::ordered_json& fields);

 private:
  std::ostream& out_;
};

/// The line write() would print, without the newline (for tests and logs).
std::string to_json_line(std::string_view kind, int version, const nlohmann::ordered_json& fields);

/// A JSON library exception's message without its id: nlohmann's start with
/// "[json.exception.parse_error.101] ", which means nothing to a user.
std::string without_exception_id(const std::string& what);

/// Compact JSON of any value, invalid UTF-8 replaced, never throwing.
std::string dump_compact(const nlohmann::ordered_json& value);

}  // namespace gpushare
