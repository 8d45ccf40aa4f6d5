"""A kubelet's device-plugin side written with Python's grpcio, for the interop test.

Serves v1beta1.Registration on <plugin_dir>/kubelet.sock. On the first Register it does what
the kubelet does (dial the plugin's socket, GetDevicePluginOptions, open ListAndWatch), then
calls Allocate and GetPreferredAllocation, answers Register, prints everything it saw as one
JSON object on stdout and exits 0 (3 when no plugin registered in time).

Usage: python_kubelet.py STUBS_DIR PLUGIN_DIR
"""
import json
import os
import sys
import threading
from concurrent import futures

sys.path.insert(0, sys.argv[1])
PLUGIN_DIR = sys.argv[2]

import grpc  # noqa: E402
from deviceplugin.v1beta1 import api_pb2, api_pb2_grpc  # noqa: E402

result = {}
done = threading.Event()


def talk_to_plugin(request):
    result["register"] = {
        "version": request.version,
        "endpoint": request.endpoint,
        "resourceName": request.resource_name,
        "preStartRequired": request.options.pre_start_required,
        "preferredAvailable": request.options.get_preferred_allocation_available,
    }
    channel = grpc.insecure_channel(
        "unix://" + os.path.join(PLUGIN_DIR, request.endpoint),
        options=[("grpc.max_receive_message_length", -1)])
    grpc.channel_ready_future(channel).result(timeout=10)
    stub = api_pb2_grpc.DevicePluginStub(channel)
    options = stub.GetDevicePluginOptions(api_pb2.Empty(), timeout=10)
    result["options"] = {
        "preStartRequired": options.pre_start_required,
        "preferredAvailable": options.get_preferred_allocation_available,
    }
    stream = stub.ListAndWatch(api_pb2.Empty())
    first = next(stream)
    result["devices"] = {
        d.ID: {"health": d.health, "numa": [n.ID for n in d.topology.nodes]}
        for d in first.devices
    }
    allocate = stub.Allocate(api_pb2.AllocateRequest(container_requests=[
        api_pb2.ContainerAllocateRequest(devices_ids=["d1"])]), timeout=10)
    container = allocate.container_responses[0]
    result["allocate"] = {
        "envs": dict(container.envs),
        "annotations": dict(container.annotations),
        "devices": [{"hostPath": d.host_path, "containerPath": d.container_path,
                     "permissions": d.permissions} for d in container.devices],
        "mounts": [{"hostPath": m.host_path, "containerPath": m.container_path,
                    "readOnly": m.read_only} for m in container.mounts],
        "cdiDevices": [c.name for c in container.cdi_devices],
    }
    try:
        stub.Allocate(api_pb2.AllocateRequest(container_requests=[
            api_pb2.ContainerAllocateRequest(devices_ids=["missing"])]), timeout=10)
        result["unknownDevice"] = "OK"
    except grpc.RpcError as error:
        result["unknownDevice"] = error.code().name
    preferred = stub.GetPreferredAllocation(api_pb2.PreferredAllocationRequest(
        container_requests=[api_pb2.ContainerPreferredAllocationRequest(
            available_deviceIDs=["d0", "d1", "d2", "d3"],
            must_include_deviceIDs=["d1"], allocation_size=2)]), timeout=10)
    result["preferred"] = list(preferred.container_responses[0].deviceIDs)
    stream.cancel()
    channel.close()


class Registration(api_pb2_grpc.RegistrationServicer):
    def Register(self, request, context):
        if not done.is_set():
            try:
                talk_to_plugin(request)
            except Exception as error:  # reported to the test, which fails on it
                result["error"] = repr(error)
            done.set()
        return api_pb2.Empty()


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    api_pb2_grpc.add_RegistrationServicer_to_server(Registration(), server)
    server.add_insecure_port("unix://" + os.path.join(PLUGIN_DIR, "kubelet.sock"))
    server.start()
    registered = done.wait(timeout=60)
    server.stop(grace=1).wait()
    print(json.dumps(result, sort_keys=True))
    sys.exit(0 if registered else 3)


if __name__ == "__main__":
    main()
