// Fields: reading one JSON object of the Kubernetes API field by field, with errors that name
// the field ("spec.devices[2].name: must be a string"), keeping what was not read as the object's
// extra. Internal to kubeapi's codecs; not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kubeapi/json_member.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi::internal {

using Json = nlohmann::json;

inline absl::Status FieldError(const std::string& field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// IntOf: an integer field's value; one past int64 is refused, as Go's decoder refuses it.
inline absl::StatusOr<int64_t> IntOf(const Json& value, const std::string& field) {
  if (!value.is_number_integer()) return FieldError(field, "must be an integer");
  if (!IsInt64(value)) return FieldError(field, "is out of range for an integer");
  return value.get<int64_t>();
}

// Fields takes the modelled keys out of one JSON object; what is left is the object's extra.
class Fields {
 public:
  Fields(const Json& object, std::string field) : rest_(object), field_(std::move(field)) {}

  // ok: the input was an object (checked once, before any Take).
  absl::Status CheckObject() const {
    if (rest_.is_object()) return absl::OkStatus();
    return FieldError(field_, "must be an object");
  }

  // Take removes `key` and returns it (null when absent).
  Json Take(const char* key) {
    auto it = rest_.find(key);
    if (it == rest_.end()) return Json();
    Json value = std::move(*it);
    rest_.erase(it);
    return value;
  }

  absl::StatusOr<std::string> String(const char* key) {
    Json value = Take(key);
    if (value.is_null()) return std::string();
    if (!value.is_string()) return FieldError(Name(key), "must be a string");
    return value.get<std::string>();
  }
  absl::StatusOr<std::optional<std::string>> OptionalString(const char* key) {
    Json value = Take(key);
    if (value.is_null()) return std::optional<std::string>();
    if (!value.is_string()) return FieldError(Name(key), "must be a string");
    return std::optional<std::string>(value.get<std::string>());
  }
  absl::StatusOr<int64_t> Int(const char* key) {
    Json value = Take(key);
    if (value.is_null()) return int64_t{0};
    return IntOf(value, Name(key));
  }
  absl::StatusOr<std::optional<bool>> OptionalBool(const char* key) {
    Json value = Take(key);
    if (value.is_null()) return std::optional<bool>();
    if (!value.is_boolean()) return FieldError(Name(key), "must be true or false");
    return std::optional<bool>(value.get<bool>());
  }
  // Object: an object value, or {} when absent.
  absl::StatusOr<Json> Object(const char* key) {
    Json value = Take(key);
    if (value.is_null()) return Json::object();
    if (!value.is_object()) return FieldError(Name(key), "must be an object");
    return value;
  }
  // List: the items of a list value (none when absent), each read by `read`.
  template <typename T, typename Read>
  absl::StatusOr<std::vector<T>> List(const char* key, Read read) {
    Json value = Take(key);
    std::vector<T> out;
    if (value.is_null()) return out;
    if (!value.is_array()) return FieldError(Name(key), "must be a list");
    for (size_t i = 0; i < value.size(); ++i) {
      absl::StatusOr<T> item = read(value[i], absl::StrCat(Name(key), "[", i, "]"));
      if (!item.ok()) return item.status();
      out.push_back(*std::move(item));
    }
    return out;
  }
  // StringList: a list of strings (none when absent).
  absl::StatusOr<std::vector<std::string>> StringList(const char* key) {
    return List<std::string>(
        key, [](const Json& item, const std::string& field) -> absl::StatusOr<std::string> {
          if (!item.is_string()) return FieldError(field, "must be a string");
          return item.get<std::string>();
        });
  }

  std::string Name(const char* key) const {
    return field_.empty() ? std::string(key) : absl::StrCat(field_, ".", key);
  }
  Json Rest() && { return std::move(rest_); }

 private:
  Json rest_;
  std::string field_;
};

// Put sets `key` unless the value is empty (omitempty).
inline void PutString(Json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}

}  // namespace devmgr::kubeapi::internal
