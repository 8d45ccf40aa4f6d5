#include "dra/health_cache.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/go_json.h"
#include "common/json_depth.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"

namespace devmgr::dra {
namespace {

constexpr absl::string_view kEllipsis = "...";

// Ordered, so that fields are taken in the order the file gives them (a later duplicate wins,
// as with Go's decoder).
using Json = nlohmann::ordered_json;

// The timeout that applies to `device`: its own, or the default for files written before
// devices had one.
absl::Duration TimeoutOf(const DeviceHealth& device) {
  return device.health_check_timeout == absl::ZeroDuration() ? kDefaultHealthTimeout
                                                             : device.health_check_timeout;
}

// --- Writing, as Go's encoding/json writes the kubelet's DevicesHealthMap. ---

// AppendGoTime writes `t` as Go's time.Time.MarshalJSON does (RFC 3339 with as many fractional
// digits as needed), in UTC: Go keeps the kubelet's local zone, which any reader accepts as well.
void AppendGoTime(std::string& out, absl::Time t) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  const absl::CivilSecond civil = absl::ToCivilSecond(t, utc);
  int64_t nanos = absl::ToInt64Nanoseconds(t - absl::FromCivil(civil, utc));
  absl::StrAppendFormat(&out, "\"%04d-%02d-%02dT%02d:%02d:%02d", civil.year(), civil.month(),
                        civil.day(), civil.hour(), civil.minute(), civil.second());
  if (nanos > 0) {
    std::string fraction = absl::StrFormat("%09d", nanos);
    while (fraction.back() == '0') fraction.pop_back();
    absl::StrAppend(&out, ".", fraction);
  }
  out += "Z\"";
}

void AppendDevice(std::string& out, const DeviceHealth& device) {
  out += "{\"PoolName\":";
  AppendGoJsonString(out, device.pool_name);
  out += ",\"DeviceName\":";
  AppendGoJsonString(out, device.device_name);
  out += ",\"Health\":";
  AppendGoJsonString(out, DeviceHealthStatusName(device.health));
  out += ",\"LastUpdated\":";
  AppendGoTime(out, device.last_updated);
  // time.Duration is an int64 of nanoseconds.
  absl::StrAppend(
      &out, ",\"HealthCheckTimeout\":", absl::ToInt64Nanoseconds(device.health_check_timeout));
  out += ",\"Message\":";
  AppendGoJsonString(out, device.message);
  out += '}';
}

// --- Reading, as leniently as Go's decoder where it matters. ---

absl::Status Invalid(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("dra_health_state: ", where, ": ", what));
}

// Go matches a JSON key to a field exactly, or else without regard to case.
bool FieldIs(const std::string& key, absl::string_view field) {
  return absl::EqualsIgnoreCase(key, field);
}

absl::StatusOr<std::string> StringField(const Json& value, absl::string_view where) {
  if (value.is_null()) return std::string();
  if (!value.is_string()) return Invalid(where, "not a string");
  return value.get<std::string>();
}

absl::StatusOr<DeviceHealthStatus> ParseHealth(const Json& value, absl::string_view where) {
  absl::StatusOr<std::string> text = StringField(value, where);
  if (!text.ok()) return text.status();
  if (*text == "Healthy") return DeviceHealthStatus::kHealthy;
  if (*text == "Unhealthy") return DeviceHealthStatus::kUnhealthy;
  // "Unknown", and whatever else: the pod status shows anything else as Unknown too.
  return DeviceHealthStatus::kUnknown;
}

