#include "place/cluster/toml_reader.h"

#include <sstream>

#include "common/diag.h"
#include "common/units.h"

namespace gpushare::place {
namespace {

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date or time";
  }
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

TomlReader::TomlReader(std::string_view text, std::string_view source_name)
    : text_(text), source_name_(source_name) {
  std::size_t start = 0;
  while (start <= text_.size()) {
    std::size_t end = text_.find('\n', start);
    if (end == std::string_view::npos) end = text_.size();
    std::string_view line = text_.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines_.push_back(line);
    start = end + 1;
  }
}

Result<toml::table> TomlReader::parse() const {
  try {
    return toml::parse(text_, source_name_);
  } catch (const toml::parse_error& e) {
    return error_at(e.source(), std::string(e.description()));
  }
}

Result<toml::table> TomlReader::parse_part(std::string_view part, long first_line) {
  try {
    toml::table root = toml::parse(part, source_name_);
    line_offsets_[root.source().path.get()] = first_line - 1;
    return root;
  } catch (const toml::parse_error& e) {
    line_offsets_[e.source().path.get()] = first_line - 1;
    return error_at(e.source(), std::string(e.description()));
  }
}

std::vector<TomlReader::Part> TomlReader::split_before(std::string_view split_line) const {
  std::vector<Part> parts;
  bool multi_line_strings =
      text_.find("\"\"\"") != std::string_view::npos || text_.find("'''") != std::string_view::npos;
  // Nodes tell their part by its source path: without a name, one part.
  if (multi_line_strings || lines_.empty() || source_name_.empty()) return {Part{text_, 1}};
  std::size_t part_start = 0;
  long part_line = 1;
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    std::string_view line = lines_[i];
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line != split_line || i == 0) continue;
    // lines_ are views into text_: where this one starts is an offset.
    auto offset = static_cast<std::size_t>(lines_[i].data() - text_.data());
    parts.push_back(Part{text_.substr(part_start, offset - part_start), part_line});
    part_start = offset;
    part_line = static_cast<long>(i) + 1;
  }
  parts.push_back(Part{text_.substr(part_start), part_line});
  return parts;
}

bool TomlReader::source_starts_with(const toml::source_region& where,
                                    std::string_view prefix) const {
  long line = static_cast<long>(where.begin.line);
  if (auto it = line_offsets_.find(where.path.get()); it != line_offsets_.end()) line += it->second;
  auto column = static_cast<std::size_t>(where.begin.column);
  if (line < 1 || static_cast<std::size_t>(line) > lines_.size() || column < 1) return false;
  std::string_view text = lines_[static_cast<std::size_t>(line) - 1];
  return column - 1 <= text.size() && text.substr(column - 1).substr(0, prefix.size()) == prefix;
}

Error TomlReader::error_at(const toml::source_region& where, std::string_view message) const {
  long line = static_cast<long>(where.begin.line);
  if (auto it = line_offsets_.find(where.path.get()); it != line_offsets_.end()) line += it->second;
  long column = static_cast<long>(where.begin.column);
  std::string text = diag::at(source_name_, line, column, message);
  if (line >= 1 && static_cast<std::size_t>(line) <= lines_.size()) {
    text += "\n" + diag::excerpt(lines_[static_cast<std::size_t>(line) - 1], column);
  }
  return make_error(std::move(text));
}

Error TomlReader::wrong_type(const toml::key& key, const toml::node& node,
                             std::string_view want) const {
  return error_at(node.source(), "'" + std::string(key.str()) + "' must be " + std::string(want) +
                                     ", not " + type_name(node));
}

Result<std::string> TomlReader::get_string(const toml::key& key, const toml::node& node,
                                           bool free_text) const {
  if (!node.is_string()) return wrong_type(key, node, "a string");
  std::string value = node.as_string()->get();
  if (value.empty() && !free_text) {
    return error_at(node.source(), "'" + std::string(key.str()) + "' must not be empty");
  }
  if (free_text) return value;
  if (std::optional<std::size_t> at = control_character(value)) {
    return error_at(node.source(),
                    "'" + std::string(key.str()) + "' " + control_character_message(value, *at));
  }
  return value;
}

