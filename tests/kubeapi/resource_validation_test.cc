// ValidateResourceClaim and ValidateDeviceClass against the API server's texts: the scenarios of
// upstream's TestValidateClaim and TestValidateClass (pkg/apis/resource/validation) that reach
// what devmgr models, by their names, with the texts of upstream's handwritten validation, and
// the cases the allocator fuzzer found.
#include "kubeapi/resource_validation.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cel/program.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {
namespace {

using Json = nlohmann::json;

// Selectors are compiled by devmgr's CEL evaluator, with every function and field of its
// environment (which of them a cluster's features allow: structured::NewSelectorCost).
absl::StatusOr<uint64_t> SelectorMaxCost(const std::string& expression) {
  return cel::SelectorMaxCost(expression);
}

constexpr char kBadName[] = "!@#$%^";
constexpr char kLabelError[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kSubdomainError[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr char kCIdentifierError[] =
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    "validation is '[A-Za-z_][A-Za-z0-9_]*')";
constexpr char kRefError[] =
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'";
constexpr char kDomainError[] =
    "a fully qualified name must be a domain and a name separated by a slash";

// Upstream's selector of its CEL-cost scenarios: seven nested all() over ten items, estimated at
// 85,555,551.
constexpr char kCostlySelector[] =
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))";

// Upstream's validClaimSpec: one request "foo" for one device of class "foo".
Json ValidClaim() {
  return Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "foo", "namespace": "ns"},
      "spec": {"devices": {"requests": [{"name": "foo", "exactly": {
          "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1}}]}}})");
}

// Upstream's validClaimSpecWithFirstAvailable: request "foo" with subrequests "foo" and "bar".
Json ValidClaimWithFirstAvailable() {
  return Json::parse(R"({"metadata": {"name": "foo", "namespace": "ns"},
      "spec": {"devices": {"requests": [{"name": "foo", "firstAvailable": [
      {"name": "foo", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1},
      {"name": "bar", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1}]}]}}})");
}

Json& Requests(Json& claim) { return claim["spec"]["devices"]["requests"]; }
Json& Devices(Json& claim) { return claim["spec"]["devices"]; }

Json OpaqueConfig(Json parameters) {
  Json config = {{"opaque", {{"driver", "dra.example.com"}}}};
  if (!parameters.is_discarded()) config["opaque"]["parameters"] = std::move(parameters);
  return config;
}

Json GoodParameters() {
  return Json::parse(R"({"kind": "foo", "apiVersion": "dra.example.com/v1"})");
}

struct Scenario {
  std::string name;                 // upstream's, where the scenario is upstream's
  Json object;                      // a claim, a class or a slice
  std::vector<std::string> errors;  // in upstream's order; none: valid
};

std::string Expected(const std::vector<std::string>& errors) {
  if (errors.size() == 1) return errors.front();
  return absl::StrCat("[", absl::StrJoin(errors, ", "), "]");
}

// The scenario's object decodes, and `validate` gives the scenario's errors (or none).
template <typename T>
void CheckWith(const Scenario& scenario, absl::StatusOr<T> (*decode)(const Json&),
               const std::function<absl::Status(const T&)>& validate) {
  SCOPED_TRACE(scenario.name);
  absl::StatusOr<T> object = decode(scenario.object);
  ASSERT_TRUE(object.ok()) << object.status();
  absl::Status valid = validate(*object);
  if (scenario.errors.empty()) {
    EXPECT_TRUE(valid.ok()) << valid;
    return;
  }
  EXPECT_EQ(valid.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(valid.message()), Expected(scenario.errors));
}

void Check(const Scenario& scenario) {
  // Selectors' costs are estimated by devmgr's CEL evaluator, as the API server's validation
  // estimates them with cel-go.
  CheckWith<ResourceClaim>(scenario, DecodeResourceClaim, [](const ResourceClaim& claim) {
    return ValidateResourceClaim(claim, SelectorMaxCost);
  });
}

Json With(Json claim, const std::function<void(Json&)>& change) {
  change(claim);
  return claim;
}

TEST(ResourceValidationTest, TestValidateClaim) {
  const std::string r0 = "spec.devices.requests[0]";
  const std::vector<Scenario> scenarios = {
      {"good-claim", ValidClaim(), {}},
      {"bad-classname",
       With(ValidClaim(), [](Json& c) { Requests(c)[0]["exactly"]["deviceClassName"] = kBadName; }),
       {absl::StrCat(r0,
                     ".exactly.deviceClassName: Invalid value: \"!@#$%^\": ", kSubdomainError)}},
      {"missing-classname",
       With(ValidClaim(), [](Json& c) { Requests(c)[0]["exactly"].erase("deviceClassName"); }),
       {absl::StrCat(r0, ".exactly.deviceClassName: Required value")}},
      {"too-many-requests",
       With(ValidClaim(),
            [](Json& c) {
              for (int i = 1; i <= 32; ++i) {
                Json request = Requests(c)[0];
                request["name"] = absl::StrCat("foo", i);
                Requests(c).push_back(request);
              }
            }),
       {"spec.devices.requests: Too many: 33: must have at most 32 items"}},
      {"valid-request",
       With(ValidClaim(),
            [](Json& c) {
              for (int i = 1; i < 32; ++i) {
                Json request = Requests(c)[0];
                request["name"] = absl::StrCat("foo", i);
                Requests(c).push_back(request);
                Devices(c)["constraints"].push_back({{"matchAttribute", "foo/bar"}});
                Devices(c)["config"].push_back(OpaqueConfig(GoodParameters()));
              }
              Devices(c)["constraints"].push_back({{"matchAttribute", "foo/bar"}});
              Devices(c)["config"].push_back(OpaqueConfig(GoodParameters()));
            }),
       {}},
      {"too-many-constraints-and-configs",
       With(ValidClaim(),
            [](Json& c) {
              for (int i = 0; i < 33; ++i) {
                Devices(c)["constraints"].push_back({{"matchAttribute", "foo/bar"}});
                Devices(c)["config"].push_back(OpaqueConfig(GoodParameters()));
              }
            }),
       {"spec.devices.constraints: Too many: 33: must have at most 32 items",
        "spec.devices.config: Too many: 33: must have at most 32 items"}},
      {"invalid-spec",
       With(ValidClaim(),
            [](Json& c) {
              Devices(c)["constraints"] = {
                  {{"requests", {"foo", kBadName}}, {"matchAttribute", "missing-domain"}},
                  {{"matchAttribute", ""}},
                  Json::object()};
              Json config = OpaqueConfig(GoodParameters());
              config["requests"] = {"foo", kBadName};
              Devices(c)["config"] = Json::array({config});
            }),
       {absl::StrCat("spec.devices.constraints[0].requests[1]: Invalid value: \"!@#$%^\": ",
                     kLabelError),
        absl::StrCat("spec.devices.constraints[0].requests[1]: Invalid value: \"!@#$%^\": ",
                     kRefError),
        absl::StrCat("spec.devices.constraints[0].matchAttribute: Invalid value: "
                     "\"missing-domain\": ",
                     kCIdentifierError),
        absl::StrCat("spec.devices.constraints[0].matchAttribute: Invalid value: "
                     "\"missing-domain\": ",
                     kDomainError),
        absl::StrCat("spec.devices.constraints[1].matchAttribute: Invalid value: \"\": ",
                     kCIdentifierError),
        absl::StrCat("spec.devices.constraints[1].matchAttribute: Invalid value: \"\": ",
                     kDomainError),
        "spec.devices.constraints[2].matchAttribute: Required value",
        absl::StrCat("spec.devices.config[0].requests[1]: Invalid value: \"!@#$%^\": ",
                     kLabelError),
        absl::StrCat("spec.devices.config[0].requests[1]: Invalid value: \"!@#$%^\": ",
                     kRefError)}},
      {"allocation-mode",
       With(ValidClaim(),
            [](Json& c) {
              const Json good = Requests(c)[0];
              auto add = [&](const char* name, Json exactly) {
                Json request = good;
                request["name"] = name;
                request["exactly"].merge_patch(exactly);
                Requests(c).push_back(request);
              };
              add("foo2", {{"allocationMode", "All"}, {"count", nullptr}});
              add("foo3", {{"count", -1}});
              add("foo4", {{"allocationMode", "other"}, {"count", nullptr}});
              add("foo5", {{"allocationMode", "All"}, {"count", 2}});
              add("foo", Json::object());
            }),
       {"spec.devices.requests[2].exactly.count: Invalid value: -1: must be greater than zero",
        "spec.devices.requests[3].exactly.allocationMode: Unsupported value: \"other\": "
        "supported values: \"All\", \"ExactCount\"",
        "spec.devices.requests[4].exactly.count: Invalid value: 2: must not be specified when "
        "allocationMode is 'All'",
        "spec.devices.requests[5].name: Duplicate value: \"foo\""}},
      {"configuration",
       With(ValidClaim(),
            [](Json& c) {
              // Written compactly, {"str":"..."} is 10 bytes besides the string.
              Devices(c)["config"] = {
                  OpaqueConfig(nullptr),
                  OpaqueConfig("hello-world"),
                  OpaqueConfig(Json(Json::value_t::discarded)),
                  OpaqueConfig({{"str", std::string(10 * 1024 - 10, 'x')}}),
                  OpaqueConfig({{"str", std::string(10 * 1024 - 10 + 1, 'x')}}),
                  Json::object(),
                  {{"opaque", {{"driver", "Not_A_Driver!"}, {"parameters", GoodParameters()}}}},
              };
            }),
       {"spec.devices.config[0].opaque.parameters: Required value",
        "spec.devices.config[1].opaque.parameters: Invalid value: \"<value omitted>\": must be "
        "a valid JSON object",
        "spec.devices.config[2].opaque.parameters: Required value",
        "spec.devices.config[4].opaque.parameters: Too long: may not be more than 10240 bytes",
        "spec.devices.config[5].opaque: Required value",
        absl::StrCat("spec.devices.config[6].opaque.driver: Invalid value: \"Not_A_Driver!\": ",
                     kSubdomainError)}},
      {"CEL-length",
       With(ValidClaim(),
            [](Json& c) {
              Json request = Requests(c)[0];
              request["name"] = "foo-2";
              const std::string expression = "device.driver == \"\"";
              auto of_length = [&](size_t length) {
                return absl::StrCat("device.driver == \"",
                                    std::string(length - expression.size(), 'x'), "\"");
              };
              request["exactly"]["selectors"] = {{{"cel", {{"expression", of_length(10240)}}}},
                                                 {{"cel", {{"expression", of_length(10241)}}}},
                                                 Json::object()};
              Requests(c).push_back(request);
            }),
       {"spec.devices.requests[1].exactly.selectors[1].cel.expression: Too long: may not be "
        "more than 10240 bytes",
        "spec.devices.requests[1].exactly.selectors[2].cel: Required value"}},
      {"missing-name",
       With(ValidClaim(), [](Json& c) { c["metadata"].erase("name"); }),
       {"metadata.name: Required value: name or generateName is required"}},
      {"bad-name",
       With(ValidClaim(), [](Json& c) { c["metadata"]["name"] = "a/b"; }),
       {"metadata.name: Invalid value: \"a/b\": a lowercase RFC 1123 subdomain must consist of "
        "lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
      // Named from its generateName, as the API server names it before it validates it.
      {"generate-name",
       With(ValidClaim(),
            [](Json& c) {
              c["metadata"].erase("name");
              c["metadata"]["generateName"] = "gpu-";
            }),
       {}},
      {"bad-generate-name",
       With(ValidClaim(),
            [](Json& c) {
              c["metadata"].erase("name");
              c["metadata"]["generateName"] = "GPU-";
            }),
       {"metadata.generateName: Invalid value: \"GPU-\": a lowercase RFC 1123 subdomain must "
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
      // A claim read from a file may leave its namespace to its reader (devmgr's own rule).
      {"no-namespace", With(ValidClaim(), [](Json& c) { c["metadata"].erase("namespace"); }), {}},
      {"bad-namespace",
       With(ValidClaim(), [](Json& c) { c["metadata"]["namespace"] = "Ns"; }),
       {"metadata.namespace: Invalid value: \"Ns\": a lowercase RFC 1123 label must consist of "
        "lower case alphanumeric characters or '-', and must start and end with an alphanumeric "
        "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"}},
      {"CEL-compile-errors",
       With(ValidClaim(),
            [](Json& c) {
              Requests(c)[0]["exactly"]["selectors"] = {{{"cel", {{"expression", "noSuchVar"}}}}};
            }),
       {"spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "
        "\"noSuchVar\": compilation failed: ERROR: <input>:1:1: undeclared reference to "
        "'noSuchVar' (in container '')\n | noSuchVar\n | ^"}},
      {"CEL-cost",
       With(ValidClaim(),
            [](Json& c) {
              Requests(c)[0]["exactly"]["selectors"] = {
                  {{"cel", {{"expression", kCostlySelector}}}}};
            }),
       {"spec.devices.requests[0].exactly.selectors[0].cel.expression: Forbidden: too complex, "
        "exceeds cost limit"}},
      {"prioritized-list-valid", ValidClaimWithFirstAvailable(), {}},
      {"prioritized-list-both-first-available-and-exactly-set",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) {
              Requests(c)[0]["exactly"] = {{"deviceClassName", "foo"}, {"count", 2}};
            }),
       {absl::StrCat(r0,
                     ": Invalid value: \"null\": exactly one of `exactly` or `firstAvailable` "
                     "is required, but multiple fields are set")}},
      {"neither-first-available-nor-exactly",
       With(ValidClaim(), [](Json& c) { Requests(c)[0].erase("exactly"); }),
       {absl::StrCat(
           r0, ": Required value: exactly one of `exactly` or `firstAvailable` is required")}},
      {"prioritized-list-invalid-nested-request",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) {
              Requests(c)[0]["firstAvailable"][0] = {{"name", kBadName}};
            }),
       {absl::StrCat(r0, ".firstAvailable[0].name: Invalid value: \"!@#$%^\": ", kLabelError),
        absl::StrCat(r0, ".firstAvailable[0].deviceClassName: Required value")}},
      {"prioritized-list-nested-requests-same-name",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) { Requests(c)[0]["firstAvailable"][1]["name"] = "foo"; }),
       {absl::StrCat(r0, ".firstAvailable[1].name: Duplicate value: \"foo\"")}},
      {"prioritized-list-too-many-subrequests",
       With(ValidClaim(),
            [](Json& c) {
              Json request = {{"name", "foo"}, {"firstAvailable", Json::array()}};
              for (int i = 0; i <= 8; ++i) {
                request["firstAvailable"].push_back(
                    {{"name", absl::StrCat("subreq-", i)}, {"deviceClassName", "foo"}});
              }
              Requests(c)[0] = request;
            }),
       {absl::StrCat(r0, ".firstAvailable: Too many: 9: must have at most 8 items")}},
      {"prioritized-list-config-requests-with-subrequest-reference",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) {
              Json config = OpaqueConfig(GoodParameters());
              config["requests"] = {"foo/bar"};
              Devices(c)["config"] = Json::array({config});
            }),
       {}},
      {"prioritized-list-config-requests-with-parent-request-reference",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) {
              Json config = OpaqueConfig(GoodParameters());
              config["requests"] = {"foo"};
              Devices(c)["config"] = Json::array({config});
            }),
       {}},
      {"prioritized-list-config-requests-with-invalid-subrequest-reference",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) {
              Json config = OpaqueConfig(GoodParameters());
              config["requests"] = {"foo/baz"};
              Devices(c)["config"] = Json::array({config});
            }),
       {absl::StrCat("spec.devices.config[0].requests[0]: Invalid value: \"foo/baz\": ",
                     kRefError)}},
      {"prioritized-list-constraints-requests-with-subrequest-reference",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) {
              Devices(c)["constraints"] = {
                  {{"requests", {"foo/bar"}}, {"matchAttribute", "dra.example.com/driverVersion"}}};
            }),
       {}},
      {"prioritized-list-constraints-requests-with-invalid-subrequest-reference",
       With(ValidClaimWithFirstAvailable(),
            [](Json& c) {
              Devices(c)["constraints"] = {
                  {{"requests", {"foo/baz"}}, {"matchAttribute", "dra.example.com/driverVersion"}}};
            }),
       {absl::StrCat("spec.devices.constraints[0].requests[0]: Invalid value: \"foo/baz\": ",
                     kRefError)}},
      {"reference-with-two-slashes",
       With(ValidClaim(),
            [](Json& c) {
              Devices(c)["constraints"] = {
                  {{"requests", {"foo/foo/foo", "foo", "foo"}}, {"distinctAttribute", "a/b"}}};
            }),
       {absl::StrCat("spec.devices.constraints[0].requests[0]: Invalid value: \"foo/foo/foo\": ",
                     kRefError),
        "spec.devices.constraints[0].requests[2]: Duplicate value: \"foo\""}},
      {"bad-request-names",
       With(ValidClaim(),
            [](Json& c) {
              Json request = Requests(c)[0];
              request["name"] = "foo.bar";
              Requests(c).push_back(request);
              request["name"] = std::string(64, 'a');
              Requests(c).push_back(request);
            }),
       {"spec.devices.requests[1].name: Invalid value: \"foo.bar\": must not contain dots",
        absl::StrCat("spec.devices.requests[2].name: Invalid value: \"", std::string(64, 'a'),
                     "\": must be no more than 63 characters")}},
      {"tolerations",
       With(ValidClaim(),
            [](Json& c) {
              Requests(c)[0]["exactly"]["tolerations"] = {
                  {{"key", "example.com/ok"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                  {{"key", "a b"}, {"operator", "Exists"}, {"value", "x"}},
                  {{"operator", "Less"}},
                  {{"value", "spaces not allowed"}, {"effect", "Bogus"}}};
            }),
       {absl::StrCat(r0,
                     ".exactly.tolerations[1].key: Invalid value: \"a b\": name part must "
                     "consist of alphanumeric characters, '-', '_' or '.', and must start and "
                     "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                     "'123-abc', regex used for validation is "
                     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        absl::StrCat(r0,
                     ".exactly.tolerations[1].value: Invalid value: \"x\": must be empty for "
                     "operator `Exists`"),
        absl::StrCat(r0,
                     ".exactly.tolerations[2].operator: Unsupported value: \"Less\": supported "
                     "values: \"Equal\", \"Exists\""),
        absl::StrCat(r0,
                     ".exactly.tolerations[3].value: Invalid value: \"spaces not allowed\": a "
                     "valid label must be an empty string or consist of alphanumeric "
                     "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                     "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                     "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        absl::StrCat(r0,
                     ".exactly.tolerations[3].effect: Unsupported value: \"Bogus\": supported "
                     "values: \"NoExecute\", \"NoSchedule\", \"None\"")}},
  };
  for (const Scenario& scenario : scenarios) Check(scenario);
}

// Found by the allocator fuzzer: two requests of one name were both allocated, so the name had
// twice its count of results. The API server refuses such a claim. (Decoding alone accepts it:
// two cases of upstream's TestAllocator have one, and the allocator's answer to it is tested.)
TEST(ResourceValidationTest, RefusesRequestsThatShareAName) {
  Check({"",
         Json::parse(R"({"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
             {"name": "req-0", "exactly": {"deviceClassName": "gpu"}},
             {"name": "req-1", "exactly": {"deviceClassName": "gpu"}},
             {"name": "req-1", "exactly": {"deviceClassName": "gpu"}}]}}})"),
         {"spec.devices.requests[2].name: Duplicate value: \"req-1\""}});
}

