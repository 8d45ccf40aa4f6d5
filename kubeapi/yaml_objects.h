// Kubernetes objects from YAML or JSON text, as kubectl reads a manifest: a stream of documents
// separated by "---", each an object, a List's items taken one by one, scalars typed as
// YAML 1.2's core schema types them (a quoted scalar is always a string).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

// SplitYamlDocuments cuts a YAML stream at its document markers: a line that starts with "---"
// (the rest of the line belongs to the next document) or "..." followed by a space or its end.
// (yaml-cpp's LoadAll loops forever on some malformed input; one document at a time does not.)
std::vector<std::string> SplitYamlDocuments(absl::string_view text);

// ReadObjects: every object of the stream in order, empty documents skipped, the items of a
// List (kind List or *List) in its place. InvalidArgument "document N: ..." for a document that
// is not YAML or not an object, nested deeper than 100 levels, or a stream of more than 10,000
// documents.
absl::StatusOr<std::vector<nlohmann::json>> ReadObjects(absl::string_view text);

// YamlErrorText: what a yaml-cpp error says, in devmgr's words where yaml-cpp's are unclear: its
// guard against deep nesting says "bad file", which reads here as "nested deeper than 100
// levels", the limit CheckYamlShape keeps (yaml-cpp's own guard stops further in).
std::string YamlErrorText(const YAML::Exception& error);

// YamlBudget: what the documents of one stream may expand to, each alias counted every time it
// is used (a few lines of aliases can expand to billions of nodes): nodes, and bytes of scalars
// and keys. CheckYamlShape spends it.
struct YamlBudget {
  int64_t nodes = 1'000'000;
  int64_t bytes = 64 << 20;
};

// CheckYamlShape refuses what yaml-cpp reads without a word and kubectl does not: a map key given
// twice (kubectl's strict reading refuses it; yaml-cpp's lookups would take the first, its
// iteration both), and the merge key "<<", which yaml-cpp reads as an ordinary key (kubectl
// merges; devmgr does not, and would drop the merged fields unseen). And a document that
// expands past what is left of `budget`, or nests deeper than 100 levels. InvalidArgument naming
// the place ("spec.containers[0].resources: key \"limits\" is given twice"). Give every
// document of a stream the same budget.
absl::Status CheckYamlShape(const YAML::Node& document, YamlBudget& budget);

// YamlToJson: one parsed YAML document as JSON, scalars typed as above. InvalidArgument for a
// map key that is not a scalar or nesting deeper than 100 levels.
absl::StatusOr<nlohmann::json> YamlToJson(const YAML::Node& node);

}  // namespace devmgr::kubeapi