Result<std::int64_t> TomlReader::get_integer(const toml::key& key, const toml::node& node,
                                             std::int64_t min, std::int64_t max) const {
  if (!node.is_integer()) return wrong_type(key, node, "an integer");
  std::int64_t value = node.as_integer()->get();
  if (value < min || value > max) {
    std::string range = max == kMaxInt64 || max == kMaxInt
                            ? "at least " + std::to_string(min)
                            : "between " + std::to_string(min) + " and " + std::to_string(max);
    return error_at(node.source(), "'" + std::string(key.str()) + "' must be " + range + ", not " +
                                       std::to_string(value));
  }
  return value;
}

Result<double> TomlReader::get_fraction(const toml::key& key, const toml::node& node) const {
  double value;
  if (node.is_floating_point()) {
    value = node.as_floating_point()->get();
  } else if (node.is_integer()) {
    value = static_cast<double>(node.as_integer()->get());
  } else {
    return wrong_type(key, node, "a number");
  }
  if (!(value >= 0.0 && value <= 1.0)) {  // also rejects nan
    return error_at(node.source(), "'" + std::string(key.str()) +
                                       "' must be between 0 and 1, not " + format_number(value));
  }
  return value;
}

Result<bool> TomlReader::get_bool(const toml::key& key, const toml::node& node) const {
  if (!node.is_boolean()) return wrong_type(key, node, "a boolean (true or false)");
  return node.as_boolean()->get();
}

Result<Order> TomlReader::get_order(const toml::key& key, const toml::node& node) const {
  Result<std::string> text = get_string(key, node);
  if (!text) return text.error();
  if (std::optional<Order> order = parse_order(*text)) return *order;
  return error_at(node.source(), "'" + std::string(key.str()) +
                                     "' must be \"binpack\" or \"spread\", not \"" + *text + "\"");
}

Result<Qos> TomlReader::get_class(const toml::key& key, const toml::node& node) const {
  Result<std::string> text = get_string(key, node);
  if (!text) return text.error();
  if (std::optional<Qos> job_class = parse_job_class(*text)) return *job_class;
  return error_at(node.source(), "'" + std::string(key.str()) +
                                     "' must be \"production\" or \"opportunistic\", not \"" +
                                     *text + "\"");
}

Result<std::uint64_t> TomlReader::get_size(const toml::key& key, const toml::node& node) const {
  Result<std::string> text = get_string(key, node);
  if (!text) return text.error();
  Result<std::uint64_t> bytes = parse_size(*text);
  if (!bytes) return error_at(node.source(), bytes.error().message);
  return *bytes;
}

Status TomlReader::walk(
    const toml::table& table, std::string_view where,
    const std::vector<std::pair<std::string_view, KeyHandler>>& handlers) const {
  for (auto&& [key, node] : table) {
    const KeyHandler* handler = nullptr;
    for (const auto& [name, candidate] : handlers) {
      if (key.str() == name) handler = &candidate;
    }
    if (handler == nullptr) {
      std::string known;
      for (const auto& [name, candidate] : handlers) {
        known += known.empty() ? "" : ", ";
        known += name;
      }
      return error_at(key.source(), "unknown key '" + std::string(key.str()) + "' in " +
                                        std::string(where) + " (expected " + known + ")");
    }
    if (Status s = (*handler)(key, node); !s) return s;
  }
  return {};
}

Result<std::vector<const toml::table*>> TomlReader::get_tables(const toml::key& key,
                                                               const toml::node& node,
                                                               std::string_view header) const {
  std::vector<const toml::table*> tables;
  if (node.is_array()) {
    for (const toml::node& element : *node.as_array()) {
      if (!element.is_table()) break;
      tables.push_back(element.as_table());
    }
    if (tables.size() == node.as_array()->size()) return tables;
  }
  return error_at(node.source(), "'" + std::string(key.str()) + "' must be an array of tables (" +
                                     std::string(header) + "), not " + type_name(node));
}

