// The checkpoint codec: exact kubelet bytes, both formats, Go's decoding rules, every failure
// kind, and randomized round trips.
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "checkpoint/checksum.h"
#include "common/file_store.h"
#include "tests/checkpoint/checkpoint_samples.h"

namespace devmgr::checkpoint {
namespace {

const std::string kAllocResp("\x0a\x06\x0a\x01\x41\x12\x01\x31", 8);

// The current-format example of wire-contract.md §D.2, as the kubelet writes it.
constexpr char kKubeletExample[] =
    R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod1","ContainerName":"con1","ResourceName":)"
    R"("example.com/gpu","DeviceIDs":{"-1":["dev9"],"0":["dev1","dev2"],"1":["dev3"]},)"
    R"("AllocResp":"CgYKAUESATE="}],"RegisteredDevices":{"a.io/x":[],"example.com/gpu":)"
    R"(["dev1","dev2","dev3","dev9"]}},"Checksum":2549016347})";

// The pre-1.20 example of §D.4.
constexpr char kV1Example[] =
    R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod1","ContainerName":"con1","ResourceName":)"
    R"("example.com/gpu","DeviceIDs":["dev1","dev2"],"AllocResp":"CgYKAUESATE="}],)"
    R"("RegisteredDevices":{"example.com/gpu":["dev1","dev2"]}},"Checksum":3547054426})";

CheckpointData ExampleData() {
  CheckpointData data;
  data.pod_device_entries.push_back(
      PodDevicesEntry{"pod1",
                      "con1",
                      "example.com/gpu",
                      {{-1, {"dev9"}}, {0, {"dev1", "dev2"}}, {1, {"dev3"}}},
                      kAllocResp});
  data.registered_devices["a.io/x"] = {};
  data.registered_devices["example.com/gpu"] = {"dev1", "dev2", "dev3", "dev9"};
  return data;
}

// The checksum the kubelet would compute for data whose go-spew text is `text`.
uint64_t ChecksumOfText(const std::string& text) { return internal::Fnv1a32(text); }

TEST(CheckpointTest, EncodeWritesTheKubeletsBytes) {
  EXPECT_EQ(Encode(ExampleData()), kKubeletExample);
}

std::vector<std::shared_ptr<const EncodedEntry>> Rendered(
    const std::vector<PodDevicesEntry>& entries) {
  std::vector<std::shared_ptr<const EncodedEntry>> rendered;
  for (const PodDevicesEntry& entry : entries) {
    rendered.push_back(std::make_shared<const EncodedEntry>(EncodeEntry(entry)));
  }
  return rendered;
}

// Each resource rendered on its own, handed over in reverse order: EncodeRendered sorts them.
std::vector<std::shared_ptr<const EncodedRegistered>> Rendered(
    const std::map<std::string, std::vector<std::string>>& registered) {
  std::vector<std::shared_ptr<const EncodedRegistered>> rendered;
  for (auto it = registered.rbegin(); it != registered.rend(); ++it) {
    rendered.push_back(
        std::make_shared<const EncodedRegistered>(EncodeRegistered(it->first, it->second)));
  }
  return rendered;
}

TEST(CheckpointTest, EncodeRenderedWritesTheSameBytes) {
  const CheckpointData example = ExampleData();
  EXPECT_EQ(
      EncodeRendered(Rendered(example.pod_device_entries), Rendered(example.registered_devices)),
      kKubeletExample);
  EXPECT_EQ(EncodeRendered({}, {}), Encode(CheckpointData{}));
  CheckpointData odd;
  odd.pod_device_entries.push_back({"bad\xFFpod", "c\"1", "r<&>", {{10, {"x"}}, {2, {}}}, ""});
  odd.pod_device_entries.push_back({"p2", "c", "r", {}, std::string("\0\xFF", 2)});
  odd.registered_devices["r"] = {"bad\xFEid"};
  odd.registered_devices["empty"] = {};
  EXPECT_EQ(EncodeRendered(Rendered(odd.pod_device_entries), Rendered(odd.registered_devices)),
            Encode(odd));
}

// One resource's part of the JSON and of the checksum text, as the device manager renders its
// ordered IDs.
TEST(CheckpointTest, EncodeRegisteredRendersOneResource) {
  const EncodedRegistered encoded =
      EncodeRegistered("vendor.com/x", {"a\"b", "dev1", "dev10", "dev2"});
  EXPECT_EQ(encoded.name, "vendor.com/x");
  EXPECT_EQ(encoded.json, R"("vendor.com/x":["a\"b","dev1","dev10","dev2"])");
  EXPECT_EQ(encoded.checksum_text, R"(vendor.com/x:[a"b dev1 dev10 dev2])");
}

