// A .proto with an unknown type: the run stops in init with the proto's file:line:column
// (exit code 107, a script error, as k6).
import grpc from "k6/net/grpc";

const client = new grpc.Client();
client.load(["data"], "bad.proto");

export default function () {}