// IsStrictRfc3339: `text` has the layout Go's decoder reads a time.Time from,
// "2006-01-02T15:04:05[.fraction](Z|±hh:mm)", digits where its digits are. absl::ParseTime also
// takes "infinite-future" and "infinite-past", spaces around a time, one-digit fields, a
// lowercase 't' and years of more than four digits.
bool IsStrictRfc3339(absl::string_view text) {
  constexpr absl::string_view kLayout = "dddd-dd-ddTdd:dd:dd";
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.size() < kLayout.size()) return false;
  for (size_t i = 0; i < kLayout.size(); ++i) {
    if (kLayout[i] == 'd' ? !digit(text[i]) : text[i] != kLayout[i]) return false;
  }
  text.remove_prefix(kLayout.size());
  if (!text.empty() && text.front() == '.') {
    text.remove_prefix(1);
    const size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
    if (digits == 0) return false;
    text.remove_prefix(digits);
  }
  if (text == "Z") return true;
  return text.size() == 6 && (text[0] == '+' || text[0] == '-') && digit(text[1]) &&
         digit(text[2]) && text[3] == ':' && digit(text[4]) && digit(text[5]);
}

absl::StatusOr<absl::Time> ParseGoTime(const Json& value, absl::string_view where) {
  // Go leaves a time.Time untouched by null: the zero time.
  if (value.is_null()) return GoZeroTime();
  if (!value.is_string()) return Invalid(where, "not a time");
  const std::string& text = value.get_ref<const std::string&>();
  if (!IsStrictRfc3339(text)) {
    return Invalid(where, absl::StrCat("not an RFC 3339 time: \"", text, "\""));
  }
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &error)) {
    return Invalid(where, absl::StrCat("not an RFC 3339 time: ", error));
  }
  return t;
}

absl::StatusOr<absl::Duration> ParseGoDuration(const Json& value, absl::string_view where) {
  if (value.is_null()) return absl::ZeroDuration();
  // Go reads an int64 from an integer literal only (no fraction, no exponent).
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return absl::Nanoseconds(value.get<int64_t>());
  }
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::Nanoseconds(static_cast<int64_t>(value.get<uint64_t>()));
  }
  return Invalid(where, "not an int64 of nanoseconds");
}

absl::StatusOr<DeviceHealth> ParseDevice(const Json& value, const std::string& where) {
  DeviceHealth device;
  if (value.is_null()) return device;
  if (!value.is_object()) return Invalid(where, "not an object");
  for (const auto& item : value.items()) {
    const std::string& key = item.key();
    const Json& field = item.value();
    const std::string field_where = absl::StrCat(where, ".", key);
    if (FieldIs(key, "PoolName")) {
      absl::StatusOr<std::string> text = StringField(field, field_where);
      if (!text.ok()) return text.status();
      device.pool_name = *std::move(text);
    } else if (FieldIs(key, "DeviceName")) {
      absl::StatusOr<std::string> text = StringField(field, field_where);
      if (!text.ok()) return text.status();
      device.device_name = *std::move(text);
    } else if (FieldIs(key, "Health")) {
      absl::StatusOr<DeviceHealthStatus> health = ParseHealth(field, field_where);
      if (!health.ok()) return health.status();
      device.health = *health;
    } else if (FieldIs(key, "LastUpdated")) {
      absl::StatusOr<absl::Time> t = ParseGoTime(field, field_where);
      if (!t.ok()) return t.status();
      device.last_updated = *t;
    } else if (FieldIs(key, "HealthCheckTimeout")) {
      absl::StatusOr<absl::Duration> timeout = ParseGoDuration(field, field_where);
      if (!timeout.ok()) return timeout.status();
      device.health_check_timeout = *timeout;
    } else if (FieldIs(key, "Message")) {
      absl::StatusOr<std::string> text = StringField(field, field_where);
      if (!text.ok()) return text.status();
      device.message = *std::move(text);
    }
  }
  return device;
}

absl::StatusOr<std::map<std::string, DeviceHealth>> ParseDriver(const Json& value,
                                                                const std::string& where) {
  std::map<std::string, DeviceHealth> devices;
  if (value.is_null()) return devices;
  if (!value.is_object()) return Invalid(where, "not an object");
  for (const auto& item : value.items()) {
    if (!FieldIs(item.key(), "Devices")) continue;
    const Json& map = item.value();
    devices.clear();
    if (map.is_null()) continue;
    if (!map.is_object()) return Invalid(absl::StrCat(where, ".Devices"), "not an object");
    for (const auto& entry : map.items()) {
      absl::StatusOr<DeviceHealth> device =
          ParseDevice(entry.value(), absl::StrCat(where, ".Devices[", entry.key(), "]"));
      if (!device.ok()) return device.status();
      devices[entry.key()] = *std::move(device);
    }
  }
  return devices;
}

}  // namespace

