// The one printer of every devmgr command, so that `-o json|yaml|table|wide` look alike
// everywhere: the same indentation, key order, numbers and quoting in every command.
//
// A command builds its answer once as JSON (Kubernetes field names; ProtoToJson for the
// protobuf messages of the gRPC APIs it calls) and, for table and wide, the rows of a
// ColumnTable. PrintObject writes the JSON or YAML; ColumnTable leaves out the wide-only
// columns unless `-o wide`, as kubectl's wide output adds columns to its table.
#pragma once

#include <google/protobuf/message.h>

#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "cmd/devmgr/command.h"
#include "common/table.h"
#include "nlohmann/json.hpp"

namespace devmgr::cli {

using OrderedJson = nlohmann::ordered_json;

// ProtoToJson is `message` as the commands print it: protobuf's JSON names (lowerCamelCase, as
// grpcurl prints a kubelet's PodResources answers: podResources, deviceIds, resourceName,
// topology, nodes, ID), every field of a scalar, repeated or map type even when it holds its
// default (so a device on NUMA node 0 prints as {"ID": 0}, not {}), and 64-bit integers as JSON
// numbers, as Go's encoding/json writes them (protobuf's JSON writes them as strings). Enums
// print as their names; unset message fields are left out.
OrderedJson ProtoToJson(const google::protobuf::Message& message);

// JsonText is `value` as kubectl -o json writes it: indented by four spaces, keys in their
// order, ending with a newline. Bytes that are not UTF-8 (a corrupt file's strings) become
// U+FFFD.
std::string JsonText(const OrderedJson& value);

// JsonLine is the same on one line, for streams: one event a line.
std::string JsonLine(const OrderedJson& value);

// YamlText is `value` as kubectl -o yaml writes it: block style, keys in their order, strings
// quoted where they would read back as another type ("true", "1.5", "", "null", ...).
std::string YamlText(const OrderedJson& value);

// IsStructured: json or yaml, which PrintObject writes; table and wide are the command's own.
bool IsStructured(OutputFormat format);

// PrintObject writes `value` in `format` (json or yaml) on `out`; nothing for table and wide.
void PrintObject(const OrderedJson& value, OutputFormat format, std::ostream& out = std::cout);

// PrintStreamItem writes one item of a stream (watch) and flushes: JSON on one line, YAML as
// one document after "---"; nothing for table and wide.
void PrintStreamItem(const OrderedJson& value, OutputFormat format, std::ostream& out = std::cout);

// A column of a ColumnTable: its header, and whether only `-o wide` shows it.
struct Column {
  std::string header;
  bool wide = false;
};

// ColumnTable is a Table (common/table.h) whose wide columns are shown only for `-o wide`.
// Every row gives a cell for every column, wide ones included, so that a command writes its
// rows once for both.
class ColumnTable {
 public:
  ColumnTable(const std::vector<Column>& columns, OutputFormat format);

  // AddRow takes one cell per column, in the order of the columns.
  void AddRow(const std::vector<std::string>& cells);

  void Print(std::ostream& out) const { table_.Print(out); }

 private:
  std::vector<std::string> Shown(const std::vector<std::string>& cells) const;

  std::vector<bool> shown_;
  Table table_;
};

}  // namespace devmgr::cli
