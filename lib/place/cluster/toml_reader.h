// Strict reading of toml++ tables, for the cluster loader.
//
// toml++ accepts unknown keys silently and reports a wrong type only as an
// empty optional. TomlReader walks each table by hand: every key must have
// a handler, every value goes through a checked getter, and every error
// reads "FILE:LINE:COL: message" with the source line and a caret under
// the offending key or value. Only the TOML code includes this header.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "place/cluster/cluster.h"

namespace gpushare::place {

inline constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
inline constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();

class TomlReader {
 public:
  TomlReader(std::string_view text, std::string_view source_name);

  /// The document, or its syntax error at FILE:LINE:COL.
  Result<toml::table> parse() const;

  /// A part of the document: the lines from `first_line` (1-based) on,
  /// parsed alone. Errors at its nodes still name the document's lines.
  Result<toml::table> parse_part(std::string_view part, long first_line);

  /// The document in parts that parse alone, split before each line that
  /// is exactly SPLIT_LINE ("[[node]]"): toml++ looks up each array of
  /// tables in a list of all of them, so a document of 85,000 nodes parsed
  /// whole costs time quadratic in its nodes, parsed in parts linear. One
  /// part when a multi-line string could hold such a line.
  struct Part {
    std::string_view text;
    long first_line;
  };
  std::vector<Part> split_before(std::string_view split_line) const;

  /// Whether the source at `where` starts with `prefix` ("[[" for an array
  /// of tables made by headers, not an inline array).
  bool source_starts_with(const toml::source_region& where, std::string_view prefix) const;

  Error error_at(const toml::source_region& where, std::string_view message) const;
  Error wrong_type(const toml::key& key, const toml::node& node, std::string_view want) const;
  /// "WHERE has no 'KEY'", at the table.
  Error missing(const toml::table& table, std::string_view where, std::string_view key) const;

  /// A name or id: not empty, no control characters. `free_text` (a GPU
  /// model) may be empty and hold any character; no message quotes it.
  Result<std::string> get_string(const toml::key& key, const toml::node& node,
                                 bool free_text = false) const;
  Result<std::int64_t> get_integer(const toml::key& key, const toml::node& node, std::int64_t min,
                                   std::int64_t max) const;
  /// A fraction in [0, 1]; TOML integers 0 and 1 are accepted as well.
  Result<double> get_fraction(const toml::key& key, const toml::node& node) const;
  Result<bool> get_bool(const toml::key& key, const toml::node& node) const;
  Result<Order> get_order(const toml::key& key, const toml::node& node) const;
  Result<Qos> get_class(const toml::key& key, const toml::node& node) const;
  /// A size string ("80GiB") in bytes.
  Result<std::uint64_t> get_size(const toml::key& key, const toml::node& node) const;

  using KeyHandler = std::function<Status(const toml::key&, const toml::node&)>;

  /// Calls the handler of each key in `table`; a key with no handler is an
  /// error naming the keys `where` accepts.
  Status walk(const toml::table& table, std::string_view where,
              const std::vector<std::pair<std::string_view, KeyHandler>>& handlers) const;

  /// The tables of an array of tables (`[[name]]`), or an error.
  Result<std::vector<const toml::table*>> get_tables(const toml::key& key, const toml::node& node,
                                                     std::string_view header) const;

  // Handlers that check a key's value and store it in *out. When `at` is
  // given, it is set to the value's node: whether the key was given, and
  // where, for later errors. The reader must outlive the handlers, and the
  // document the nodes.
  KeyHandler bind_string(std::string* out, const toml::node** at = nullptr,
                         bool free_text = false) const;
  KeyHandler bind_integer(int* out, std::int64_t min, const toml::node** at = nullptr) const;
  KeyHandler bind_integer(std::optional<int>* out, std::int64_t min) const;
  KeyHandler bind_integer(std::int64_t* out, std::int64_t min,
                          const toml::node** at = nullptr) const;
  KeyHandler bind_bytes(std::uint64_t* out, const toml::node** at = nullptr) const;
  KeyHandler bind_size(std::uint64_t* out, const toml::node** at = nullptr) const;
  KeyHandler bind_fraction(double* out) const;
  KeyHandler bind_bool(bool* out) const;
  KeyHandler bind_order(Order* out) const;
  KeyHandler bind_class(Qos* out, const toml::node** at = nullptr) const;
  /// A sub-table (`[a.b]`).
  KeyHandler bind_table(const toml::table** out) const;
  /// An array of tables; `header` names it in errors ("[[node.gpu]]").
  KeyHandler bind_tables(std::vector<const toml::table*>* out, std::string header) const;

  const std::string& source_name() const { return source_name_; }

 private:
  std::string_view text_;
  std::string source_name_;
  std::vector<std::string_view> lines_;
  /// Per part parsed (its source path, which its nodes share): the lines
  /// before it.
  std::unordered_map<const std::string*, long> line_offsets_;
};

}  // namespace gpushare::place