TEST(CheckpointTest, EncodeNothingAllocated) {
  EXPECT_EQ(Encode(CheckpointData{}),
            R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":3467439661})");
}

TEST(CheckpointTest, DecodeKubeletExample) {
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(kKubeletExample);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->format, Format::kCurrent);
  EXPECT_EQ(parsed->stored_checksum, 2549016347U);
  EXPECT_TRUE(parsed->ChecksumMatches());
  EXPECT_EQ(parsed->data, ExampleData());
}

// Go's decoder refuses a byte-order mark before the JSON, which nlohmann's parser skips: a
// kubelet starts without such a file, and devmgr reports it unreadable.
TEST(CheckpointTest, AByteOrderMarkMakesTheFileUnreadable) {
  const absl::StatusOr<ParsedCheckpoint> parsed =
      Parse(absl::StrCat("\xEF\xBB\xBF", kKubeletExample));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "not valid JSON: invalid character '\xC3\xAF' looking for beginning of value");
}

TEST(CheckpointTest, PreNumaFormatIsReadAndUpgraded) {
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(kV1Example);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->format, Format::kV1);
  EXPECT_EQ(parsed->computed_checksum, 3547054426U);
  ASSERT_TRUE(parsed->ChecksumMatches());
  ASSERT_EQ(parsed->data.pod_device_entries.size(), 1U);
  const DevicesPerNuma expected{{0, {"dev1", "dev2"}}};
  EXPECT_EQ(parsed->data.pod_device_entries[0].device_ids, expected);

  const std::string upgraded = Encode(parsed->data);
  EXPECT_NE(upgraded.find(R"("DeviceIDs":{"0":["dev1","dev2"]})"), std::string::npos) << upgraded;
  absl::StatusOr<ParsedCheckpoint> reread = Parse(upgraded);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(reread->format, Format::kCurrent);
  EXPECT_TRUE(reread->ChecksumMatches());
  EXPECT_EQ(reread->data, parsed->data);
}

TEST(CheckpointTest, NumaKeysAreWrittenInGoStringOrder) {
  CheckpointData data;
  data.pod_device_entries.push_back(
      {"p", "c", "r", {{10, {"d10"}}, {2, {"d2"}}, {1, {"d1"}}, {0, {"d0"}}, {-1, {"dn"}}}, ""});
  const std::string bytes = Encode(data);
  EXPECT_NE(
      bytes.find(R"("DeviceIDs":{"-1":["dn"],"0":["d0"],"1":["d1"],"10":["d10"],"2":["d2"]})"),
      std::string::npos)
      << bytes;
  EXPECT_NE(bytes.find(R"("AllocResp":"")"), std::string::npos);
  EXPECT_TRUE(Decode(bytes).ok());
}

TEST(CheckpointTest, StringsAreEscapedAsGoDoesAndHashedDecoded) {
  CheckpointData data;
  data.registered_devices["vendor.com/<x>&y"] = {"a\"b", "tab\there", "line\u2028sep"};
  const std::string bytes = Encode(data);
  EXPECT_NE(bytes.find(R"("vendor.com/\u003cx\u003e\u0026y":["a\"b","tab\there","line\u2028sep"])"),
            std::string::npos)
      << bytes;
  absl::StatusOr<CheckpointData> decoded = Decode(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, data);
}

TEST(CheckpointTest, InvalidUtf8IsNormalisedSoTheFileStillVerifies) {
  CheckpointData data;
  data.registered_devices["r"] = {"bad\xFFid"};
  absl::StatusOr<CheckpointData> decoded = Decode(Encode(data));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->registered_devices["r"][0], "bad\xEF\xBF\xBDid");
}

// Go decodes into a pre-filled struct; null, missing and empty each give a different Go value,
// and so a different checksum. Each case gives the go-spew text the kubelet would hash.
struct GoRuleCase {
  const char* name;
  const char* data_json;  // the value of "Data"
  const char* spew;
};

class GoDecodingRulesTest : public ::testing::TestWithParam<GoRuleCase> {};

TEST_P(GoDecodingRulesTest, ChecksumFollowsTheDecodedGoValue) {
  const GoRuleCase& c = GetParam();
  const uint64_t expected = ChecksumOfText(c.spew);
  const std::string file =
      std::string(R"({"Data":)") + c.data_json + R"(,"Checksum":)" + std::to_string(expected) + "}";
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(file);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->computed_checksum, expected) << "expected text: " << c.spew;
  EXPECT_TRUE(Decode(file).ok());
}

