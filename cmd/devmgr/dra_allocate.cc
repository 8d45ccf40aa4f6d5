#include "cmd/devmgr/dra_allocate.h"

#include <initializer_list>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cel/program.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/printer.h"
#include "kubeapi/object_files.h"
#include "kubeapi/object_meta.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"
#include "kubeapi/resource_validation.h"
#include "structured/allocator.h"

namespace devmgr::cli {
namespace {

using Json = nlohmann::json;

struct AllocateFlags {
  std::vector<std::string> slices;
  std::vector<std::string> classes;
  std::vector<std::string> claims;
  std::vector<std::string> allocated;
  std::string node;
  std::vector<std::string> node_labels;
  std::string feature_gates;
  std::string timeout = "10s";
  bool explain = false;
  OutputFormat format = OutputFormat::kYaml;
};

// Refuses an object the lists give twice (the same namespace and name), as the API server holds
// one object of a name: "ResourceClaim \"ns/a\" is given twice". A file given twice would make
// its pools look incomplete, and a claim given twice would take two devices. An object without a
// namespace is in `default_namespace` (claims: "default", as kubectl puts them; slices and
// classes have none).
template <typename T>
absl::Status CheckGivenOnce(std::initializer_list<const std::vector<T>*> lists,
                            absl::string_view kind, absl::string_view default_namespace = "") {
  std::set<std::string> seen;
  for (const std::vector<T>* list : lists) {
    for (const T& object : *list) {
      const kubeapi::ObjectMeta& meta = object.metadata;
      if (meta.name.empty()) continue;  // generateName alone: no name to repeat
      const absl::string_view in =
          meta.namespace_name.empty() ? default_namespace : absl::string_view(meta.namespace_name);
      const std::string key = in.empty() ? meta.name : absl::StrCat(in, "/", meta.name);
      if (!seen.insert(key).second) {
        return absl::InvalidArgumentError(absl::StrCat(kind, " \"", key, "\" is given twice"));
      }
    }
  }
  return absl::OkStatus();
}

// Reads the objects of `kind` in the files and folders `paths` name; `decode` reads one.
template <typename T>
absl::StatusOr<std::vector<T>> ReadKind(const std::vector<std::string>& paths,
                                        absl::string_view kind,
                                        absl::FunctionRef<absl::StatusOr<T>(const Json&)> decode) {
  absl::StatusOr<std::vector<kubeapi::FileObject>> objects = kubeapi::ReadObjectFiles(paths);
  if (!objects.ok()) return objects.status();
  return kubeapi::DecodeKind<T>(*objects, kind, decode);
}

// The claims already allocated as the API server has them stored (classes and the claims to
// allocate as it takes them when they are created, with the features on: Run).
absl::StatusOr<kubeapi::ResourceClaim> DecodeStoredClaim(const Json& object) {
  return kubeapi::DecodeValidResourceClaim(
      object, [](const std::string& expression) { return cel::SelectorMaxCost(expression); });
}

// The node: --node, else the one node the node-local slices name.
absl::StatusOr<structured::Node> NodeOf(const AllocateFlags& flags,
                                        const std::vector<kubeapi::ResourceSlicePtr>& slices) {
  structured::Node node;
  node.name = flags.node;
  if (node.name.empty()) {
    std::set<std::string> names;
    for (const kubeapi::ResourceSlicePtr& slice : slices) {
      if (slice->spec.node_name.has_value()) names.insert(*slice->spec.node_name);
    }
    if (names.size() != 1) {
      return absl::InvalidArgumentError(
          names.empty() ? "--node is required: no slice names a node"
                        : "--node is required: the slices are for several nodes");
    }
    node.name = *names.begin();
  }
  absl::StatusOr<std::map<std::string, std::string>> labels = ParseNodeLabels(flags.node_labels);
  if (!labels.ok()) return labels.status();
  node.labels = *std::move(labels);
  return node;
}

// PrintClaims: JSON is one claim, or a List of them; YAML is a stream of claim documents.
void PrintClaims(const std::vector<kubeapi::ResourceClaim>& claims, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    Json out;
    if (claims.size() == 1) {
      out = kubeapi::EncodeResourceClaim(claims.front());
    } else {
      out = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", Json::array()}};
      for (const kubeapi::ResourceClaim& claim : claims) {
        out["items"].push_back(kubeapi::EncodeResourceClaim(claim));
      }
    }
    PrintObject(OrderedJson(out), format);
    return;
  }
  for (size_t i = 0; i < claims.size(); ++i) {
    if (i > 0) std::cout << "---\n";
    PrintObject(OrderedJson(kubeapi::EncodeResourceClaim(claims[i])), format);
  }
}

int Run(const AllocateFlags& flags) {
  absl::StatusOr<structured::Features> features =
      structured::ParseFeatureGates(flags.feature_gates);
  if (!features.ok()) {
    return Fail(kExitUsage, absl::StrCat("--feature-gates: ", features.status().message()));
  }
  absl::StatusOr<absl::Duration> timeout = ParseFlagDuration("--timeout", flags.timeout);
  if (!timeout.ok()) return Fail(kExitUsage, timeout.status().message());

  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> slices =
      ReadKind<kubeapi::ResourceSlice>(flags.slices, "ResourceSlice", kubeapi::DecodeResourceSlice);
  if (!slices.ok()) return Fail(kExitUsage, slices.status().message());
  absl::StatusOr<std::vector<kubeapi::DeviceClass>> classes =
      ReadKind<kubeapi::DeviceClass>(flags.classes, "DeviceClass", [&](const Json& object) {
        return kubeapi::DecodeValidDeviceClass(object, structured::NewSelectorCost{*features});
      });
  if (!classes.ok()) return Fail(kExitUsage, classes.status().message());
  absl::StatusOr<std::vector<kubeapi::ResourceClaim>> claims =
      ReadKind<kubeapi::ResourceClaim>(flags.claims, "ResourceClaim", [&](const Json& object) {
        return kubeapi::DecodeValidResourceClaim(object, structured::NewSelectorCost{*features});
      });
  if (!claims.ok()) return Fail(kExitUsage, claims.status().message());
  if (claims->empty()) return Fail(kExitUsage, "--claim: no ResourceClaim in the files");
  absl::StatusOr<std::vector<kubeapi::ResourceClaim>> allocated =
      ReadKind<kubeapi::ResourceClaim>(flags.allocated, "ResourceClaim", DecodeStoredClaim);
  if (!allocated.ok()) return Fail(kExitUsage, allocated.status().message());
  for (const absl::Status& once :
       {CheckGivenOnce({&*slices}, "ResourceSlice"), CheckGivenOnce({&*classes}, "DeviceClass"),
        CheckGivenOnce({&*claims, &*allocated}, "ResourceClaim", "default")}) {
    if (!once.ok()) return Fail(kExitUsage, once.message());
  }

  std::vector<kubeapi::ResourceSlicePtr> slice_ptrs;
  for (kubeapi::ResourceSlice& slice : *slices) {
    slice_ptrs.push_back(std::make_shared<const kubeapi::ResourceSlice>(std::move(slice)));
  }
  absl::StatusOr<structured::Node> node = NodeOf(flags, slice_ptrs);
  if (!node.ok()) return Fail(kExitUsage, node.status().message());

  // Claims that already have an allocation hold their devices, as --allocated's do.
  std::vector<kubeapi::ResourceClaim> holding = *allocated;
  std::vector<size_t> pending;
  std::vector<const kubeapi::ResourceClaim*> to_allocate;
  for (size_t i = 0; i < claims->size(); ++i) {
    if ((*claims)[i].allocation.has_value()) {
      holding.push_back((*claims)[i]);
    } else {
      pending.push_back(i);
      to_allocate.push_back(&(*claims)[i]);
    }
  }
  structured::AllocatorOptions options;
  options.features = *features;
  options.timeout = *timeout;
  std::unique_ptr<structured::Allocator> allocator = structured::Allocator::Create(
      options, structured::AllocatedStateOf(holding, *features), *std::move(classes), slice_ptrs);
  structured::Explanation explanation;
  auto results = allocator->Allocate(*node, to_allocate, flags.explain ? &explanation : nullptr);
  if (flags.explain) std::cerr << structured::FormatExplanation(explanation);
  if (!results.ok()) return Fail(kExitUsage, results.status().message());
  if (!results->has_value()) {
    return Fail(kExitNo, flags.explain ? "cannot allocate all claims"
                                       : "cannot allocate all claims (--explain says why)");
  }
  for (size_t i = 0; i < pending.size(); ++i) (*claims)[pending[i]].allocation = (**results)[i];
  PrintClaims(*claims, flags.format);
  return kExitOk;
}

}  // namespace