namespace {

/// The handler that reads a value with `get` and stores it, converted, in
/// *out: the one shape of almost every key in the cluster file.
template <typename T, typename Get>
TomlReader::KeyHandler store(T* out, const toml::node** at, Get get) {
  return [out, at, get](const toml::key& key, const toml::node& node) -> Status {
    auto value = get(key, node);
    if (!value) return value.error();
    *out = static_cast<T>(*value);
    if (at != nullptr) *at = &node;
    return {};
  };
}

}  // namespace

TomlReader::KeyHandler TomlReader::bind_string(std::string* out, const toml::node** at,
                                               bool free_text) const {
  return store(out, at, [this, free_text](const toml::key& key, const toml::node& node) {
    return get_string(key, node, free_text);
  });
}

TomlReader::KeyHandler TomlReader::bind_integer(int* out, std::int64_t min,
                                                const toml::node** at) const {
  return store(out, at, [this, min](const toml::key& key, const toml::node& node) {
    return get_integer(key, node, min, kMaxInt);
  });
}

TomlReader::KeyHandler TomlReader::bind_integer(std::optional<int>* out, std::int64_t min) const {
  return [this, out, min](const toml::key& key, const toml::node& node) -> Status {
    auto value = get_integer(key, node, min, kMaxInt);
    if (!value) return value.error();
    *out = static_cast<int>(*value);
    return {};
  };
}

TomlReader::KeyHandler TomlReader::bind_integer(std::int64_t* out, std::int64_t min,
                                                const toml::node** at) const {
  return store(out, at, [this, min](const toml::key& key, const toml::node& node) {
    return get_integer(key, node, min, kMaxInt);
  });
}

TomlReader::KeyHandler TomlReader::bind_bytes(std::uint64_t* out, const toml::node** at) const {
  return store(out, at, [this](const toml::key& key, const toml::node& node) {
    return get_integer(key, node, 0, kMaxInt64);
  });
}

TomlReader::KeyHandler TomlReader::bind_size(std::uint64_t* out, const toml::node** at) const {
  return store(out, at, [this](const toml::key& key, const toml::node& node) {
    return get_size(key, node);
  });
}

TomlReader::KeyHandler TomlReader::bind_fraction(double* out) const {
  return store(out, nullptr, [this](const toml::key& key, const toml::node& node) {
    return get_fraction(key, node);
  });
}

TomlReader::KeyHandler TomlReader::bind_bool(bool* out) const {
  return store(out, nullptr, [this](const toml::key& key, const toml::node& node) {
    return get_bool(key, node);
  });
}

TomlReader::KeyHandler TomlReader::bind_order(Order* out) const {
  return store(out, nullptr, [this](const toml::key& key, const toml::node& node) {
    return get_order(key, node);
  });
}

TomlReader::KeyHandler TomlReader::bind_class(Qos* out, const toml::node** at) const {
  return store(out, at, [this](const toml::key& key, const toml::node& node) {
    return get_class(key, node);
  });
}

TomlReader::KeyHandler TomlReader::bind_table(const toml::table** out) const {
  return [this, out](const toml::key& key, const toml::node& node) -> Status {
    if (!node.is_table()) return wrong_type(key, node, "a table");
    *out = node.as_table();
    return {};
  };
}

TomlReader::KeyHandler TomlReader::bind_tables(std::vector<const toml::table*>* out,
                                               std::string header) const {
  return [this, out, header = std::move(header)](const toml::key& key,
                                                 const toml::node& node) -> Status {
    auto tables = get_tables(key, node, header);
    if (!tables) return tables.error();
    *out = std::move(*tables);
    return {};
  };
}

Error TomlReader::missing(const toml::table& table, std::string_view where,
                          std::string_view key) const {
  return error_at(table.source(), std::string(where) + " has no '" + std::string(key) + "'");
}

}  // namespace gpushare::place
