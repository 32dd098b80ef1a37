#include "common/diag.h"

namespace gpushare::diag {
namespace {

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
  line += message;
  line += '\n';
  std::FILE* out = state().stream ? state().stream : stderr;
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

}  // namespace

void set_program_name(std::string_view name) { state().program = std::string(name); }
const std::string& program_name() { return state().program; }
void set_verbosity(Verbosity level) { state().level = level; }
Verbosity verbosity() { return state().level; }
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

std::string at(std::string_view file, long line, long column, std::string_view message) {
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
         std::string(message);
}

std::string excerpt(std::string_view source_line, long column) {
  std::string caret_line(column > 1 ? static_cast<std::size_t>(column - 1) : 0, ' ');
  // Keep tabs so the caret lines up under tab-indented source.
  for (std::size_t i = 0; i < caret_line.size() && i < source_line.size(); ++i) {
    if (source_line[i] == '\t') caret_line[i] = '\t';
  }
  return "  " + std::string(source_line) + "\n  " + caret_line + "^";
}

}  // namespace gpushare::diag
