// Peers written with Python's grpcio (Debian's python3-grpcio), for interop tests: a second gRPC
// implementation must read and write the same wire. Their stubs are generated from our protos
// at test time, with protoc and grpc_python_plugin.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "tests/testlib/subprocess.h"

namespace devmgr::testing {

inline constexpr char kPython[] = "/usr/bin/python3";

// MissingPythonGrpc: why a Python gRPC peer cannot run here (a tool or a Python package
// missing), or nullopt when it can. Tests skip with the reason.
std::optional<std::string> MissingPythonGrpc();

// GeneratePythonStubs writes the Python messages and gRPC stubs of `proto` (its path under
// `proto_root`, as imports name it) into `out`, which it creates. protoc's exit code and output.
ProcessResult GeneratePythonStubs(const std::filesystem::path& proto_root, const std::string& proto,
                                  const std::filesystem::path& out);

}  // namespace devmgr::testing
