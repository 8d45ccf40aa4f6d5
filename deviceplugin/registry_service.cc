#include "deviceplugin/registry_service.h"

#include <utility>

namespace devmgr::deviceplugin {

RegistryService::RegistryService(pluginregistration::PluginInfo info, StatusCallback on_status)
    : info_(std::move(info)), on_status_(std::move(on_status)) {}

grpc::ServerUnaryReactor* RegistryService::GetInfo(
    grpc::CallbackServerContext* context, const pluginregistration::InfoRequest* /*request*/,
    pluginregistration::PluginInfo* response) {
  *response = info_;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RegistryService::NotifyRegistrationStatus(
    grpc::CallbackServerContext* context, const pluginregistration::RegistrationStatus* request,
    pluginregistration::RegistrationStatusResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(on_status_(request->plugin_registered(), request->error()));
  return reactor;
}

}  // namespace devmgr::deviceplugin
