"""An independent route-guide gRPC server (grpcio) for running k6's own gRPC examples.

Serves main.FeatureExplorer (GetFeature, ListFeatures) and main.RouteGuide (RecordRoute,
RouteChat) of tests/peers/route_guide.proto from a protoset given as argv[1], with
grpcio-reflection unless argv[2] is "noreflect". Deterministic: a fixed table of features
and no random delays, so the tests can count messages. Listens on 127.0.0.1 on a free
port, prints the port on stdout, and exits when stdin closes.
"""
import sys
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection

from peer_serve import serve

# (latitude, longitude, name): inside the rectangle k6's server-streaming example asks for.
FEATURES = [
    (407838351, -746143763, "Patriots Path, Mendham, NJ 07945, USA"),
    (408122808, -743999179, "101 New Jersey 10, Whippany, NJ 07981, USA"),
    (410248224, -747127767, "Berkshire Valley Management Area Trail, Jefferson, NJ, USA"),
]


def main():
    fds = descriptor_pb2.FileDescriptorSet.FromString(open(sys.argv[1], "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)

    def cls(name):
        return message_factory.GetMessageClass(pool.FindMessageTypeByName("main." + name))

    Point, Rectangle, Feature = cls("Point"), cls("Rectangle"), cls("Feature")
    RouteNote, RouteSummary = cls("RouteNote"), cls("RouteSummary")
    features = [Feature(name=n, location=Point(latitude=la, longitude=lo)) for la, lo, n in FEATURES]

    def get_feature(point, ctx):
        for f in features:
            if f.location == point:
                return f
        return Feature(location=point)

    def list_features(rect, ctx):
        lo_la, hi_la = sorted((rect.lo.latitude, rect.hi.latitude))
        lo_lo, hi_lo = sorted((rect.lo.longitude, rect.hi.longitude))
        for f in features:
            if lo_la <= f.location.latitude <= hi_la and lo_lo <= f.location.longitude <= hi_lo:
                yield f

    def record_route(points, ctx):
        n = found = 0
        for p in points:
            n += 1
            found += sum(1 for f in features if f.location == p)
        return RouteSummary(point_count=n, feature_count=found, distance=0, elapsed_time=0)

    def route_chat(notes, ctx):
        for note in notes:
            yield note

    def handlers(service, table):
        return grpc.method_handlers_generic_handler(service, table)

    def ser(req, resp):
        return dict(request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((
        handlers("main.FeatureExplorer", {
            "GetFeature": grpc.unary_unary_rpc_method_handler(get_feature, **ser(Point, Feature)),
            "ListFeatures": grpc.unary_stream_rpc_method_handler(list_features, **ser(Rectangle, Feature)),
        }),
        handlers("main.RouteGuide", {
            "RecordRoute": grpc.stream_unary_rpc_method_handler(record_route, **ser(Point, RouteSummary)),
            "RouteChat": grpc.stream_stream_rpc_method_handler(route_chat, **ser(RouteNote, RouteNote)),
        }),
    ))
    if sys.argv[2:3] != ["noreflect"]:
        names = ("main.FeatureExplorer", "main.RouteGuide", reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, server, pool=pool)
    serve(server)


if __name__ == "__main__":
    main()
