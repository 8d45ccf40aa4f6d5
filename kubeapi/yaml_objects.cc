#include "kubeapi/yaml_objects.h"

#include <yaml-cpp/depthguard.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/utf8.h"

namespace devmgr::kubeapi {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxDocuments = 10'000;
constexpr int kMaxDepth = 100;

// A plain (unquoted) scalar as YAML 1.2's core schema reads it.
Json PlainScalar(const std::string& text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return Json();
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  int64_t integer = 0;
  if (absl::SimpleAtoi(text, &integer) && text.find_first_of(".eE") == std::string::npos) {
    return integer;
  }
  if (absl::StartsWith(text, "0x") || absl::StartsWith(text, "0o")) {
    const int base = text[1] == 'x' ? 16 : 8;
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str() + 2, &end, base);
    if (errno == 0 && end != nullptr && *end == '\0' && text.size() > 2) return int64_t{value};
  }
  if (text == ".inf" || text == "+.inf" || text == ".Inf")
    return std::numeric_limits<double>::infinity();
  if (text == "-.inf" || text == "-.Inf") return -std::numeric_limits<double>::infinity();
  // A float: digits with a point or an exponent (".nan" has no JSON form and stays a string).
  if (text.find_first_of("0123456789") != std::string::npos &&
      text.find_first_not_of("0123456789+-.eE") == std::string::npos) {
    double value = 0;
    if (absl::SimpleAtod(text, &value) && std::isfinite(value)) return value;
  }
  return text;
}

absl::StatusOr<Json> ToJson(const YAML::Node& node, int depth) {
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Json();
    case YAML::NodeType::Scalar:
      // As Go's YAML reader: text that is not UTF-8 is no YAML (and JSON could not write it).
      if (!ValidUtf8(node.Scalar())) return absl::InvalidArgumentError("a value is not UTF-8");
      // "!" marks a quoted (or otherwise non-plain) scalar: a string whatever it holds.
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return node.Scalar();
      return PlainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const YAML::Node& item : node) {
        absl::StatusOr<Json> value = ToJson(item, depth + 1);
        if (!value.ok()) return value.status();
        out.push_back(*std::move(value));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) return absl::InvalidArgumentError("a map key is not a scalar");
        if (!ValidUtf8(entry.first.Scalar())) {
          return absl::InvalidArgumentError("a map key is not UTF-8");
        }
        absl::StatusOr<Json> value = ToJson(entry.second, depth + 1);
        if (!value.ok()) return value.status();
        out[entry.first.Scalar()] = *std::move(value);
      }
      return out;
    }
  }
  return Json();
}

// One step of the way to a node: a map key, or a list index.
struct PathPart {
  absl::string_view key;
  size_t index = 0;
  bool is_index = false;
};

// The place CheckShape names in a refusal: "spec.containers[0].resources", "the document".
std::string PathText(const std::vector<PathPart>& path) {
  if (path.empty()) return "the document";
  std::string text;
  for (const PathPart& part : path) {
    if (part.is_index) {
      absl::StrAppend(&text, "[", part.index, "]");
    } else {
      absl::StrAppend(&text, text.empty() ? "" : ".", part.key);
    }
  }
  return text;
}

// Walks `node` within `budget`, building no text unless it refuses: the keys are views into the
// document, which outlives the walk.
absl::Status CheckShape(const YAML::Node& node, std::vector<PathPart>& path, YamlBudget& budget) {
  if (--budget.nodes < 0) {
    return absl::InvalidArgumentError("the documents expand to too many nodes (aliases)");
  }
  if (path.size() > static_cast<size_t>(kMaxDepth)) {
    return absl::InvalidArgumentError(
        absl::StrCat(PathText(path), ": nested deeper than ", kMaxDepth, " levels"));
  }
  if (node.IsScalar()) {
    budget.bytes -= static_cast<int64_t>(node.Scalar().size());
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      path.push_back({.key = {}, .index = i, .is_index = true});
      absl::Status status = CheckShape(node[i], path, budget);
      path.pop_back();
      if (!status.ok()) return status;
    }
  } else if (node.IsMap()) {
    std::set<absl::string_view> keys;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) continue;  // YamlToJson and the readers refuse it with a place
      const std::string& key = entry.first.Scalar();
      budget.bytes -= static_cast<int64_t>(key.size());
      if (key == "<<" && entry.first.Tag() == "?") {
        return absl::InvalidArgumentError(absl::StrCat(
            PathText(path), ": merge keys (<<) are not supported; write the fields out"));
      }
      if (!keys.insert(key).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(PathText(path), ": key \"", key, "\" is given twice"));
      }
      path.push_back({.key = key, .index = 0, .is_index = false});
      absl::Status status = CheckShape(entry.second, path, budget);
      path.pop_back();
      if (!status.ok()) return status;
    }
  }
  if (budget.bytes < 0) {
    return absl::InvalidArgumentError("the documents expand to too many bytes (aliases)");
  }
  return absl::OkStatus();
}

