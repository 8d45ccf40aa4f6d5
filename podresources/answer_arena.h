// AnswerArenaOptions: the protobuf Arena that a PodResources answer is built on. A List or
// GetAllocatableResources answer is tens of thousands of small messages and strings; on an
// arena they cost a pointer bump each to create and nothing each to destroy. Blocks grow from
// 4 KiB up to 1 MiB, so that a 10 MB answer takes tens of blocks rather than the thousands the
// default 8 KiB ceiling would give.
#pragma once

#include <google/protobuf/arena.h>

#include <cstddef>

namespace devmgr::podresources {

inline google::protobuf::ArenaOptions AnswerArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = std::size_t{4} << 10;
  options.max_block_size = std::size_t{1} << 20;
  return options;
}

}  // namespace devmgr::podresources
