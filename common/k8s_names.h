// The name formats of Kubernetes' API (k8s.io/apimachinery's util/validation), each as the list
// of messages the API server gives for a value that breaks it: empty when the value is valid,
// otherwise the same texts in the same order, for errors a user compares with a cluster's.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr {

// IsDNS1123Label: at most 63 lower-case alphanumerics or '-', alphanumeric at both ends.
std::vector<std::string> Dns1123LabelErrors(absl::string_view value);

// IsDNS1123Subdomain: DNS-1123 labels joined by '.', at most 253 characters in all.
std::vector<std::string> Dns1123SubdomainErrors(absl::string_view value);

// IsDNS1035Label: as a DNS-1123 label, beginning with a letter.
std::vector<std::string> Dns1035LabelErrors(absl::string_view value);

// The same three for a name that more will be appended to (a generateName prefix), as
// apimachinery checks one: a final '-' and the character before it stand as "a" (its
// maskTrailingDash).
std::vector<std::string> Dns1123LabelPrefixErrors(absl::string_view value);
std::vector<std::string> Dns1123SubdomainPrefixErrors(absl::string_view value);
std::vector<std::string> Dns1035LabelPrefixErrors(absl::string_view value);

// IsQualifiedName: a name of at most 63 alphanumerics, '-', '_' or '.' (alphanumeric at both
// ends), after an optional DNS-1123 subdomain prefix and '/'. Label keys, extended resources.
std::vector<std::string> QualifiedNameErrors(absl::string_view value);

// IsValidLabelValue: empty, or a qualified name's name part.
std::vector<std::string> LabelValueErrors(absl::string_view value);

// IsCIdentifier: a letter or '_', then letters, digits or '_'.
std::vector<std::string> CIdentifierErrors(absl::string_view value);

// IsExtendedResourceName (core/v1 helper): contains '/', not in the kubernetes.io/ namespace,
// does not start with "requests.", and "requests." + name is a qualified name. Device plugin
// resources and a DeviceClass's extendedResourceName.
bool IsExtendedResourceName(absl::string_view name);

}  // namespace devmgr
