#include "cmd/devmgr/printer.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "kubeapi/json_text.h"

namespace devmgr::cli {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

void NumbersOfMessage(const Descriptor& descriptor, OrderedJson& object);

// NumberOfValue turns one value of `field` (an element, for a repeated field) into a number
// where protobuf's JSON wrote a 64-bit integer as a string, and walks into messages.
void NumberOfValue(const FieldDescriptor& field, OrderedJson& value) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t number = 0;
      if (value.is_string() && absl::SimpleAtoi(value.get_ref<const std::string&>(), &number)) {
        value = number;
      }
      return;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t number = 0;
      if (value.is_string() && absl::SimpleAtoi(value.get_ref<const std::string&>(), &number)) {
        value = number;
      }
      return;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      // Well-known types (Timestamp, Duration, Struct, wrappers) have JSON forms of their own.
      if (value.is_object() && field.message_type()->file()->package() != "google.protobuf") {
        NumbersOfMessage(*field.message_type(), value);
      }
      return;
    default:
      return;
  }
}

void NumbersOfMessage(const Descriptor& descriptor, OrderedJson& object) {
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const FieldDescriptor& field = *descriptor.field(i);
    auto found = object.find(field.json_name());
    if (found == object.end()) continue;
    if (field.is_map()) {
      // Map keys stay strings (JSON's keys are); the values are the entry's "value" field.
      // Protobuf's maps have no order: keys sorted, as Go's encoding/json writes a map.
      if (!found->is_object()) continue;
      std::map<std::string, OrderedJson> sorted;
      for (auto& [key, item] : found->items()) {
        NumberOfValue(*field.message_type()->map_value(), item);
        sorted.emplace(key, std::move(item));
      }
      OrderedJson map = OrderedJson::object();
      for (auto& [key, item] : sorted) map[key] = std::move(item);
      *found = std::move(map);
    } else if (field.is_repeated()) {
      if (!found->is_array()) continue;
      for (OrderedJson& item : *found) NumberOfValue(field, item);
    } else {
      NumberOfValue(field, *found);
    }
  }
}

// The longest text NeedsQuotes reads with its expressions.
constexpr size_t kMaxTextForExpressions = 64;

// NeedsQuotes: a plain scalar with this text would read back as something other than a string
// in YAML 1.1 (PyYAML; go-yaml v2, which kubectl uses) or 1.2: empty; a boolean or null word
// (y, Yes, ON, ~, ...) or the merge key "<<"; a number in any of their forms (1_000, .5, 1e3,
// 0b101, 017, 0o17, 0x1F, 12:30, .inf, .NaN); a date or timestamp (2001-01-01...). Quoting more
// than needed costs nothing: a quoted scalar is a string in every reader.
bool NeedsQuotes(const std::string& text) {
  static const std::set<std::string> kWords = {
      "y",    "Y",    "yes",  "Yes",   "YES",   "n",     "N",  "no", "No", "NO",
      "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off",
      "Off",  "OFF",  "null", "Null",  "NULL",  "~",     "<<", "="};
  static const std::regex kNumberOrTime(
      "[-+]?([0-9][0-9_]*)?\\.?[0-9_]*([eE][-+]?[0-9]+)?"   // 1, 1_000, 1.5, .5, 1e3, 1.
      "|[-+]?0b[01_]+|[-+]?0o[0-7_]+|[-+]?0x[0-9a-fA-F_]+"  // 0b101, 0o17, 0x1F (017 above)
      "|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\\.[0-9_]*)?"      // 12:30, 1:20:30.5 (base 60)
      "|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)"
      "|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt \t].*)?");  // 2001-01-01, with a time
  if (text.empty() || kWords.contains(text)) return true;
  double number = 0;  // also "inf", "nan", "infinity", as strtod reads them
  if (absl::SimpleAtod(text, &number)) return true;
  // Every other number and date starts so; most IDs and names do not, and skip the expressions.
  const char first = text.front();
  if (!absl::ascii_isdigit(static_cast<unsigned char>(first)) && first != '-' && first != '+' &&
      first != '.') {
    return false;
  }
  // libstdc++'s regex recurses once per character a repetition takes: a long text could
  // overflow the stack. Quoting a long one whatever it holds costs nothing.
  return text.size() > kMaxTextForExpressions || std::regex_match(text, kNumberOrTime);
}