// Names are unique within their own list only: two requests may each have a subrequest "big".
TEST(ResourceValidationTest, AcceptsTheSameSubrequestNameUnderTwoRequests) {
  Check({"",
         Json::parse(R"({"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
             {"name": "req-0", "firstAvailable": [{"name": "big", "deviceClassName": "gpu"}]},
             {"name": "req-1", "firstAvailable": [{"name": "big", "deviceClassName": "gpu"}]}]}}})"),
         {}});
}

// A repeated error is given once, as Go's aggregate does; a quote in a value is escaped as %q.
TEST(ResourceValidationTest, QuotesValuesAsGoAndGivesARepeatOnce) {
  Check({"",
         With(ValidClaim(),
              [](Json& c) {
                Devices(c)["constraints"] = {{{"matchAttribute", "a/b"}},
                                             {{"matchAttribute", "a\"b/c"}}};
              }),
         {absl::StrCat("spec.devices.constraints[1].matchAttribute: Invalid value: \"a\\\"b\": ",
                       kSubdomainError)}});
  // Both segments of "A/A" break the label format with the same text at the same field.
  Check({"",
         With(ValidClaim(),
              [](Json& c) {
                Devices(c)["constraints"] = {{{"requests", {"A/A"}}, {"matchAttribute", "a/b"}}};
              }),
         {absl::StrCat("spec.devices.constraints[0].requests[0]: Invalid value: \"A\": ",
                       kLabelError),
          absl::StrCat("spec.devices.constraints[0].requests[0]: Invalid value: \"A/A\": ",
                       kRefError)}});
}

