// RegistryService: the plugin side of the kubelet's plugin-watcher handshake
// (pluginregistration.Registration). A plugin registered this way puts a socket into
// plugins_registry/; the kubelet finds it, calls GetInfo, dials the endpoint it names, and reports
// the outcome through NotifyRegistrationStatus. Used by Plugin; not part of the public surface.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>

#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::deviceplugin {

class RegistryService final : public pluginregistration::Registration::CallbackService {
 public:
  // Called on a gRPC thread for every NotifyRegistrationStatus; must not block. What it returns
  // answers the call (a device plugin's stub answers OK whatever the outcome; a DRA driver's
  // registrar answers a failed registration with an error).
  using StatusCallback = std::function<grpc::Status(bool registered, const std::string& error)>;

  RegistryService(pluginregistration::PluginInfo info, StatusCallback on_status);

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const pluginregistration::InfoRequest* request,
                                    pluginregistration::PluginInfo* response) override;
  grpc::ServerUnaryReactor* NotifyRegistrationStatus(
      grpc::CallbackServerContext* context, const pluginregistration::RegistrationStatus* request,
      pluginregistration::RegistrationStatusResponse* response) override;

 private:
  const pluginregistration::PluginInfo info_;
  const StatusCallback on_status_;
};

}  // namespace devmgr::deviceplugin
