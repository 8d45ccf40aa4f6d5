// PlacedSocket: a server's unix socket put at its path in one step, and taken away at the end
// only if it is still the one put there. A process that stops never removes the socket that
// another process (a newer instance of the same plugin or driver) has put at the path since.
//
// gRPC unlinks whatever socket is at the path it is given before it binds there, and that same
// path again when its server stops, whoever's socket is there by then. So the server binds
// bind_path(), a hidden name beside the path, random (TemporarySocketPath: processes in
// containers share pids), and Place() renames the socket onto the path, replacing one there
// without a moment when none is.
#pragma once

#include <filesystem>
#include <optional>

#include "absl/status/status.h"
#include "common/file_id.h"

namespace devmgr {

class PlacedSocket {
 public:
  explicit PlacedSocket(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }
  // Where the server listens before Place.
  const std::filesystem::path& bind_path() const { return bind_path_; }

  // Check: InvalidArgument unless path() is a socket path gRPC can serve (ValidateSocketPath)
  // and bind_path() is one too; the latter fails only for a path within a few bytes of the
  // limit whose own name is shorter than the temporary one, and says so.
  absl::Status Check() const;

  // Place moves the socket bound at bind_path() onto path(). FailedPrecondition when something
  // that is not a socket is at path() (the socket stays at bind_path()); Aborted when another
  // process replaced it at once.
  absl::Status Place();

  // The socket as placed (taken at path() after the move); nullopt before Place or after Remove.
  const std::optional<FileId>& id() const { return id_; }

  // Remove deletes the socket at path() if it is still the one placed there, changed since or
  // not (OK when it is not, or nothing is there). Call it after the server has stopped.
  absl::Status Remove();

 private:
  std::filesystem::path path_;
  std::filesystem::path bind_path_;
  std::optional<FileId> id_;
};

}  // namespace devmgr
