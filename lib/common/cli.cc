#include "common/cli.h"

#include <iostream>
#include <string>

#include "common/diag.h"
#include "common/version.h"

namespace gpushare::cli {

void configure(CLI::App& app, std::string_view program) {
  std::string name(program);
  app.set_version_flag("--version", name + " " + version_line(), "Print the version and exit");
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer("For more details see " + name + "(1).");
  app.get_formatter()->column_width(30);
}

std::optional<int> parse(CLI::App& app, int argc, char** argv, int usage_status) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      // --help or --version: CLI11 prints the right text (a subcommand's
      // own help when one was named) on stdout.
      app.exit(e, std::cout, std::cerr);
      return 0;
    }
    diag::error(e.what());
    diag::usage_hint();
    return usage_status;
  }
  return std::nullopt;
}

}  // namespace gpushare::cli
