"""A device plugin written with Python's grpcio, for the endpoint's interop test.

Serves v1beta1.DevicePlugin on SOCKET: GetDevicePluginOptions says PreStartContainer is
required; ListAndWatch, served as bytes through a generic handler, sends two snapshots, then
(with the argument "malformed") a message that does not parse, and then waits until the client
cancels. The snapshots: d0 healthy on NUMA node 0, d1 unhealthy, "dé" healthy on nodes 1 and 0;
then d0 unhealthy alone. Prints "serving" once it listens, and serves until it is killed.

Usage: python_plugin.py STUBS_DIR SOCKET [malformed]
"""
import sys
import threading
from concurrent import futures

sys.path.insert(0, sys.argv[1])
SOCKET = sys.argv[2]
MALFORMED = len(sys.argv) > 3 and sys.argv[3] == "malformed"

import grpc  # noqa: E402
from deviceplugin.v1beta1 import api_pb2  # noqa: E402


def device(device_id, health, nodes=()):
    message = api_pb2.Device(ID=device_id, health=health)
    for node in nodes:
        message.topology.nodes.add(ID=node)
    return message


def get_options(request, context):
    return api_pb2.DevicePluginOptions(pre_start_required=True).SerializeToString()


def list_and_watch(request, context):
    first = api_pb2.ListAndWatchResponse(devices=[
        device("d0", "Healthy", [0]), device("d1", "Unhealthy"), device("dé", "Healthy", [1, 0])])
    yield first.SerializeToString()
    yield api_pb2.ListAndWatchResponse(devices=[device("d0", "Unhealthy")]).SerializeToString()
    if MALFORMED:
        # Field 1 (a Device) whose ID is not UTF-8: protobuf's parse refuses it.
        yield b"\x0a\x03\x0a\x01\xff"
    ended = threading.Event()
    context.add_callback(ended.set)
    ended.wait()


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handlers = {
        "GetDevicePluginOptions": grpc.unary_unary_rpc_method_handler(get_options),
        "ListAndWatch": grpc.unary_stream_rpc_method_handler(list_and_watch),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("v1beta1.DevicePlugin", handlers),))
    server.add_insecure_port("unix://" + SOCKET)
    server.start()
    print("serving", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
