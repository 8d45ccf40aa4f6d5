#include "checkpoint/checksum.h"

#include <array>
#include <utility>

#include "absl/strings/numbers.h"

namespace devmgr::checkpoint::internal {
namespace {

// Where the text goes: a string (SpewText) or straight into the hash (Checksum), so that
// checksumming a large checkpoint never builds its text.
class StringSink {
 public:
  void Append(absl::string_view piece) { text_.append(piece.data(), piece.size()); }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

class FnvSink {
 public:
  void Append(absl::string_view piece) {
    for (char c : piece) {
      hash_ ^= static_cast<unsigned char>(c);
      hash_ *= kPrime;
    }
  }
  uint32_t hash() const { return hash_; }

 private:
  static constexpr uint32_t kOffsetBasis = 2166136261U;
  static constexpr uint32_t kPrime = 16777619U;
  uint32_t hash_ = kOffsetBasis;
};

// Decimal forms of 0..255 (go-spew prints a []byte as space-separated decimal numbers).
const std::array<std::string, 256>& ByteDecimals() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    for (size_t i = 0; i < t.size(); ++i) t[i] = std::to_string(i);
    return t;
  }();
  return table;
}

// go-spew prints a string's raw bytes (no quotes, no escapes) and a nil slice or map as <nil>;
// elements inside a slice or map carry no type prefix. std::map orders int64 keys numerically
// and string keys bytewise, exactly as SortKeys does.
template <typename Sink>
class SpewWriter {
 public:
  explicit SpewWriter(Sink& sink) : sink_(sink) {}

  void Data(const GoCheckpointData& data) {
    if (!data.pod_device_entries.has_value()) {
      Start();
      sink_.Append("<nil>");
    } else {
      StartEntries();
      bool first = true;
      for (const GoPodDevicesEntry& entry : *data.pod_device_entries) {
        if (!first) sink_.Append(" ");
        first = false;
        Entry(entry, data.layout);
      }
      sink_.Append("]");
    }
    Finish(data.registered_devices);
  }

  // Data with every entry given as its head (EntryHead, current layout) and its AllocResp bytes,
  // and every registered resource rendered by Registered, in key order; no entries is the nil
  // list, as Encode writes it.
  void DataOfPieces(const std::vector<EntryPieces>& entries,
                    const std::vector<absl::string_view>& registered_devices) {
    if (entries.empty()) {
      Start();
      sink_.Append("<nil>");
    } else {
      StartEntries();
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) sink_.Append(" ");
        sink_.Append(entries[i].head);
        Bytes(entries[i].alloc_resp);
        sink_.Append("}");
      }
      sink_.Append("]");
    }
    sink_.Append(kRegisteredDevicesField);
    sink_.Append("map[");
    Join(registered_devices);
    sink_.Append("]}");
  }

  // Registered: one key and value of the registered devices map.
  void Registered(const std::string& resource_name, const GoStrings& ids) {
    sink_.Append(resource_name);
    sink_.Append(":");
    Strings(ids);
  }

  void Entry(const GoPodDevicesEntry& entry, GoLayout layout) {
    EntryHead(entry, layout);
    if (!entry.alloc_resp.has_value()) {
      sink_.Append("<nil>");
    } else {
      Bytes(*entry.alloc_resp);
    }
    sink_.Append("}");
  }

  // EntryHead: an entry up to the value of its AllocResp.
  void EntryHead(const GoPodDevicesEntry& entry, GoLayout layout) {
    sink_.Append("{PodUID:(string)");
    sink_.Append(entry.pod_uid);
    sink_.Append(" ContainerName:(string)");
    sink_.Append(entry.container_name);
    sink_.Append(" ResourceName:(string)");
    sink_.Append(entry.resource_name);
    if (layout == GoLayout::kV1) {
      sink_.Append(" DeviceIDs:([]string)");
      Strings(entry.device_ids_v1);
    } else {
      sink_.Append(" DeviceIDs:(checkpoint.DevicesPerNUMA)");
      Map(entry.device_ids, [this](int64_t numa) {
        char buffer[absl::numbers_internal::kFastToBufferSize];
        sink_.Append(absl::string_view(
            buffer,
            static_cast<size_t>(absl::numbers_internal::FastIntToBuffer(numa, buffer) - buffer)));
      });
    }
    sink_.Append(" AllocResp:([]uint8)");
  }

 private:
  // Bytes: a non-nil []byte.
  void Bytes(absl::string_view bytes) {
    sink_.Append("[");
    const auto& decimals = ByteDecimals();
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (i > 0) sink_.Append(" ");
      sink_.Append(decimals[static_cast<unsigned char>(bytes[i])]);
    }
    sink_.Append("]");
  }

  void Start() {
    // The V1 reader renamed its types back to the 1.19 names before hashing, so both layouts
    // share the struct type names and differ only in DeviceIDs.
    sink_.Append("(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)");
  }
  void StartEntries() {
    Start();
    sink_.Append("[");
  }
  static constexpr absl::string_view kRegisteredDevicesField =
      " RegisteredDevices:(map[string][]string)";
  void Finish(const std::optional<std::map<std::string, GoStrings>>& registered_devices) {
    sink_.Append(kRegisteredDevicesField);
    Map(registered_devices, [this](const std::string& key) { sink_.Append(key); });
    sink_.Append("}");
  }
  void Join(const std::vector<absl::string_view>& pieces) {
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (i > 0) sink_.Append(" ");
      sink_.Append(pieces[i]);
    }
  }

  void Strings(const GoStrings& list) {
    if (!list.has_value()) {
      sink_.Append("<nil>");
      return;
    }
    sink_.Append("[");
    for (size_t i = 0; i < list->size(); ++i) {
      if (i > 0) sink_.Append(" ");
      sink_.Append((*list)[i]);
    }
    sink_.Append("]");
  }

  template <typename Key, typename AppendKey>
  void Map(const std::optional<std::map<Key, GoStrings>>& map, AppendKey append_key) {
    if (!map.has_value()) {
      sink_.Append("<nil>");
      return;
    }
    sink_.Append("map[");
    bool first = true;
    for (const auto& [key, ids] : *map) {
      if (!first) sink_.Append(" ");
      first = false;
      append_key(key);
      sink_.Append(":");
      Strings(ids);
    }
    sink_.Append("]");
  }

  Sink& sink_;
};

}  // namespace

std::string SpewText(const GoCheckpointData& data) {
  StringSink sink;
  SpewWriter<StringSink>(sink).Data(data);
  return sink.Take();
}

uint32_t Fnv1a32(absl::string_view bytes) {
  FnvSink sink;
  sink.Append(bytes);
  return sink.hash();
}

uint64_t Checksum(const GoCheckpointData& data) {
  FnvSink sink;
  SpewWriter<FnvSink>(sink).Data(data);
  return sink.hash();
}

std::string SpewEntryHead(const GoPodDevicesEntry& entry) {
  StringSink sink;
  SpewWriter<StringSink>(sink).EntryHead(entry, GoLayout::kCurrent);
  return sink.Take();
}

std::string SpewRegistered(const std::string& resource_name, const GoStrings& ids) {
  StringSink sink;
  SpewWriter<StringSink>(sink).Registered(resource_name, ids);
  return sink.Take();
}

uint64_t ChecksumOfPieces(const std::vector<EntryPieces>& entries,
                          const std::vector<absl::string_view>& registered_devices) {
  FnvSink sink;
  SpewWriter<FnvSink>(sink).DataOfPieces(entries, registered_devices);
  return sink.hash();
}

}  // namespace devmgr::checkpoint::internal