void AddAllocateCommand(CLI::App& dra, CommandResult& result) {
  auto flags = std::make_shared<AllocateFlags>();
  CLI::App* allocate = dra.add_subcommand(
      "allocate",
      "Allocate devices to ResourceClaims from ResourceSlices, as the scheduler would on one node");
  allocate->add_option("--slices", flags->slices, "ResourceSlices: a YAML/JSON file or a folder")
      ->required()
      ->type_name("PATH");
  allocate->add_option("--classes", flags->classes, "DeviceClasses: a YAML/JSON file or a folder")
      ->required()
      ->type_name("PATH");
  allocate->add_option("--claim", flags->claims, "The ResourceClaims to allocate, together")
      ->required()
      ->type_name("PATH");
  allocate
      ->add_option("--allocated", flags->allocated,
                   "ResourceClaims already allocated on the node: their devices are taken")
      ->type_name("PATH");
  allocate
      ->add_option("--node", flags->node,
                   "The node to allocate on (default: the one the slices name)")
      ->type_name("NAME");
  allocate
      ->add_option("--node-label", flags->node_labels,
                   "A label of the node, for slices with node selectors; once per label")
      ->type_name("KEY=VALUE");
  allocate
      ->add_option("--feature-gates", flags->feature_gates,
                   "DRA feature gates, NAME=true|false,... (DRAPartitionableDevices, "
                   "DRADeviceTaints, DRAConsumableCapacity, ...)")
      ->type_name("GATES");
  allocate
      ->add_option(
          "--timeout", flags->timeout,
          "Give up the search after this long (0s: never, as the scheduler's filterTimeout)")
      ->type_name("DURATION")
      ->capture_default_str();
  allocate->add_flag("--explain", flags->explain,
                     "Say on stderr why each device was or was not a candidate, and what the "
                     "search ran into");
  std::map<std::string, OutputFormat> formats{{"json", OutputFormat::kJson},
                                              {"yaml", OutputFormat::kYaml}};
  TakeFormatNames(
      allocate->add_option("-o,--output", flags->format, "Output format: yaml (default) or json"),
      formats)
      ->option_text("FORMAT");
  SetExamples(*allocate,
              {{"Allocate the claim of examples/allocate from its slices and classes",
                "devmgr dra allocate --slices examples/allocate/slices.yaml --classes "
                "examples/allocate/classes.yaml --claim examples/allocate/claim.yaml"},
               {"And say why each device was or was not a candidate",
                "devmgr dra allocate --slices examples/allocate --classes examples/allocate "
                "--claim examples/allocate/claim.yaml --explain"}});
  allocate->callback([&result, flags] { result.exit_code = Run(*flags); });
}

}  // namespace devmgr::cli
