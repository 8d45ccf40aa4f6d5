// The daemon's durable record of admitted pods: the file `devmgr_admitted_pods` beside the
// checkpoint, which makes `devmgr serve` its own pod source across restarts (a kubelet has the
// API server for that). A JSON document, versioned, holding every admitted pod as the device
// manager sees it (identity, containers in order with their kind and device counts):
//   {"version":1,"pods":[{"uid":"...","namespace":"default","name":"demo",
//     "initContainers":[{"name":"setup","type":"init","devices":{"example.com/gpu":1}}],
//     "containers":[{"name":"app","type":"regular","devices":{"example.com/gpu":2}}]}]}
// A pod some of whose container resources DRA serves (DRAExtendedResource) also has
//   "draResourceMappings":[{"container":"app","resource":"example.com/gpu"}]
// and one that held device-plugin devices when it was admitted has "holdsDevices":true: such a
// pod whose devices the checkpoint does not hold was never admitted (PodRegistry::Load). A pod
// being admitted, refused or removed when the record was written has "inFlight":true: it is not
// admitted after a restart, and the devices the checkpoint holds for it are freed.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devicemanager/pod.h"

namespace devmgr::node {

// File name of the record inside the device plugin folder (a valid FileStore name).
inline constexpr char kPodRecordName[] = "devmgr_admitted_pods";

// One pod of the record.
struct RecordedPod {
  devicemanager::Pod pod;
  // The device manager held devices of some device-plugin resource for the pod when the record
  // was written with it (they are in the checkpoint written in the same flush).
  bool holds_devices = false;
  // Its admission or removal was under way: not admitted, whatever else the entry says.
  bool in_flight = false;

  bool operator==(const RecordedPod&) const = default;
};

// EncodePodRecord: the record's bytes for `pods`, in the order given.
std::string EncodePodRecord(const std::vector<RecordedPod>& pods);

// The same in two steps, so that a writer can keep each pod's entry and rewrite the record
// without encoding every pod again: EncodePodRecordEntry is one pod as the record lists it,
// and JoinPodRecord the record's bytes from such entries, in the order given.
std::string EncodePodRecordEntry(const RecordedPod& pod);
std::string JoinPodRecord(const std::vector<absl::string_view>& entries);

// DecodePodRecord reads a record. DataLoss, saying where, for anything that is not a record of
// this version: bad JSON, missing or mistyped fields, an unknown container type, a negative
// device count, an empty or repeated pod UID.
absl::StatusOr<std::vector<RecordedPod>> DecodePodRecord(absl::string_view bytes);

}  // namespace devmgr::node
