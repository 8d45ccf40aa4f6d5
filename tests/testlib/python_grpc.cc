#include "tests/testlib/python_grpc.h"

namespace devmgr::testing {
namespace {

constexpr char kProtoc[] = "/usr/bin/protoc";
constexpr char kGrpcPythonPlugin[] = "/usr/bin/grpc_python_plugin";

}  // namespace

std::optional<std::string> MissingPythonGrpc() {
  for (const char* tool : {kPython, kProtoc, kGrpcPythonPlugin}) {
    if (!std::filesystem::exists(tool)) return std::string(tool) + " is not installed";
  }
  ProcessResult probe = RunProcess({kPython, "-c", "import grpc, google.protobuf"});
  if (probe.exit_code != 0) {
    return "Debian's python3-grpcio and python3-protobuf are not installed: " + probe.err;
  }
  return std::nullopt;
}

ProcessResult GeneratePythonStubs(const std::filesystem::path& proto_root, const std::string& proto,
                                  const std::filesystem::path& out) {
  std::filesystem::create_directories(out);
  return RunProcess({kProtoc, "--proto_path=" + proto_root.string(), "--python_out=" + out.string(),
                     "--grpc_python_out=" + out.string(),
                     std::string("--plugin=protoc-gen-grpc_python=") + kGrpcPythonPlugin, proto});
}

}  // namespace devmgr::testing
