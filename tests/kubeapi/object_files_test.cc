// Objects read from files and folders (kubeapi/object_files.h).
#include "kubeapi/object_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "tests/testlib/temp_dir.h"

namespace devmgr::kubeapi {
namespace {

using testing::TempDir;

TEST(ObjectFilesTest, AFoldersYamlAndJsonFilesAreReadInNameOrder) {
  TempDir dir;
  std::ofstream(dir.Sub("b.json")) << R"({"kind": "DeviceClass", "metadata": {"name": "b"}})";
  std::ofstream(dir.Sub("a.yaml")) << "kind: DeviceClass\nmetadata: {name: a}\n---\n"
                                      "kind: DeviceClass\nmetadata: {name: a2}\n";
  std::ofstream(dir.Sub("c.txt")) << "kind: DeviceClass\nmetadata: {name: c}\n";
  std::filesystem::create_directory(dir.Sub("d.yaml"));
  absl::StatusOr<std::vector<FileObject>> read = ReadObjectFiles({dir.path().string()});
  ASSERT_TRUE(read.ok()) << read.status();
  std::vector<std::string> names;
  for (const FileObject& object : *read) names.push_back(object.object["metadata"]["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "a2", "b"}));
}

// A symlink that cannot be followed is an error naming it. Before, the folder's reader threw
// out of the process: `devmgr dra allocate` aborted, and the daemon with it at an admission that
// read its --device-classes folder.
TEST(ObjectFilesTest, ASymlinkLoopInAFolderIsAnErrorNotACrash) {
  TempDir dir;
  std::ofstream(dir.Sub("a.yaml")) << "kind: DeviceClass\nmetadata: {name: a}\n";
  std::filesystem::create_symlink(dir.Sub("loop.yaml"), dir.Sub("loop.yaml"));
  absl::StatusOr<std::vector<FileObject>> read = ReadObjectFiles({dir.path().string()});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            dir.Sub("loop.yaml").string() + ": Too many levels of symbolic links");
}

// A pipe is read as a file is: `--slices <(kubectl get resourceslices -o yaml)`.
TEST(ObjectFilesTest, APipeIsRead) {
  TempDir dir;
  const std::filesystem::path pipe = dir.Sub("pipe");
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  std::thread writer(
      [&] { std::ofstream(pipe) << "kind: DeviceClass\nmetadata: {name: piped}\n"; });
  absl::StatusOr<std::vector<FileObject>> read = ReadObjectFiles({pipe.string()});
  if (!read.ok()) {
    // Not opened: the writer waits for a reader.
    std::ifstream drain(pipe);
    std::string rest((std::istreambuf_iterator<char>(drain)), std::istreambuf_iterator<char>());
  }
  writer.join();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].object["metadata"]["name"], "piped");
}

// A path that cannot be read says why, in the system's words. Before: "cannot be read".
TEST(ObjectFilesTest, AMissingFileSaysWhy) {
  TempDir dir;
  absl::StatusOr<std::vector<FileObject>> read = ReadObjectFiles({dir.Sub("none.yaml").string()});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            "cannot open " + dir.Sub("none.yaml").string() + ": No such file or directory");
}

}  // namespace
}  // namespace devmgr::kubeapi
