#include "resourceslice/store_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/channel_reconnect.h"
#include "common/json_depth.h"
#include "common/plugin_channel.h"
#include "common/status.h"
#include "kubeapi/json_text.h"
#include "kubeapi/resource_validation.h"

namespace devmgr::resourceslice {
namespace {

namespace api = ::devmgr::resourceslices::v1;

SliceFilter FromProto(const api::Filter& filter) {
  return SliceFilter{filter.driver(), filter.node_name(), filter.pool_name(),
                     filter.without_node_name()};
}

api::Filter ToProto(const SliceFilter& filter) {
  api::Filter out;
  out.set_driver(filter.driver);
  out.set_node_name(filter.node_name);
  out.set_pool_name(filter.pool_name);
  out.set_without_node_name(filter.without_node_name);
  return out;
}

absl::StatusOr<kubeapi::ResourceSlice> FromText(const std::string& text) {
  // Deeper JSON is refused before it is parsed: reading it into a slice would recurse once per
  // level (CheckJsonDepth says why).
  if (absl::Status depth = CheckJsonDepth(text, kMaxApiObjectJsonDepth); !depth.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the slice: ", depth.message()));
  }
  kubeapi::Json json = kubeapi::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError("the slice is not JSON");
  return kubeapi::DecodeResourceSlice(json);
}

// A slice a writer sends: what the API server would refuse, the store refuses too, with its
// texts (drivers publish through this service).
absl::StatusOr<kubeapi::ResourceSlice> ValidFromText(const std::string& text) {
  absl::StatusOr<kubeapi::ResourceSlice> slice = FromText(text);
  if (!slice.ok()) return slice;
  if (absl::Status valid = kubeapi::ValidateResourceSlice(*slice); !valid.ok()) return valid;
  return slice;
}

// Answer: the slice as JSON in `out`, or the store's error.
grpc::Status Answer(const absl::StatusOr<kubeapi::ResourceSlice>& slice, std::string* out) {
  if (!slice.ok()) return ToGrpcStatus(slice.status());
  *out = SliceText(*slice);
  return grpc::Status::OK;
}

}  // namespace

std::string SliceText(const kubeapi::ResourceSlice& slice) {
  return kubeapi::JsonText(kubeapi::EncodeResourceSlice(slice));
}

grpc::Status StoreService::List(grpc::ServerContext*, const api::ListRequest* request,
                                api::ListResponse* response) {
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> slices =
      store_.List(FromProto(request->filter()));
  if (!slices.ok()) return ToGrpcStatus(slices.status());
  for (const kubeapi::ResourceSlice& slice : *slices) response->add_slices(SliceText(slice));
  return grpc::Status::OK;
}

grpc::Status StoreService::Create(grpc::ServerContext*, const api::SliceRequest* request,
                                  api::SliceResponse* response) {
  absl::StatusOr<kubeapi::ResourceSlice> slice = ValidFromText(request->slice());
  if (!slice.ok()) return ToGrpcStatus(slice.status());
  return Answer(store_.Create(*slice), response->mutable_slice());
}

grpc::Status StoreService::Update(grpc::ServerContext*, const api::SliceRequest* request,
                                  api::SliceResponse* response) {
  absl::StatusOr<kubeapi::ResourceSlice> slice = ValidFromText(request->slice());
  if (!slice.ok()) return ToGrpcStatus(slice.status());
  return Answer(store_.Update(*slice), response->mutable_slice());
}

grpc::Status StoreService::Delete(grpc::ServerContext*, const api::DeleteRequest* request,
                                  api::DeleteResponse*) {
  return ToGrpcStatus(store_.Delete(request->name(), request->uid(), request->resource_version()));
}

grpc::Status StoreService::DeleteCollection(grpc::ServerContext*, const api::Filter* request,
                                            api::DeleteResponse*) {
  return ToGrpcStatus(store_.DeleteCollection(FromProto(*request)));
}

grpc::Status StoreService::GetNodeUid(grpc::ServerContext*, const api::GetNodeUidRequest* request,
                                      api::GetNodeUidResponse* response) {
  absl::StatusOr<std::string> uid = store_.NodeUid(request->name());
  if (!uid.ok()) return ToGrpcStatus(uid.status());
  response->set_uid(*std::move(uid));
  return grpc::Status::OK;
}

GrpcSliceStore::GrpcSliceStore(const std::filesystem::path& socket, absl::Duration timeout)
    : channel_(PluginChannel(socket)),
      socket_(socket),
      stub_(api::ResourceSlices::NewStub(channel_)),
      timeout_(timeout) {}

std::unique_ptr<grpc::ClientContext> GrpcSliceStore::Context() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  if (!socket_.empty()) ReconnectIfServed(*channel_, socket_, *context);
  return context;
}

absl::StatusOr<std::vector<kubeapi::ResourceSlice>> GrpcSliceStore::List(
    const SliceFilter& filter) {
  api::ListRequest request;
  *request.mutable_filter() = ToProto(filter);
  api::ListResponse response;
  if (grpc::Status status = stub_->List(Context().get(), request, &response); !status.ok()) {
    return FromGrpcStatus(status);
  }
  std::vector<kubeapi::ResourceSlice> slices;
  for (const std::string& text : response.slices()) {
    absl::StatusOr<kubeapi::ResourceSlice> slice = FromText(text);
    if (!slice.ok()) return slice.status();
    slices.push_back(*std::move(slice));
  }
  return slices;
}

absl::StatusOr<kubeapi::ResourceSlice> GrpcSliceStore::Create(const kubeapi::ResourceSlice& slice) {
  api::SliceRequest request;
  request.set_slice(SliceText(slice));
  api::SliceResponse response;
  if (grpc::Status status = stub_->Create(Context().get(), request, &response); !status.ok()) {
    return FromGrpcStatus(status);
  }
  return FromText(response.slice());
}

absl::StatusOr<kubeapi::ResourceSlice> GrpcSliceStore::Update(const kubeapi::ResourceSlice& slice) {
  api::SliceRequest request;
  request.set_slice(SliceText(slice));
  api::SliceResponse response;
  if (grpc::Status status = stub_->Update(Context().get(), request, &response); !status.ok()) {
    return FromGrpcStatus(status);
  }
  return FromText(response.slice());
}

absl::Status GrpcSliceStore::Delete(const std::string& name, const std::string& uid,
                                    const std::string& resource_version) {
  api::DeleteRequest request;
  request.set_name(name);
  request.set_uid(uid);
  request.set_resource_version(resource_version);
  api::DeleteResponse response;
  return FromGrpcStatus(stub_->Delete(Context().get(), request, &response));
}

absl::Status GrpcSliceStore::DeleteCollection(const SliceFilter& filter) {
  api::DeleteResponse response;
  return FromGrpcStatus(stub_->DeleteCollection(Context().get(), ToProto(filter), &response));
}

absl::StatusOr<std::string> GrpcSliceStore::NodeUid(const std::string& name) {
  api::GetNodeUidRequest request;
  request.set_name(name);
  api::GetNodeUidResponse response;
  if (grpc::Status status = stub_->GetNodeUid(Context().get(), request, &response); !status.ok()) {
    return FromGrpcStatus(status);
  }
  return response.uid();
}

std::unique_ptr<SliceWatch> GrpcSliceStore::Watch(const SliceFilter& /*filter*/,
                                                  SliceChangeHandler /*on_change*/) {
  return nullptr;
}

}  // namespace devmgr::resourceslice
