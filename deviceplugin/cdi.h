// CDI (Container Device Interface) spec files for a plugin's devices.
//
// With CDI on, the SDK writes one spec file per device type into a folder the container runtime
// reads (default /var/run/cdi), names the devices in Allocate as "<vendor>/<class>=<device ID>",
// and removes its files again on shutdown. The file is cdiVersion 0.5.0, the version the seed
// design writes and every CDI-aware runtime reads; each device's containerEdits hold its device
// nodes, envs and mounts from the DeviceTree (a device plugin's without envs: with_envs). Files are
// replaced atomically (temporary file, fsync, rename, fsync of the folder), so a runtime never
// reads half a spec.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/file_id.h"
#include "common/file_store.h"
#include "deviceplugin/device_tree.h"

namespace devmgr::deviceplugin {

inline constexpr char kCdiVersion[] = "0.5.0";
inline constexpr char kDefaultCdiFolder[] = "/var/run/cdi";

struct CdiOptions {
  std::filesystem::path folder = kDefaultCdiFolder;
  // Vendor of the CDI kind, a domain name such as "example.com".
  std::string vendor{};
  // Class of the CDI kind. Empty: each device type is its own class ("example.com/gpu").
  std::string class_name{};
  // Device type -> its CDI kind "<vendor>/<class>", for the types whose kind is not the one
  // vendor and class_name give (a plugin serving several vendors' devices).
  std::map<std::string, std::string, std::less<>> kinds{};
  // Whether each device's containerEdits carry its envs. A DRA driver's do: its CDI devices
  // are all a container gets. A device plugin's Plugin writes them without: its Allocate answer
  // carries the envs, with the values of a key that several devices set joined, and a runtime
  // applies CDI edits after the answer's envs, one device after another, so a device's own
  // value would replace the joined one (the last device's would win).
  bool with_envs = true;
  // Faults for tests, passed to the FileStore that writes the spec files.
  FileStore::FaultHook fault_hook{};
};

// IsValidCdiKind: "<vendor>/<class>" as the CDI library accepts it: each part made of ASCII
// letters, digits, '-', '_' and '.', beginning with a letter and ending with a letter or digit.
bool IsValidCdiKind(absl::string_view kind);

// IsValidCdiDeviceName: a device name the CDI library accepts: ASCII letters, digits, '-', '_',
// '.' and ':', beginning and ending with a letter or digit. The CDI name of a device is its ID,
// and a runtime refuses a whole spec for one device with an invalid name.
bool IsValidCdiDeviceName(absl::string_view name);

// CdiKind is "<vendor>/<class>" for `device_type` under `options`.
std::string CdiKind(const CdiOptions& options, absl::string_view device_type);

// CdiDeviceName is the fully qualified name Allocate returns: "<kind>=<device ID>".
std::string CdiDeviceName(const CdiOptions& options, absl::string_view device_type,
                          absl::string_view device_id);

// CdiSpecFileName is the file of `device_type` inside options.folder: "<vendor>-<class>.json"
// (the class also carries the device type when class_name is set, so types never share a file;
// the kinds given in options.kinds must be distinct for the same reason).
std::string CdiSpecFileName(const CdiOptions& options, absl::string_view device_type);

// InCdiSpec: device `device_id` is one of the spec's devices. Its ID must be a valid CDI device
// name (a runtime refuses the whole spec for one that is not), and `info` must give its CDI
// device something to do: device nodes, mounts, or envs when options.with_envs (CDI refuses a
// device without edits, and with it the whole spec: "empty container edits"). BuildCdiSpec
// leaves any other device out, and Allocate names no CDI device for it: its device nodes and
// mounts reach the container through the Allocate answer alone.
bool InCdiSpec(const CdiOptions& options, absl::string_view device_id, const DeviceInfo& info);

// BuildCdiSpec renders the spec of `devices` (those InCdiSpec) as JSON. Unhealthy
// devices are included: a container that already holds one must still start after a restart of
// the runtime.
std::string BuildCdiSpec(const CdiOptions& options, absl::string_view device_type,
                         const DeviceMap& devices);

// WriteCdiSpec atomically replaces the spec file of `device_type`. InvalidArgument if the
// names make an invalid file name or CDI kind; an I/O error's status otherwise, which leaves the
// new file in place when it came after the rename (the folder's sync). With `placed`, it then
// says which file at the path is this write's, by what it holds: the one holding the bytes
// written, after an error past the rename too, or nullopt when none does (the write failed
// before its rename, or another writer's file of other bytes replaced it at once). Another
// writer's file of the same bytes is taken for this write's. Blocks on file I/O.
absl::Status WriteCdiSpec(const CdiOptions& options, absl::string_view device_type,
                          const DeviceMap& devices, std::optional<FileId>* placed = nullptr);

// RemoveCdiSpec deletes the spec file of `device_type`; OK if it is already gone.
absl::Status RemoveCdiSpec(const CdiOptions& options, absl::string_view device_type);

}  // namespace devmgr::deviceplugin
