#include "topologymanager/numa_nodes.h"

#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "devicemanager/numa_mask.h"

namespace devmgr::topologymanager {
namespace {

absl::Status Bad(absl::string_view part, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("NUMA node list: \"", part, "\": ", why));
}

// ReadText: the whole of a small sysfs file.
absl::StatusOr<std::string> ReadText(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  return std::string{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// One node ID, 0..63.
absl::StatusOr<int> ReadNode(absl::string_view text, absl::string_view part) {
  int node = 0;
  if (!absl::SimpleAtoi(text, &node) || text.empty() || !absl::ascii_isdigit(text.front())) {
    return Bad(part, "not a node ID");
  }
  if (node >= devicemanager::NumaMask::kMaxNode) {
    return Bad(part, absl::StrCat("nodes go up to ", devicemanager::NumaMask::kMaxNode - 1));
  }
  return node;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseNumaNodeList(absl::string_view text) {
  devicemanager::NumaMask nodes;
  const absl::string_view list = absl::StripAsciiWhitespace(text);
  if (list.empty()) return absl::InvalidArgumentError("NUMA node list: empty");
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    part = absl::StripAsciiWhitespace(part);
    const std::pair<absl::string_view, absl::string_view> range =
        absl::StrSplit(part, absl::MaxSplits('-', 1));
    absl::StatusOr<int> first = ReadNode(absl::StripAsciiWhitespace(range.first), part);
    if (!first.ok()) return first.status();
    int last = *first;
    if (part.find('-') != absl::string_view::npos) {
      absl::StatusOr<int> end = ReadNode(absl::StripAsciiWhitespace(range.second), part);
      if (!end.ok()) return end.status();
      if (*end < *first) return Bad(part, "the range runs backwards");
      last = *end;
    }
    for (int node = *first; node <= last; ++node) nodes.Add(node);
  }
  return nodes.Nodes();
}

absl::StatusOr<std::vector<int>> ReadNumaNodeList(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<int>> nodes = ParseNumaNodeList(*text);
  if (!nodes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", nodes.status().message()));
  }
  return nodes;
}

double NumaDistances::AverageFor(const devicemanager::NumaMask& mask) const {
  if (mask.empty()) return 0;
  const std::vector<int> nodes = mask.Nodes();
  double sum = 0;
  for (int from : nodes) {
    for (int to : nodes) {
      auto it = distances_.find({from, to});
      if (it != distances_.end()) sum += static_cast<double>(it->second);
    }
  }
  return sum / static_cast<double>(nodes.size() * nodes.size());
}

absl::StatusOr<NumaDistances> ReadNumaDistances(const std::vector<int>& nodes,
                                                const std::filesystem::path& node_dir) {
  absl::StatusOr<std::vector<int>> online = ReadNumaNodeList(node_dir / "online");
  if (!online.ok()) return online.status();
  NumaDistances distances;
  for (int node : nodes) {
    const std::filesystem::path path = node_dir / absl::StrCat("node", node) / "distance";
    absl::StatusOr<std::string> text = ReadText(path);
    if (!text.ok()) return text.status();
    const std::vector<absl::string_view> row =
        absl::StrSplit(*text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
    if (row.size() != online->size()) {
      return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", row.size(),
                                                     " distances for ", online->size(),
                                                     " online NUMA nodes"));
    }
    for (size_t i = 0; i < row.size(); ++i) {
      uint64_t distance = 0;
      if (!absl::SimpleAtoi(row[i], &distance) || !absl::ascii_isdigit(row[i].front())) {
        return absl::InvalidArgumentError(
            absl::StrCat(path.string(), ": cannot convert ", row[i], " to int"));
      }
      distances.Set(node, (*online)[i], distance);
    }
  }
  return distances;
}

}  // namespace devmgr::topologymanager