bool IsList(const Json& object) {
  auto kind = object.find("kind");
  if (kind == object.end() || !kind->is_string()) return false;
  const std::string& name = kind->get_ref<const std::string&>();
  return absl::EndsWith(name, "List") && object.contains("items");
}

}  // namespace

std::string YamlErrorText(const YAML::Exception& error) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&error) == nullptr) return error.what();
  return absl::StrCat("yaml-cpp: error at line ", error.mark.line + 1, ", column ",
                      error.mark.column + 1, ": nested deeper than ", kMaxDepth, " levels");
}

absl::Status CheckYamlShape(const YAML::Node& document, YamlBudget& budget) {
  std::vector<PathPart> path;
  return CheckShape(document, path, budget);
}

absl::StatusOr<Json> YamlToJson(const YAML::Node& node) { return ToJson(node, 0); }

std::vector<std::string> SplitYamlDocuments(absl::string_view text) {
  std::vector<std::string> documents(1);
  auto is_marker = [](absl::string_view line, absl::string_view marker) {
    return absl::StartsWith(line, marker) &&
           (line.size() == marker.size() || line[marker.size()] == ' ' ||
            line[marker.size()] == '\t' || line[marker.size()] == '\r');
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (is_marker(line, "---")) {
      // A stream that starts with a marker has no document before it.
      if (documents.size() == 1 && documents[0].empty()) documents.clear();
      documents.emplace_back(line.substr(3));
      documents.back().push_back('\n');
    } else if (is_marker(line, "...")) {
      documents.emplace_back();
    } else {
      absl::StrAppend(&documents.back(), line, "\n");
    }
  }
  return documents;
}

absl::StatusOr<std::vector<Json>> ReadObjects(absl::string_view text) {
  const std::vector<std::string> parts = SplitYamlDocuments(text);
  if (parts.size() > kMaxDocuments) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stream holds ", parts.size(), " documents, more than ", kMaxDocuments));
  }
  std::vector<Json> objects;
  YamlBudget budget;
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::StatusOr<Json> document;
    // yaml-cpp reports errors by throwing; none may leave this function.
    try {
      const YAML::Node node = YAML::Load(parts[i]);
      const absl::Status shape = CheckYamlShape(node, budget);
      document = shape.ok() ? ToJson(node, 0) : absl::StatusOr<Json>(shape);
    } catch (const YAML::Exception& e) {
      document =
          absl::InvalidArgumentError(absl::StrCat("not valid YAML or JSON: ", YamlErrorText(e)));
    }
    if (!document.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("document ", i + 1, ": ", document.status().message()));
    }
    if (document->is_null()) continue;
    if (!document->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("document ", i + 1, ": not an object"));
    }
    if (!IsList(*document)) {
      objects.push_back(*std::move(document));
      continue;
    }
    const Json& items = (*document)["items"];
    if (!items.is_array()) {
      return absl::InvalidArgumentError(absl::StrCat("document ", i + 1, ": items is not a list"));
    }
    for (const Json& item : items) {
      if (!item.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat("document ", i + 1, ": a List item is not an object"));
      }
      objects.push_back(item);
    }
  }
  return objects;
}

}  // namespace devmgr::kubeapi
