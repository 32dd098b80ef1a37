#include "common/diag.h"

namespace gpushare::diag {
namespace {

bool continuation(std::string_view text, std::size_t i, unsigned char low = 0x80,
                  unsigned char high = 0xbf) {
  if (i >= text.size()) return false;
  auto c = static_cast<unsigned char>(text[i]);
  return c >= low && c <= high;
}

/// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no
/// overlong forms, no surrogates, nothing past U+10FFFF), or 0.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return continuation(text, i + 1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    unsigned char low = c == 0xe0 ? 0xa0 : 0x80;
    unsigned char high = c == 0xed ? 0x9f : 0xbf;
    return continuation(text, i + 1, low, high) && continuation(text, i + 2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    unsigned char low = c == 0xf0 ? 0x90 : 0x80;
    unsigned char high = c == 0xf4 ? 0x8f : 0xbf;
    return continuation(text, i + 1, low, high) && continuation(text, i + 2) &&
                   continuation(text, i + 3)
               ? 4
               : 0;
  }
  return 0;
}

/// One character of `text` at `*i`, as it is shown, and moves past it: a
/// printable character as it is, anything else as escapes.
std::string next_shown(std::string_view text, std::size_t* i) {
  auto c = static_cast<unsigned char>(text[*i]);
  std::size_t length = utf8_length(text, *i);
  bool c1 = length == 2 && c == 0xc2 && static_cast<unsigned char>(text[*i + 1]) < 0xa0;
  if (c == '\t' || (c >= 0x20 && c < 0x7f) || (c >= 0x80 && length > 0 && !c1)) {
    std::string out(text.substr(*i, length));
    *i += length;
    return out;
  }
  std::size_t bytes = c1 ? 2 : 1;
  std::string out;
  for (std::size_t k = 0; k < bytes; ++k) {
    auto b = static_cast<unsigned char>(text[*i + k]);
    if (b == '\n') {
      out += "\\n";
    } else if (b == '\r') {
      out += "\\r";
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  *i += bytes;
  return out;
}

struct State {
  std::string program = "gpushare";
  Verbosity level = Verbosity::kNormal;
  std::FILE* stream = nullptr;
};

State& state() {
  static State instance;
  return instance;
}

void emit(std::string_view severity, std::string_view message) {
  std::string line = state().program;
  line += ": ";
  line += severity;
  line += ": ";
  // Each line printable; the message's own line breaks (an excerpt below
  // an error) stay.
  for (std::size_t start = 0; start <= message.size();) {
    std::size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    line += printable(message.substr(start, end - start));
    line += '\n';
    start = end + 1;
  }
  std::FILE* out = state().stream ? state().stream : stderr;
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

}  // namespace

void set_program_name(std::string_view name) { state().program = std::string(name); }
const std::string& program_name() { return state().program; }
void set_verbosity(Verbosity level) { state().level = level; }
void set_stream(std::FILE* stream) { state().stream = stream; }

void error(std::string_view message) { emit("error", message); }

void warning(std::string_view message) {
  if (state().level >= Verbosity::kNormal) emit("warning", message);
}

void note(std::string_view message) {
  if (state().level >= Verbosity::kVerbose) emit("note", message);
}

void debug(std::string_view message) {
  if (state().level >= Verbosity::kDebug) emit("debug", message);
}

void usage_hint() {
  std::string line = "Try '" + state().program + " --help' for more information.\n";
  std::FILE* out = state().stream ? state().stream : stderr;
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) out += next_shown(text, &i);
  return out;
}

std::string at(std::string_view file, long line, long column, std::string_view message) {
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
         std::string(message);
}

std::string excerpt(std::string_view source_line, long column) {
  std::string shown;
  std::string caret_line;
  long character = 1;
  for (std::size_t i = 0; i < source_line.size(); ++character) {
    std::string part = next_shown(source_line, &i);
    if (character < column) {
      // Keep tabs so the caret lines up under tab-indented source; an
      // escape is as wide as its text, any other character one column.
      caret_line += part == "\t"                         ? std::string("\t")
                    : part.size() > 1 && part[0] == '\\' ? std::string(part.size(), ' ')
                                                         : std::string(" ");
    }
    shown += part;
  }
  if (column > character) caret_line.append(static_cast<std::size_t>(column - character), ' ');
  return "  " + shown + "\n  " + caret_line + "^";
}

}  // namespace gpushare::diag
