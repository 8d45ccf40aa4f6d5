// The canonical reader in front of the general decoder: it reads the files Go and devmgr write,
// leaves everything else to the general decoder, and Parse gives what the general decoder
// alone gives, whichever of the two read the file.
#include "checkpoint/canonical_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/tree_decoder.h"
#include "common/file_store.h"
#include "tests/checkpoint/checkpoint_samples.h"

namespace devmgr::checkpoint {
namespace {

using internal::ParseTree;
using internal::ReadCanonical;

// Parse and the general decoder agree on `bytes`: the same error, or the same checkpoint.
void ExpectParseAgreesWithTheTree(const std::string& bytes) {
  const absl::StatusOr<ParsedCheckpoint> parsed = Parse(bytes);
  const absl::StatusOr<ParsedCheckpoint> tree = ParseTree(bytes);
  ASSERT_EQ(parsed.status(), tree.status()) << bytes;
  if (!tree.ok()) return;
  EXPECT_EQ(parsed->data, tree->data) << bytes;
  EXPECT_EQ(parsed->format, tree->format) << bytes;
  EXPECT_EQ(parsed->stored_checksum, tree->stored_checksum) << bytes;
  EXPECT_EQ(parsed->computed_checksum, tree->computed_checksum) << bytes;
}

// `json`, whose Checksum member is written as CHECKSUM, with the checksum the kubelet computes
// for its data in its place, so that the file verifies and Parse keeps the canonical reading.
std::string WithItsChecksum(const std::string& json) {
  const absl::StatusOr<ParsedCheckpoint> tree =
      ParseTree(absl::StrReplaceAll(json, {{"CHECKSUM", "0"}}));
  if (!tree.ok()) return json;
  return absl::StrReplaceAll(json, {{"CHECKSUM", absl::StrCat(tree->computed_checksum)}});
}

TEST(CanonicalReaderTest, ReadsWhatEncodeWritesAsTheTreeDoes) {
  std::mt19937 rng(11);
  for (int round = 0; round < 40; ++round) {
    CheckpointData data;
    const int entries = static_cast<int>(rng() % 50);
    for (int i = 0; i < entries; ++i) {
      PodDevicesEntry& entry = data.pod_device_entries.emplace_back();
      entry.pod_uid = absl::StrCat("3f2a6c1e-", i);
      entry.container_name = rng() % 4 == 0 ? "" : "main";
      entry.resource_name = "vendor.example.com/gpu";
      for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
        std::vector<std::string>& ids = entry.device_ids[static_cast<int64_t>(rng() % 12) - 1];
        for (int d = static_cast<int>(rng() % 4); d > 0; --d) ids.push_back(absl::StrCat("d", d));
      }
      for (int b = static_cast<int>(rng() % 40); b > 0; --b) {
        entry.alloc_resp.push_back(static_cast<char>(rng()));
      }
    }
    for (int r = static_cast<int>(rng() % 6); r > 0; --r) {
      std::vector<std::string>& ids = data.registered_devices[absl::StrCat("r.io/", r)];
      for (int d = static_cast<int>(rng() % 5); d > 0; --d) ids.push_back(absl::StrCat("d", d));
    }
    const std::string bytes = Encode(data);
    ASSERT_TRUE(ReadCanonical(bytes).has_value()) << bytes;
    ExpectParseAgreesWithTheTree(bytes);
    absl::StatusOr<CheckpointData> decoded = Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, data) << "round " << round;
  }
}

TEST(CanonicalReaderTest, ReadsAKubeletsIndentedFileAsTheTreeDoes) {
  absl::StatusOr<std::string> bytes =
      ReadWholeFile(std::filesystem::path(DEVMGR_CHECKPOINT_SAMPLES_DIR) / "sample-13.json");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE(ReadCanonical(*bytes).has_value());
  ExpectParseAgreesWithTheTree(*bytes);
}

// A file in the canonical form whose checksum does not verify may be in the pre-1.20 layout or
// damaged: the general decoder says which, and its result stands.
TEST(CanonicalReaderTest, AFileThatDoesNotVerifyIsDecodedByTheTree) {
  for (const char* file : {"sample-17.json", "sample-19.json"}) {
    absl::StatusOr<std::string> bytes =
        ReadWholeFile(std::filesystem::path(DEVMGR_CHECKPOINT_SAMPLES_DIR) / file);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ExpectParseAgreesWithTheTree(*bytes);
    EXPECT_FALSE(Parse(*bytes)->ChecksumMatches()) << file;
  }
  // Every device list null decodes in both layouts; a checksum of the pre-1.20 one picks it.
  const std::string both =
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"p","DeviceIDs":null}]},"Checksum":CHECKSUM})";
  const absl::StatusOr<ParsedCheckpoint> current = ParseTree(WithItsChecksum(both));
  ASSERT_TRUE(current.ok()) << current.status();
  EXPECT_EQ(current->format, Format::kCurrent);
  ExpectParseAgreesWithTheTree(WithItsChecksum(both));
}