std::string TruncateHealthMessage(absl::string_view message) {
  if (message.size() <= kMaxHealthMessageBytes) return std::string(message);
  const size_t cut = Utf8CutPoint(message, kMaxHealthMessageBytes - kEllipsis.size());
  return absl::StrCat(message.substr(0, cut), kEllipsis);
}

absl::string_view DeviceHealthStatusName(DeviceHealthStatus status) {
  switch (status) {
    case DeviceHealthStatus::kHealthy:
      return "Healthy";
    case DeviceHealthStatus::kUnhealthy:
      return "Unhealthy";
    case DeviceHealthStatus::kUnknown:
      break;
  }
  return "Unknown";
}

absl::Time GoZeroTime() { return absl::FromCivil(absl::CivilSecond(1, 1, 1), absl::UTCTimeZone()); }

std::string DeviceKey(absl::string_view pool_name, absl::string_view device_name) {
  return absl::StrCat(pool_name, "/", device_name);
}

std::string EncodeHealthState(const DevicesHealthMap& state) {
  std::string out = "{";
  bool first_driver = true;
  for (const auto& [driver, devices] : state) {
    if (!first_driver) out += ',';
    first_driver = false;
    AppendGoJsonString(out, driver);
    out += ":{\"Devices\":{";
    bool first_device = true;
    for (const auto& [key, device] : devices) {
      if (!first_device) out += ',';
      first_device = false;
      AppendGoJsonString(out, key);
      out += ':';
      AppendDevice(out, device);
    }
    out += "}}";
  }
  out += '}';
  return out;
}

absl::StatusOr<DevicesHealthMap> DecodeHealthState(absl::string_view bytes) {
  if (absl::Status shape = CheckJsonShape(bytes, kMaxApiObjectJsonDepth, kMaxStateFileJsonValues);
      !shape.ok()) {
    return Invalid("file", shape.message());
  }
  const Json root = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Invalid("file", "not JSON");
  DevicesHealthMap state;
  if (root.is_null()) return state;
  if (!root.is_object()) return Invalid("file", "not an object");
  for (const auto& item : root.items()) {
    absl::StatusOr<std::map<std::string, DeviceHealth>> devices =
        ParseDriver(item.value(), absl::StrCat("[", item.key(), "]"));
    if (!devices.ok()) return devices.status();
    state[item.key()] = *std::move(devices);
  }
  return state;
}

HealthCache::HealthCache(HealthCacheOptions options)
    : clock_(options.clock != nullptr ? *options.clock : RealClock()),
      logger_(std::move(options.logger)),
      persistent_(!options.state_dir.empty()),
      store_(options.state_dir, std::move(options.fault_hook)) {
  if (!persistent_) return;
  absl::StatusOr<std::string> bytes = store_.Read(kHealthStateName);
  if (!bytes.ok()) {
    if (!absl::IsNotFound(bytes.status())) {
      DEVMGR_LOG(logger_, err, "Cannot read the device health state, starting without it", "err",
                 bytes.status(), "path", (store_.folder() / kHealthStateName).string());
    }
    return;
  }
  absl::StatusOr<DevicesHealthMap> state = DecodeHealthState(*bytes);
  if (!state.ok()) {
    DEVMGR_LOG(logger_, err, "Ignoring a broken device health state", "err", state.status(), "path",
               (store_.folder() / kHealthStateName).string());
    return;
  }
  absl::MutexLock lock(&mu_);
  health_ = *std::move(state);
}

DeviceHealth HealthCache::Get(absl::string_view driver_name, absl::string_view pool_name,
                              absl::string_view device_name) const {
  DeviceHealth unknown;
  unknown.pool_name = std::string(pool_name);
  unknown.device_name = std::string(device_name);
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  auto driver = health_.find(std::string(driver_name));
  if (driver == health_.end()) return unknown;
  auto device = driver->second.find(DeviceKey(pool_name, device_name));
  if (device == driver->second.end()) return unknown;
  // A report older than its timeout says nothing any more, message included.
  if (now - device->second.last_updated > TimeoutOf(device->second)) return unknown;
  return device->second;
}

