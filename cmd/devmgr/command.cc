#include "cmd/devmgr/command.h"

#include <iostream>
#include <map>

namespace devmgr::cli {

void AddOutputFlag(CLI::App& command, OutputFormat& format) {
  const std::map<std::string, OutputFormat> formats{{"table", OutputFormat::kTable},
                                                    {"json", OutputFormat::kJson}};
  command.add_option("-o,--output", format, "Output format: table (default) or json")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case));
}

int Fail(ExitCode code, absl::string_view reason) {
  std::cerr << "devmgr: " << reason << '\n';
  return code;
}

}  // namespace devmgr::cli