INSTANTIATE_TEST_SUITE_P(
    AllRules, GoDecodingRulesTest,
    ::testing::Values(
        GoRuleCase{"MissingKeysKeepThePrefilledEmptyValues", "{}",
                   "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[] "
                   "RegisteredDevices:(map[string][]string)map[]}"},
        GoRuleCase{
            "NullMakesNil", R"({"PodDeviceEntries":null,"RegisteredDevices":null})",
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)<nil>"
            " RegisteredDevices:(map[string][]string)<nil>}"},
        GoRuleCase{"NullData", "null",
                   "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[] "
                   "RegisteredDevices:(map[string][]string)map[]}"},
        GoRuleCase{"EntryFieldsMissingOrNull",
                   R"({"PodDeviceEntries":[{"PodUID":null,"DeviceIDs":null,"AllocResp":null}, {}],)"
                   R"("RegisteredDevices":{"r":null,"s":[]}})",
                   "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{"
                   "PodUID:(string) ContainerName:(string) ResourceName:(string) "
                   "DeviceIDs:(checkpoint.DevicesPerNUMA)<nil> AllocResp:([]uint8)<nil>} {PodUID:("
                   "string) ContainerName:(string) ResourceName:(string) "
                   "DeviceIDs:(checkpoint.DevicesPerNUMA)<nil> AllocResp:([]uint8)<nil>}] "
                   "RegisteredDevices:(map[string][]string)map[r:<nil> s:[]]}"},
        GoRuleCase{"EmptyMapsAndBytes",
                   R"({"PodDeviceEntries":[{"DeviceIDs":{"+1":null,"-0":[]},"AllocResp":""}]})",
                   "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{"
                   "PodUID:(string) ContainerName:(string) ResourceName:(string) "
                   "DeviceIDs:(checkpoint.DevicesPerNUMA)map[0:[] 1:<nil>] AllocResp:([]uint8)[]}] "
                   "RegisteredDevices:(map[string][]string)map[]}"},
        GoRuleCase{"KeysMatchCaseInsensitivelyAndUnknownKeysAreIgnored",
                   R"({"poddeviceentries":[{"poduid":"p","EXTRA":1}],"Other":{}})",
                   "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{"
                   "PodUID:(string)p ContainerName:(string) ResourceName:(string) "
                   "DeviceIDs:(checkpoint.DevicesPerNUMA)<nil> AllocResp:([]uint8)<nil>}] "
                   "RegisteredDevices:(map[string][]string)map[]}"},
        GoRuleCase{"NullInsideAStringListIsAnEmptyString",
                   R"({"RegisteredDevices":{"r":["a",null]}})",
                   "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[] "
                   "RegisteredDevices:(map[string][]string)map[r:[a ]]}"}),
    [](const ::testing::TestParamInfo<GoRuleCase>& param_info) { return param_info.param.name; });

TEST(CheckpointTest, ChecksumMismatchIsDataLossWithBothValues) {
  std::string bytes = kKubeletExample;
  bytes.replace(bytes.find("2549016347"), 10, "2549016348");
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(bytes);
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->ChecksumMatches());
  EXPECT_EQ(parsed->stored_checksum, 2549016348U);
  EXPECT_EQ(parsed->computed_checksum, 2549016347U);
  absl::StatusOr<CheckpointData> decoded = Decode(bytes);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(decoded.status().message().find("stored 2549016348, computed 2549016347"),
            std::string::npos)
      << decoded.status();
}

TEST(CheckpointTest, ChangedDataFailsTheChecksum) {
  std::string bytes = kKubeletExample;
  bytes.replace(bytes.find("dev9"), 4, "dev8");
  EXPECT_EQ(Decode(bytes).status().code(), absl::StatusCode::kDataLoss);
}

struct MalformedCase {
  const char* name;
  std::string bytes;
  const char* says;  // part of the error message
};

class MalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedTest, IsInvalidArgumentSayingWhereAndWhy) {
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(GetParam().bytes);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find(GetParam().says), std::string::npos) << parsed.status();
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, MalformedTest,
    ::testing::Values(
        MalformedCase{"Empty", "", "not valid JSON"},
        MalformedCase{"Truncated", std::string(kKubeletExample).substr(0, 60), "not valid JSON"},
        MalformedCase{"TrailingGarbage", std::string(kKubeletExample) + "x", "not valid JSON"},
        MalformedCase{"TopLevelArray", "[]", "checkpoint: expected an object, got array"},
        MalformedCase{"EntriesAnObject", R"({"Data":{"PodDeviceEntries":{}}})",
                      "Data.PodDeviceEntries: expected an array, got object"},
        MalformedCase{"UidANumber", R"({"Data":{"PodDeviceEntries":[{"PodUID":7}]}})",
                      "Data.PodDeviceEntries[0].PodUID: expected a string, got number"},
        MalformedCase{"NumaKeyNotANumber",
                      R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{"x":[]}}]}})",
                      "NUMA node key \"x\" is not a 64-bit integer"},
        MalformedCase{"NumaKeyOutOfRange",
                      R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{"9223372036854775808":[]}}]}})",
                      "is not a 64-bit integer"},
        MalformedCase{"NumaKeyWithSpace",
                      R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{" 1":[]}}]}})",
                      "is not a 64-bit integer"},
        MalformedCase{"DeviceIdNotAString", R"({"Data":{"RegisteredDevices":{"r":[1]}}})",
                      "Data.RegisteredDevices[\"r\"][0]: expected a string, got number"},
        MalformedCase{"BadBase64", R"({"Data":{"PodDeviceEntries":[{"AllocResp":"abc"}]}})",
                      "AllocResp: not valid padded base64"},
        MalformedCase{"Base64WithSpaces",
                      R"({"Data":{"PodDeviceEntries":[{"AllocResp":"CgYK    AUESATE="}]}})",
                      "AllocResp: not valid padded base64"},
        MalformedCase{"Base64WithSpacesAfterItsPadding",
                      R"({"Data":{"PodDeviceEntries":[{"AllocResp":"QQ==    "}]}})",
                      "AllocResp: not valid padded base64"},
        MalformedCase{"Base64WithATab",
                      "{\"Data\":{\"PodDeviceEntries\":[{\"AllocResp\":\"QQ=\\t\"}]}}",
                      "AllocResp: not valid padded base64"},
        MalformedCase{"Base64PaddedThrice",
                      R"({"Data":{"PodDeviceEntries":[{"AllocResp":"Q==="}]}})",
                      "AllocResp: not valid padded base64"},
        MalformedCase{"NegativeChecksum", R"({"Checksum":-1})", "Checksum: expected an unsigned"},
        MalformedCase{"FractionalChecksum", R"({"Checksum":1.5})",
                      "Checksum: expected an unsigned"},
        MalformedCase{"HugeChecksum", R"({"Checksum":184467440737095516160})",
                      "Checksum: expected an unsigned"},
        MalformedCase{"NumberOverflowingADouble", R"({"Checksum":3e67439661})", "not valid JSON"},
        MalformedCase{"StringChecksum", R"({"Checksum":"1"})", "Checksum: expected an unsigned"},
        MalformedCase{"InvalidUtf8", "{\"Data\":{\"RegisteredDevices\":{\"r\":[\"\xff\"]}}}",
                      "not valid JSON"},
        MalformedCase{"DeepNesting", std::string(100000, '['), "nested deeper than 32"},
        MalformedCase{"DeepNestingInsideData",
                      "{\"Data\":" + std::string(40, '[') + std::string(40, ']') + "}",
                      "nested deeper than 32"}),
    [](const ::testing::TestParamInfo<MalformedCase>& param_info) {
      return param_info.param.name;
    });

TEST(CheckpointTest, HundredMegabytesOfGarbageIsRefusedNotCrashedOn) {
  std::mt19937 rng(7);
  std::string garbage(100U << 20, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  EXPECT_EQ(Parse(garbage).status().code(), absl::StatusCode::kInvalidArgument);
  // A plausible start followed by 8 MB of string content (more than any real checkpoint, and
  // quick enough for the sanitizer build's -O0) is read to its end and refused.
  std::string long_string = R"({"Data":{"RegisteredDevices":{"r":[")" + std::string(8U << 20, 'x');
  EXPECT_EQ(Parse(long_string).status().code(), absl::StatusCode::kInvalidArgument);
}