std::vector<DeviceHealth> HealthCache::Update(const std::string& driver_name,
                                              std::vector<DeviceHealth> devices,
                                              absl::Status* write_status) {
  std::vector<DeviceHealth> changed;
  std::string bytes;
  size_t left_out = 0;
  bool warn_left_out = false;
  absl::MutexLock write_lock(&write_mu_);
  {
    const absl::Time now = clock_.Now();
    absl::MutexLock lock(&mu_);
    std::map<std::string, DeviceHealth>& known = health_[driver_name];
    // At the limit, devices that read Unknown make room first: one the report does not name
    // reads the same without an entry, and a driver that renames its devices keeps getting
    // health for the new names.
    if (known.size() + devices.size() > kMaxHealthDevicesPerDriver) {
      std::set<std::string> named;
      for (const DeviceHealth& device : devices) {
        named.insert(DeviceKey(device.pool_name, device.device_name));
      }
      std::erase_if(known, [&](const auto& entry) {
        return entry.second.health == DeviceHealthStatus::kUnknown && !named.contains(entry.first);
      });
    }
    std::set<std::string> reported;
    for (DeviceHealth& device : devices) {
      // The driver's own time is not trusted for ageing: clocks differ, and a report is news
      // when it arrives.
      device.last_updated = now;
      // Kept as the pod status carries it: a driver's longer words would only take room, in
      // memory and in every write of the file.
      device.message = TruncateHealthMessage(device.message);
      std::string key = DeviceKey(device.pool_name, device.device_name);
      auto old = known.find(key);
      if (old == known.end() && known.size() >= kMaxHealthDevicesPerDriver) {
        ++left_out;
        continue;
      }
      if (old == known.end() || old->second.health != device.health ||
          old->second.message != device.message ||
          old->second.health_check_timeout != device.health_check_timeout) {
        changed.push_back(device);
      }
      reported.insert(key);
      known[std::move(key)] = std::move(device);
    }
    // A device the report leaves out keeps its last health until that times out.
    for (auto& [key, device] : known) {
      if (reported.contains(key) || device.health == DeviceHealthStatus::kUnknown) continue;
      if (now - device.last_updated <= TimeoutOf(device)) continue;
      device.health = DeviceHealthStatus::kUnknown;
      device.message.clear();
      device.last_updated = now;
      changed.push_back(device);
    }
    if (!changed.empty() && persistent_) bytes = EncodeHealthState(health_);
    warn_left_out = left_out > 0 && full_drivers_.insert(driver_name).second;
  }
  if (warn_left_out) {
    DEVMGR_LOG(logger_, warn, "Device health left out: the driver reported more devices than kept",
               "driverName", driver_name, "leftOut", left_out, "kept", kMaxHealthDevicesPerDriver);
  }
  absl::Status status;
  if (!changed.empty()) {
    status = WriteLocked(bytes);
    if (!status.ok()) {
      DEVMGR_LOG(logger_, err, "Cannot save the device health state; a restart forgets it", "err",
                 status, "driverName", driver_name);
    }
  }
  if (write_status != nullptr) *write_status = status;
  return changed;
}

absl::Status HealthCache::ClearDriver(const std::string& driver_name) {
  std::string bytes;
  absl::MutexLock write_lock(&write_mu_);
  {
    absl::MutexLock lock(&mu_);
    health_.erase(driver_name);
    full_drivers_.erase(driver_name);
    if (persistent_) bytes = EncodeHealthState(health_);
  }
  return WriteLocked(bytes);
}

DevicesHealthMap HealthCache::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

absl::Status HealthCache::WriteLocked(absl::string_view bytes) const {
  if (!persistent_) return absl::OkStatus();
  return store_.Write(kHealthStateName, bytes);
}

}  // namespace devmgr::dra
