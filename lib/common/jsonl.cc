#include "common/jsonl.h"

#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>

namespace gpushare {

std::string without_exception_id(const std::string& what) {
  if (!what.empty() && what[0] == '[') {
    std::size_t end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

namespace {

// Skips spaces, tabs, CR and LF; returns true when input remains.
bool skip_whitespace(std::istream& in) {
  for (;;) {
    int c = in.peek();
    if (c == std::char_traits<char>::eof()) return false;
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return true;
    in.get();
  }
}

}  // namespace

JsonLinesReader::JsonLinesReader(std::istream& in, std::string source_name)
    : in_(in), source_name_(std::move(source_name)) {}

Result<std::optional<nlohmann::json>> JsonLinesReader::next() {
  if (!skip_whitespace(in_)) return std::optional<nlohmann::json>();
  ++record_number_;
  nlohmann::json value;
  try {
    in_ >> value;
  } catch (const nlohmann::json::exception& e) {
    // Resynchronise at the next line: the usual case is one bad line.
    in_.clear();
    in_.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    return make_error(source_name_ + ": record " + std::to_string(record_number_) + ": " +
                      without_exception_id(e.what()));
  }
  return std::optional<nlohmann::json>(std::move(value));
}

JsonLinesWriter::JsonLinesWriter(std::ostream& out) : out_(out) {}

void JsonLinesWriter::write(std::string_view kind, int version,
                            const nlohmann::ordered_json& fields) {
  std::string line = to_json_line(kind, version, fields);
  line += '\n';
  out_.write(line.data(), static_cast<std::streamsize>(line.size()));
  out_.flush();
}

std::string to_json_line(std::string_view kind, int version, const nlohmann::ordered_json& fields) {
  nlohmann::ordered_json record = nlohmann::ordered_json::object();
  record["kind"] = kind;
  record["version"] = version;
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      if (it.key() == "kind" || it.key() == "version") continue;
      record[it.key()] = it.value();
    }
  }
  return dump_compact(record);
}

std::string dump_compact(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace gpushare