// A list of more entries than a checkpoint holds (kMaxEntries) is refused before any is decoded,
// with its size; a list of anything but entries fails at its first element. Before, an entry was
// allocated for every element first (about 240 bytes for each 2-byte "0,"), and a corrupt
// 250 MiB checkpoint ended the daemon's start with std::bad_alloc.
TEST(CheckpointTest, AListMadeToTakeTheMemoryIsRefusedBeforeItTakesIt) {
  std::string entries = R"({"Data":{"PodDeviceEntries":[{})";
  for (size_t i = 0; i < (size_t{1} << 20); ++i) entries += ",{}";
  entries += "]}}";
  EXPECT_EQ(Parse(entries).status().message(),
            "Data.PodDeviceEntries: 1048577 entries, more than 1048576");

  // Each element is decoded before the next entry is made.
  std::string zeroes = R"({"Data":{"PodDeviceEntries":[0)";
  for (size_t i = 1; i < (size_t{1} << 20); ++i) zeroes += ",0";
  zeroes += "]}}";
  EXPECT_EQ(Parse(zeroes).status().message(),
            "Data.PodDeviceEntries[0]: expected an object, got number");
}

// Random data with awkward strings and NUMA keys survives Encode -> Decode unchanged, and
// encoding is a fixed point.
TEST(CheckpointTest, RandomizedRoundTrips) {
  const std::vector<std::string> odd = {"",
                                        " ",
                                        "a b",
                                        "[x]",
                                        "{y}",
                                        "map[k:v]",
                                        "<nil>",
                                        "q\"uote",
                                        "back\\",
                                        "<>&",
                                        "\t\n\r",
                                        "caf\xC3\xA9",
                                        "\xE2\x80\xA8",
                                        "0000:03:02.1",
                                        "GPU-7d8429d5-531d-d6a6-6510-3b662081a75a"};
  const std::vector<int64_t> numa_keys = {-1, 0, 1, 2, 10};
  std::mt19937 rng(42);
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  for (int round = 0; round < 50; ++round) {
    CheckpointData data;
    const int entries = static_cast<int>(rng() % 200);
    for (int i = 0; i < entries; ++i) {
      PodDevicesEntry entry;
      entry.pod_uid = pick(odd) + std::to_string(i);
      entry.container_name = pick(odd);
      entry.resource_name = "vendor.com/" + pick(odd);
      const int nodes = static_cast<int>(rng() % 4);
      for (int n = 0; n < nodes; ++n) {
        auto& ids = entry.device_ids[pick(numa_keys)];
        for (int d = static_cast<int>(rng() % 4); d > 0; --d) ids.push_back(pick(odd));
      }
      for (int b = static_cast<int>(rng() % 64); b > 0; --b) {
        entry.alloc_resp.push_back(static_cast<char>(rng()));
      }
      data.pod_device_entries.push_back(std::move(entry));
    }
    for (int r = static_cast<int>(rng() % 10); r > 0; --r) {
      auto& ids = data.registered_devices[pick(odd) + std::to_string(r)];
      for (int d = static_cast<int>(rng() % 5); d > 0; --d) ids.push_back(pick(odd));
    }
    const std::string bytes = Encode(data);
    ASSERT_EQ(EncodeRendered(Rendered(data.pod_device_entries), Rendered(data.registered_devices)),
              bytes)
        << "round " << round;
    absl::StatusOr<CheckpointData> decoded = Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ASSERT_EQ(*decoded, data) << "round " << round;
    ASSERT_EQ(Encode(*decoded), bytes);
  }
}

// Checkpoints from public projects, with the kubelet's verdict for each (in the source tree:
// tests/testdata/checkpoints, whose README says where each comes from).
struct SampleCase {
  const char* file;
  Format format;
  uint64_t stored;
  uint64_t computed;
};

class PublicSamplesTest : public ::testing::TestWithParam<SampleCase> {};

TEST_P(PublicSamplesTest, GetTheKubeletsVerdict) {
  // A missing sample fails here (ReadWholeFile): the samples are part of the repository.
  const std::filesystem::path path =
      std::filesystem::path(DEVMGR_CHECKPOINT_SAMPLES_DIR) / GetParam().file;
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(*bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->format, GetParam().format);
  EXPECT_EQ(parsed->stored_checksum, GetParam().stored);
  EXPECT_EQ(parsed->computed_checksum, GetParam().computed);
}

INSTANTIATE_TEST_SUITE_P(
    Samples, PublicSamplesTest,
    ::testing::Values(SampleCase{"sample-13.json", Format::kCurrent, 2262205670U, 2262205670U},
                      SampleCase{"sample-14.json", Format::kV1, 229855270U, 229855270U},
                      SampleCase{"sample-17.json", Format::kCurrent, 403603645U, 3162097514U},
                      SampleCase{"sample-18.json", Format::kV1, 403603645U, 875086164U},
                      SampleCase{"sample-19.json", Format::kCurrent, 229855270U, 3743704838U}));

}  // namespace
}  // namespace devmgr::checkpoint