struct FormCase {
  const char* name;
  const char* json;  // CHECKSUM stands for the checksum of its data
  bool canonical;    // read by the canonical reader
};

class CanonicalFormTest : public ::testing::TestWithParam<FormCase> {};

TEST_P(CanonicalFormTest, IsReadOnlyInTheCanonicalFormAndParsedAsTheTreeParsesIt) {
  const std::string bytes = WithItsChecksum(GetParam().json);
  EXPECT_EQ(ReadCanonical(bytes).has_value(), GetParam().canonical) << bytes;
  ExpectParseAgreesWithTheTree(bytes);
}

constexpr char kEntry[] =
    R"({"PodUID":"p1","ContainerName":"c","ResourceName":"r.io/x","DeviceIDs":{"0":["d1"]},)"
    R"("AllocResp":"CgYKAUESATE="})";

INSTANTIATE_TEST_SUITE_P(
    Forms, CanonicalFormTest,
    ::testing::Values(
        FormCase{"Empty",
                 R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},)"
                 R"("Checksum":CHECKSUM})",
                 true},
        FormCase{"Spaced",
                 " {\n\t\"Data\" : { \"PodDeviceEntries\" : [ { \"PodUID\" : \"p\" , "
                 "\"DeviceIDs\" : { \"-1\" : [ \"a\" , \"b\" ] } } ] } ,\r\n"
                 "\"Checksum\" : CHECKSUM } \n",
                 true},
        FormCase{"MembersInAnotherOrder",
                 R"({"Checksum":CHECKSUM,"Data":{"RegisteredDevices":{"r.io/x":["d1"]},)"
                 R"("PodDeviceEntries":[{"AllocResp":null,"DeviceIDs":{"1":null,"0":[]},)"
                 R"("ResourceName":"r.io/x","PodUID":"p1"}]}})",
                 true},
        FormCase{"EmptyEntryAndNulls",
                 R"({"Data":{"PodDeviceEntries":[{},{"DeviceIDs":null,"AllocResp":null}],)"
                 R"("RegisteredDevices":{"r.io/x":null}},"Checksum":CHECKSUM})",
                 true},
        FormCase{"NullRegisteredDevices",
                 R"({"Data":{"RegisteredDevices":null},"Checksum":CHECKSUM})", true},
        FormCase{"OnlyAChecksum", R"({"Checksum":CHECKSUM})", true},
        FormCase{"ChecksumZeroThatVerifiesNot",
                 R"({"Data":{"PodDeviceEntries":[{"PodUID":"p"}]},)"
                 R"("Checksum":0})",
                 true},
        FormCase{"KeyInAnotherCase",
                 R"({"data":{"PodDeviceEntries":[{"PodUID":"p"}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"EntryKeyInAnotherCase",
                 R"({"Data":{"PodDeviceEntries":[{"poduid":"p"}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"RepeatedMember",
                 R"({"Data":{"PodDeviceEntries":[{"PodUID":"p","PodUID":"q"}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"RepeatedData",
                 R"({"Data":{"RegisteredDevices":{"a":[]}},)"
                 R"("Data":{"RegisteredDevices":{"b":[]}},"Checksum":CHECKSUM})",
                 false},
        FormCase{"RepeatedResource",
                 R"({"Data":{"RegisteredDevices":{"a":["1"],"a":["2"]}},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"RepeatedNumaNode",
                 R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":)"
                 R"({"0":["a"],"1":["b"],"0":["c"]}}]},"Checksum":CHECKSUM})",
                 false},
        FormCase{"NumaNodeWithALeadingZero",
                 R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":)"
                 R"({"00":["a"]}}]},"Checksum":CHECKSUM})",
                 false},
        FormCase{"NumaNodeWithAPlus",
                 R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":)"
                 R"({"+1":["a"],"1":["b"]}}]},"Checksum":CHECKSUM})",
                 false},
        FormCase{"NumaNodeTwiceUnderTwoKeys",
                 R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":)"
                 R"({"0":["a"],"+0":["b"],"0":["c"]}}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"NumaNodeMinusZero",
                 R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":)"
                 R"({"-0":["a"]}}]},"Checksum":CHECKSUM})",
                 false},
        FormCase{"NumaNodeNotAnInteger",
                 R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":)"
                 R"({"x":["a"]}}]},"Checksum":CHECKSUM})",
                 false},
        FormCase{"NumaNodeOutOfRange",
                 R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":)"
                 R"({"9223372036854775808":["a"]}}]},"Checksum":CHECKSUM})",
                 false},
        FormCase{"EscapedString",
                 R"({"Data":{"PodDeviceEntries":[{"PodUID":"\u0070"}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"NonAsciiString",
                 "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"caf\xC3\xA9\"}]},"
                 "\"Checksum\":CHECKSUM}",
                 false},
        FormCase{"InvalidUtf8String",
                 "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"\xff\"}]},"
                 "\"Checksum\":CHECKSUM}",
                 false},
        FormCase{"NullString",
                 R"({"Data":{"PodDeviceEntries":[{"PodUID":null}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"NullEntry", R"({"Data":{"PodDeviceEntries":[null]},"Checksum":CHECKSUM})", false},
        FormCase{"NullDeviceId",
                 R"({"Data":{"RegisteredDevices":{"a":[null]}},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"NullData", R"({"Data":null,"Checksum":CHECKSUM})", false},
        FormCase{"NullRoot", "null", false},
        FormCase{"NullChecksum", R"({"Data":{},"Checksum":null})", false},
        FormCase{"UnknownMember",
                 R"({"Data":{"PodDeviceEntries":[{"PodUID":"p","Extra":[1]}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"StringWhereAListGoes",
                 R"({"Data":{"RegisteredDevices":{"a":"d1"}},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"PreNumaLayout",
                 R"({"Data":{"PodDeviceEntries":[{"PodUID":"p",)"
                 R"("DeviceIDs":["d1"]}]},"Checksum":CHECKSUM})",
                 false},
        FormCase{"BadBase64",
                 R"({"Data":{"PodDeviceEntries":[{"AllocResp":"abc"}]},)"
                 R"("Checksum":CHECKSUM})",
                 false},
        FormCase{"ChecksumWithAnExponent", R"({"Data":{},"Checksum":1e3})", false},
        FormCase{"ChecksumWithAFraction", R"({"Data":{},"Checksum":12.0})", false},
        FormCase{"NegativeChecksum", R"({"Data":{},"Checksum":-1})", false},
        FormCase{"ChecksumWithALeadingZero", R"({"Data":{},"Checksum":012})", false},
        FormCase{"ChecksumPastUint64", R"({"Data":{},"Checksum":18446744073709551616})", false},
        FormCase{"ChecksumAsAString", R"({"Data":{},"Checksum":"1"})", false},
        FormCase{"ByteOrderMark", "\xEF\xBB\xBF{\"Data\":{},\"Checksum\":CHECKSUM}", false},
        FormCase{"TrailingBytes", R"({"Data":{},"Checksum":CHECKSUM}x)", false},
        FormCase{"TrailingComma", R"({"Data":{},"Checksum":CHECKSUM,})", false},
        FormCase{"Truncated", R"({"Data":{"PodDeviceEntries":[{"PodUID":"p")", false},
        FormCase{"UnterminatedString", R"({"Data":{"PodDeviceEntries":[{"PodUID":"p)", false},
        FormCase{"Empty file", "", false}),
    [](const ::testing::TestParamInfo<FormCase>& param_info) {
      return absl::StrReplaceAll(param_info.param.name, {{" ", ""}});
    });

// An entry as Go writes it, each of its values read.
TEST(CanonicalReaderTest, ReadsAGoWrittenEntry) {
  const std::string bytes = WithItsChecksum(
      absl::StrCat(R"({"Data":{"PodDeviceEntries":[)", kEntry,
                   R"(],"RegisteredDevices":{"r.io/x":["d1"]}},)", R"("Checksum":CHECKSUM})"));
  std::optional<internal::GoDecoded> read = ReadCanonical(bytes);
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->data.pod_device_entries->size(), 1U);
  const internal::GoPodDevicesEntry& entry = read->data.pod_device_entries->front();
  EXPECT_EQ(entry.pod_uid, "p1");
  EXPECT_EQ(entry.container_name, "c");
  EXPECT_EQ(entry.resource_name, "r.io/x");
  EXPECT_EQ(entry.device_ids->at(0), std::vector<std::string>{"d1"});
  EXPECT_EQ(entry.alloc_resp, std::string("\x0a\x06\x0a\x01\x41\x12\x01\x31", 8));
  EXPECT_EQ(read->checksum, ParseTree(bytes)->stored_checksum);
  ExpectParseAgreesWithTheTree(bytes);
}

}  // namespace
}  // namespace devmgr::checkpoint