// Upstream's valid class: name "foo", no selectors.
Json ValidClass() {
  return Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
      "metadata": {"name": "foo"}, "spec": {}})");
}

void CheckClass(const Scenario& scenario) {
  CheckWith<DeviceClass>(scenario, DecodeDeviceClass, [](const DeviceClass& device_class) {
    return ValidateDeviceClass(device_class, SelectorMaxCost);
  });
  // DecodeValidDeviceClass decodes and refuses it the same way.
  if (!scenario.errors.empty()) {
    EXPECT_EQ(
        std::string(DecodeValidDeviceClass(scenario.object, SelectorMaxCost).status().message()),
        Expected(scenario.errors));
  }
}

TEST(ResourceValidationTest, TestValidateClass) {
  const std::vector<Scenario> scenarios = {
      {"good-class", ValidClass(), {}},
      {"missing-name",
       With(ValidClass(), [](Json& c) { c["metadata"].erase("name"); }),
       {"metadata.name: Required value: name or generateName is required"}},
      {"bad-name",
       With(ValidClass(), [](Json& c) { c["metadata"]["name"] = kBadName; }),
       {absl::StrCat("metadata.name: Invalid value: \"!@#$%^\": ", kSubdomainError)}},
      {"good-selectors",
       With(ValidClass(),
            [](Json& c) {
              c["spec"]["selectors"] = {
                  {{"cel", {{"expression", "device.driver == \"dra.example.com\""}}}}};
            }),
       {}},
      {"too-many-selectors",
       With(ValidClass(),
            [](Json& c) {
              for (int i = 0; i < 33; ++i) {
                c["spec"]["selectors"].push_back({{"cel", {{"expression", "true"}}}});
              }
            }),
       {"spec.selectors: Too many: 33: must have at most 32 items"}},
      {"missing-cel",
       With(ValidClass(), [](Json& c) { c["spec"]["selectors"] = Json::array({Json::object()}); }),
       {"spec.selectors[0].cel: Required value"}},
      {"CEL-compile-errors",
       With(ValidClass(),
            [](Json& c) {
              c["spec"]["selectors"] = {{{"cel", {{"expression", "device.driver =="}}}}};
            }),
       {"spec.selectors[0].cel.expression: Invalid value: \"device.driver ==\": compilation "
        "failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>'\n | device.driver "
        "==\n | ................^"}},
      {"CEL-cost",
       With(ValidClass(),
            [](Json& c) {
              c["spec"]["selectors"] = {{{"cel", {{"expression", kCostlySelector}}}}};
            }),
       {"spec.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"}},
      {"configuration",
       With(ValidClass(),
            [](Json& c) {
              c["spec"]["config"] = {OpaqueConfig(GoodParameters()), OpaqueConfig(nullptr),
                                     Json::object()};
            }),
       {"spec.config[1].opaque.parameters: Required value",
        "spec.config[2].opaque: Required value"}},
      {"too-many-configs",
       With(ValidClass(),
            [](Json& c) {
              for (int i = 0; i < 33; ++i) {
                c["spec"]["config"].push_back(OpaqueConfig(GoodParameters()));
              }
            }),
       {"spec.config: Too many: 33: must have at most 32 items"}},
      {"extended-resource-name",
       With(ValidClass(), [](Json& c) { c["spec"]["extendedResourceName"] = "example.com/gpu"; }),
       {}},
      {"invalid-extended-resource-name",
       With(ValidClass(), [](Json& c) { c["spec"]["extendedResourceName"] = "gpu"; }),
       {"spec.extendedResourceName: Invalid value: \"gpu\": must be a valid extended resource "
        "name"}},
  };
  for (const Scenario& scenario : scenarios) CheckClass(scenario);
}

