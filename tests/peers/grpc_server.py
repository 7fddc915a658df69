"""An independent gRPC server (grpcio) for Volley's k6/net/grpc tests.

Serves volley.target.Target (Echo, Count, Sum, Chat, Fail; examples/grpc/target.proto) from
a protoset given as argv[1], with grpcio-reflection. Listens on 127.0.0.1 on a free port,
prints the port on stdout, and exits when stdin closes (the test process went away).
"""
import sys
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection

from peer_serve import serve

SERVICE = "volley.target.Target"


def main():
    fds = descriptor_pb2.FileDescriptorSet.FromString(open(sys.argv[1], "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    Message = message_factory.GetMessageClass(pool.FindMessageTypeByName("volley.target.Message"))

    def echo(req, ctx):
        md = [(k, v) for k, v in ctx.invocation_metadata() if k.startswith("x-")]
        ctx.send_initial_metadata(md)
        ctx.set_trailing_metadata((("x-trailer", "done"),))
        return req

    def count(req, ctx):
        for i in range(min(req.count, 100000)):
            yield Message(index=i, text=req.text)

    def total(reqs, ctx):
        n = s = 0
        for r in reqs:
            n += 1
            s += r.number
        return Message(number=s, count=n)

    def chat(reqs, ctx):
        for r in reqs:
            yield r

    def fail(req, ctx):
        code = next((c for c in grpc.StatusCode if c.value[0] == req.code), grpc.StatusCode.UNKNOWN)
        ctx.abort(code, req.text)

    def slow(req, ctx):
        time.sleep(min(req.delay_ms, 60000) / 1000)
        return req

    ser = dict(request_deserializer=Message.FromString, response_serializer=Message.SerializeToString)
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo, **ser),
        "Count": grpc.unary_stream_rpc_method_handler(count, **ser),
        "Sum": grpc.stream_unary_rpc_method_handler(total, **ser),
        "Chat": grpc.stream_stream_rpc_method_handler(chat, **ser),
        "Fail": grpc.unary_unary_rpc_method_handler(fail, **ser),
        "Slow": grpc.unary_unary_rpc_method_handler(slow, **ser),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    reflection.enable_server_reflection((SERVICE, reflection.SERVICE_NAME), server, pool=pool)
    serve(server)


if __name__ == "__main__":
    main()