void Emit(YAML::Emitter& out, const OrderedJson& value) {
  // Empty ones as kubectl writes them: `cpuIds: []`, `envs: {}`.
  if (value.is_array() && value.empty()) {
    out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
    return;
  }
  if (value.is_object() && value.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    return;
  }
  switch (value.type()) {
    case OrderedJson::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key;
        if (NeedsQuotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      return;
    case OrderedJson::value_t::array:
      out << YAML::BeginSeq;
      for (const OrderedJson& item : value) Emit(out, item);
      out << YAML::EndSeq;
      return;
    case OrderedJson::value_t::string: {
      const std::string& text = value.get_ref<const std::string&>();
      if (NeedsQuotes(text)) out << YAML::DoubleQuoted;
      out << text;
      return;
    }
    case OrderedJson::value_t::null:
      out << YAML::Null;
      return;
    default:
      out << value.dump();  // numbers and booleans, as JSON writes them
      return;
  }
}

std::vector<bool> ShownColumns(const std::vector<Column>& columns, OutputFormat format) {
  std::vector<bool> shown;
  shown.reserve(columns.size());
  for (const Column& column : columns) {
    shown.push_back(!column.wide || format == OutputFormat::kWide);
  }
  return shown;
}

std::vector<std::string> Headers(const std::vector<Column>& columns, OutputFormat format) {
  std::vector<std::string> headers;
  const std::vector<bool> shown = ShownColumns(columns, format);
  for (size_t i = 0; i < columns.size(); ++i) {
    if (shown[i]) headers.push_back(columns[i].header);
  }
  return headers;
}

}  // namespace

OrderedJson ProtoToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string text;
  // Our own messages always convert; a failure here would be a broken invariant.
  if (!google::protobuf::util::MessageToJsonString(message, &text, options).ok()) {
    return OrderedJson::object();
  }
  OrderedJson json = OrderedJson::parse(text, nullptr, false);
  if (json.is_discarded()) return OrderedJson::object();
  NumbersOfMessage(*message.GetDescriptor(), json);
  return json;
}

std::string JsonText(const OrderedJson& value) { return kubeapi::JsonText(value, 4) + "\n"; }

std::string JsonLine(const OrderedJson& value) { return kubeapi::JsonText(value) + "\n"; }

std::string YamlText(const OrderedJson& value) {
  YAML::Emitter out;
  Emit(out, value);
  return std::string(out.c_str()) + "\n";
}

bool IsStructured(OutputFormat format) {
  return format == OutputFormat::kJson || format == OutputFormat::kYaml;
}

void PrintObject(const OrderedJson& value, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kJson) {
    out << JsonText(value);
  } else if (format == OutputFormat::kYaml) {
    out << YamlText(value);
  }
}

void PrintStreamItem(const OrderedJson& value, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kJson) {
    out << JsonLine(value);
  } else if (format == OutputFormat::kYaml) {
    out << "---\n" << YamlText(value);
  }
  out << std::flush;
}

ColumnTable::ColumnTable(const std::vector<Column>& columns, OutputFormat format)
    : shown_(ShownColumns(columns, format)), table_(Headers(columns, format)) {}

void ColumnTable::AddRow(const std::vector<std::string>& cells) { table_.AddRow(Shown(cells)); }

std::vector<std::string> ColumnTable::Shown(const std::vector<std::string>& cells) const {
  std::vector<std::string> shown;
  for (size_t i = 0; i < cells.size() && i < shown_.size(); ++i) {
    if (shown_[i]) shown.push_back(cells[i]);
  }
  return shown;
}

}  // namespace devmgr::cli