// Decode, then validate: a claim the decoder refuses keeps the decoder's text; a valid one
// comes back decoded.
TEST(ResourceValidationTest, DecodeValidResourceClaimDecodesThenValidates) {
  EXPECT_EQ(DecodeValidResourceClaim(Json::parse(R"({"kind": "Pod"})"), SelectorMaxCost)
                .status()
                .message(),
            "kind: is \"Pod\", not ResourceClaim");
  EXPECT_EQ(
      DecodeValidResourceClaim(With(ValidClaim(), [](Json& c) { Requests(c)[0]["name"] = "a.b"; }),
                               SelectorMaxCost)
          .status()
          .message(),
      "spec.devices.requests[0].name: Invalid value: \"a.b\": must not contain dots");
  absl::StatusOr<ResourceClaim> valid = DecodeValidResourceClaim(ValidClaim(), SelectorMaxCost);
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_EQ(valid->spec.requests[0].name, "foo");
}

// Upstream's valid slice: driver "dra.example.com", pool "pool" of one slice, node "worker", one
// device.
Json ValidSlice() {
  return Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
      "metadata": {"name": "slice"}, "spec": {"driver": "dra.example.com", "nodeName": "worker",
      "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
      "devices": [{"name": "device-0"}]}})");
}

TEST(ResourceValidationTest, TestValidateResourceSlice) {
  const std::string kOneOf =
      "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
      "required";
  const std::vector<Scenario> scenarios = {
      {"good", ValidSlice(), {}},
      {"bad-driver",
       With(ValidSlice(), [](Json& c) { c["spec"]["driver"] = "Dra_Example"; }),
       {absl::StrCat("spec.driver: Invalid value: \"Dra_Example\": ", kSubdomainError)}},
      {"missing-driver",
       With(ValidSlice(), [](Json& c) { c["spec"]["driver"] = ""; }),
       {"spec.driver: Required value",
        absl::StrCat("spec.driver: Invalid value: \"\": ", kSubdomainError)}},
      {"bad-pool",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["pool"] = {{"name", "a/B"}, {"generation", -1}, {"resourceSliceCount", 0}};
            }),
       {absl::StrCat("spec.pool.name: Invalid value: \"B\": ", kSubdomainError),
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"}},
      {"missing-pool-name",
       With(ValidSlice(), [](Json& c) { c["spec"]["pool"]["name"] = ""; }),
       {"spec.pool.name: Required value"}},
      {"no-node-selection",
       With(ValidSlice(), [](Json& c) { c["spec"].erase("nodeName"); }),
       {absl::StrCat("spec: Required value: ", kOneOf)}},
      {"two-node-selections",
       With(ValidSlice(), [](Json& c) { c["spec"]["allNodes"] = true; }),
       {absl::StrCat("spec: Invalid value: \"{`nodeName`, `allNodes`}\": ", kOneOf,
                     ", but multiple fields are set")}},
      {"all-nodes-false",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"].erase("nodeName");
              c["spec"]["allNodes"] = false;
            }),
       {"spec.allNodes: Invalid value: false: must be either unset or set to true",
        absl::StrCat("spec: Required value: ", kOneOf)}},
      {"empty-node-name",
       With(ValidSlice(), [](Json& c) { c["spec"]["nodeName"] = ""; }),
       {"spec.nodeName: Invalid value: \"\": must be either unset or set to a non-empty string",
        absl::StrCat("spec: Required value: ", kOneOf)}},
      {"counters-and-devices",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["sharedCounters"] = {
                  {{"name", "set"}, {"counters", {{"memory", {{"value", "1Gi"}}}}}}};
            }),
       {"spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"}},
      {"bad-and-duplicate-device-names",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["devices"].push_back({{"name", "device.1"}});
              c["spec"]["devices"].push_back({{"name", "device-0"}});
            }),
       {"spec.devices[1].name: Invalid value: \"device.1\": must not contain dots",
        "spec.devices[2].name: Duplicate value: \"device-0\""}},
      {"too-many-devices",
       With(ValidSlice(),
            [](Json& c) {
              for (int i = 1; i <= 128; ++i) {
                c["spec"]["devices"].push_back({{"name", absl::StrCat("device-", i)}});
              }
            }),
       {"spec.devices: Too many: 129: must have at most 128 items"}},
      {"too-many-devices-with-taints",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["devices"][0]["taints"] = {{{"key", "k"}, {"effect", "NoSchedule"}}};
              for (int i = 1; i <= 64; ++i) {
                c["spec"]["devices"].push_back({{"name", absl::StrCat("device-", i)}});
              }
            }),
       {"spec.devices: Too many: 65: must have at most 64 items"}},
      {"too-many-devices-with-list-attributes",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["devices"][0]["attributes"] = {
                  {"model", {{"string", "a"}}}, {"pcieRoots", {{"strings", {"pci0000:00"}}}}};
              for (int i = 1; i <= 64; ++i) {
                c["spec"]["devices"].push_back({{"name", absl::StrCat("device-", i)}});
              }
            }),
       {"spec.devices: Too many: 65: must have at most 64 items"}},
      {"single-value-attributes-keep-the-limit-of-128",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["devices"][0]["attributes"] = {{"model", {{"string", "a"}}},
                                                       {"index", {{"int", 0}}}};
              for (int i = 1; i <= 64; ++i) {
                c["spec"]["devices"].push_back({{"name", absl::StrCat("device-", i)}});
              }
            }),
       {}},
      // Upstream's per-device-node-selection-and-device-without-node-selector and
      // not-per-device-node-selection-and-device-node-selection, and the fields of one device.
      {"per-device-node-selection",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"].erase("nodeName");
              c["spec"]["perDeviceNodeSelection"] = true;
              c["spec"]["devices"][0]["nodeName"] = "node";
              c["spec"]["devices"].push_back({{"name", "device-1"}});
              c["spec"]["devices"].push_back(
                  {{"name", "device-2"},
                   {"allNodes", true},
                   {"nodeSelector", Json::parse(R"({"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["node"]}]}]})")}});
              c["spec"]["devices"].push_back({{"name", "device-3"}, {"allNodes", false}});
              c["spec"]["devices"].push_back({{"name", "device-4"}, {"nodeName", ""}});
            }),
       {"spec.devices[1]: Required value: exactly one of `nodeName`, `nodeSelector`, or "
        "`allNodes` is required when `perDeviceNodeSelection` is set to true in the "
        "ResourceSlice spec",
        "spec.devices[2]: Invalid value: \"{`nodeSelector`, `allNodes`}\": exactly one of "
        "`nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is "
        "set to true in the ResourceSlice spec",
        "spec.devices[3].allNodes: Invalid value: false: must be either unset or set to true",
        "spec.devices[3]: Required value: exactly one of `nodeName`, `nodeSelector`, or "
        "`allNodes` is required when `perDeviceNodeSelection` is set to true in the "
        "ResourceSlice spec",
        "spec.devices[4].nodeName: Invalid value: \"\": must not be empty",
        "spec.devices[4]: Required value: exactly one of `nodeName`, `nodeSelector`, or "
        "`allNodes` is required when `perDeviceNodeSelection` is set to true in the "
        "ResourceSlice spec"}},
      // DRAOptionalNodeOperations: a set of the known operations, and NodePrepareResources only
      // with NodeUnprepareResources or "*".
      {"skip-node-operations",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["skipNodeOperations"] = {"NodeUnprepareResources", "NodePrepareResources"};
            }),
       {}},
      {"skip-all-node-operations",
       With(ValidSlice(), [](Json& c) { c["spec"]["skipNodeOperations"] = {"*"}; }),
       {}},
      {"bad-skip-node-operations",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"]["skipNodeOperations"] = {"NodePrepareResources", "Later",
                                                 "NodePrepareResources"};
            }),
       {"spec.skipNodeOperations[1]: Unsupported value: \"Later\": supported values: \"*\", "
        "\"NodePrepareResources\", \"NodeUnprepareResources\"",
        "spec.skipNodeOperations[2]: Duplicate value: \"NodePrepareResources\"",
        "spec.skipNodeOperations: Invalid value: "
        "[\"NodePrepareResources\",\"Later\",\"NodePrepareResources\"]: NodePrepareResources "
        "cannot be skipped unless NodeUnprepareResources is also skipped"}},
      // Upstream's text for the rule alone, as its declarative validation test prints it.
      {"skip-node-prepare-only",
       With(ValidSlice(),
            [](Json& c) { c["spec"]["skipNodeOperations"] = {"NodePrepareResources"}; }),
       {"spec.skipNodeOperations: Invalid value: [\"NodePrepareResources\"]: NodePrepareResources "
        "cannot be skipped unless NodeUnprepareResources is also skipped"}},
      {"device-node-selection-without-per-device",
       With(ValidSlice(), [](Json& c) { c["spec"]["devices"][0]["allNodes"] = true; }),
       {"spec.devices[0]: Invalid value: \"null\": `nodeName`, `nodeSelector` and `allNodes` "
        "can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"}},
      // Core validation's ValidateNodeSelector on the slice's node selector, then the resource
      // API's own rule of one term (upstream's bad-empty-node-selector).
      {"bad-empty-node-selector",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"].erase("nodeName");
              c["spec"]["nodeSelector"] = Json::object();
            }),
       {"spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node "
        "selector term",
        "spec.nodeSelector.nodeSelectorTerms: Invalid value: []core.NodeSelectorTerm(nil): must "
        "have exactly one node selector term"}},
      {"two-node-selector-terms",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"].erase("nodeName");
              c["spec"]["nodeSelector"] = Json::parse(R"({"nodeSelectorTerms": [
                  {"matchFields": [{"key": "metadata.name", "operator": "In",
                                    "values": ["worker"]}]},
                  {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]})");
            }),
       {"spec.nodeSelector.nodeSelectorTerms: Invalid value: []core.NodeSelectorTerm{core."
        "NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement(nil), MatchFields:[]"
        "core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"metadata.name\", "
        "Operator:\"In\", Values:[]string{\"worker\"}}}}, core.NodeSelectorTerm{"
        "MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"a\", "
        "Operator:\"Exists\", Values:[]string(nil)}}, MatchFields:[]core.NodeSelectorRequirement("
        "nil)}}: must have exactly one node selector term"}},
      {"bad-node-selector-requirements",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"].erase("nodeName");
              c["spec"]["nodeSelector"] = Json::parse(R"({"nodeSelectorTerms": [{
                  "matchExpressions": [
                      {"key": "bad key", "operator": "In", "values": []},
                      {"key": "a", "operator": "Exists", "values": ["x"]},
                      {"key": "b", "operator": "Gt", "values": ["1", "2"]},
                      {"key": "c", "operator": "Foo"},
                      {"key": "d", "operator": "NotIn", "values": ["bad value"]}],
                  "matchFields": [
                      {"key": "metadata.uid", "operator": "In", "values": ["x"]},
                      {"key": "metadata.name", "operator": "Exists"},
                      {"key": "metadata.name", "operator": "In", "values": ["Bad_Name"]}]}]})");
            }),
       {"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must "
        "be specified when `operator` is 'In' or 'NotIn'",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: \"bad "
        "key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[1].values: Forbidden: may not be "
        "specified when `operator` is 'Exists' or 'DoesNotExist'",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[2].values: Required value: must "
        "be specified single value when `operator` is 'Lt' or 'Gt'",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[3].operator: Invalid value: "
        "\"Foo\": not a valid selector operator",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[4].values[0]: Invalid value: "
        "\"bad value\": a valid label must be an empty string or consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "
        "\"metadata.uid\": not a valid field selector key",
        "spec.nodeSelector.nodeSelectorTerms[0].matchFields[1].operator: Invalid value: "
        "\"Exists\": not a valid selector operator",
        absl::StrCat("spec.nodeSelector.nodeSelectorTerms[0].matchFields[2].values[0]: Invalid "
                     "value: \"Bad_Name\": ",
                     kSubdomainError)}},
      // A device's own node selector: core validation alone, two terms allowed.
      {"device-node-selectors",
       With(ValidSlice(),
            [](Json& c) {
              c["spec"].erase("nodeName");
              c["spec"]["perDeviceNodeSelection"] = true;
              c["spec"]["devices"][0]["nodeSelector"] = Json::parse(R"({"nodeSelectorTerms": [
                  {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                  {"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]}]})");
              c["spec"]["devices"].push_back(
                  {{"name", "device-1"}, {"nodeSelector", Json::object()}});
            }),
       {"spec.devices[1].nodeSelector.nodeSelectorTerms: Required value: must have at least one "
        "node selector term"}},
  };
  for (const Scenario& scenario : scenarios) {
    CheckWith<ResourceSlice>(scenario, DecodeResourceSlice, ValidateResourceSlice);
  }
}

}  // namespace
}  // namespace devmgr::kubeapi
