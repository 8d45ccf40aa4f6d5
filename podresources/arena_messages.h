// ArenaMessages: a gRPC callback-API message allocator that builds each call's request and
// response on one protobuf Arena. A List or GetAllocatableResources answer is tens of
// thousands of small messages and strings; on an arena they cost a pointer bump each to create
// and nothing each to destroy, since the whole arena is dropped in one go when gRPC releases
// the call's messages.
#pragma once

#include <google/protobuf/arena.h>
#include <grpcpp/support/message_allocator.h>

#include <cstddef>

namespace devmgr::podresources {

// AnswerArenaOptions: blocks grow from 4 KiB up to 1 MiB, so that a 10 MB answer takes tens of
// blocks rather than the thousands the default 8 KiB ceiling would give.
inline google::protobuf::ArenaOptions AnswerArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = std::size_t{4} << 10;
  options.max_block_size = std::size_t{1} << 20;
  return options;
}

template <typename Request, typename Response>
class ArenaMessages final : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override { return new Holder(); }

 private:
  class Holder final : public grpc::MessageHolder<Request, Response> {
   public:
    Holder() : arena_(AnswerArenaOptions()) {
      this->set_request(google::protobuf::Arena::CreateMessage<Request>(&arena_));
      this->set_response(google::protobuf::Arena::CreateMessage<Response>(&arena_));
    }
    void Release() override { delete this; }

   private:
    google::protobuf::Arena arena_;
  };
};

}  // namespace devmgr::podresources
