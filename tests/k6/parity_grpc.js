// k6's own gRPC example flows (examples/grpc_invoke.js, grpc_server_streaming.js,
// grpc_client_streaming.js in k6's repository) against an independent route-guide server
// (tests/peers/route_guide_server.py, grpcio; ADDR), plus the hostile cases where Volley
// differed from k6 v1.8.1: a .proto outside the import paths as k6's examples load it
// (`client.load([], "../x.proto")`), an invalid metadata key (status 13 with grpc-go's words),
// reflection on a server without it (NOREFLECT: the same server with reflection off),
// and a stream message that does not fit its type (the stream's "error", then "end"; no
// exception). Run by crates/cli/tests/k6_parity_protocols.rs under Volley and, when
// installed, k6: the same checks pass and the message counts agree.
import { Client, Stream, StatusOK, StatusInternal, StatusUnknown } from "k6/net/grpc";
import { check } from "k6";

const client = new Client();
// No import paths: k6 joins the name to the script's directory.
client.load([], "../peers/route_guide.proto");

export const options = { vus: 1, iterations: 2 };

const KNOWN = { latitude: 410248224, longitude: -747127767 };

export default function () {
  client.connect(__ENV.ADDR, { plaintext: true });

  const r = client.invoke("main.FeatureExplorer/GetFeature", KNOWN);
  check(r, {
    "GetFeature: OK": (x) => x.status === StatusOK,
    "GetFeature: the named feature": (x) => x.message.name.startsWith("Berkshire Valley"),
  });

  // grpc-go checks metadata keys before sending: INTERNAL with its words, no exception.
  const bad = client.invoke("main.FeatureExplorer/GetFeature", KNOWN, { metadata: { "Bad Key": "v" } });
  check(bad, {
    "bad metadata key: INTERNAL": (x) => x.status === StatusInternal,
    "bad metadata key: grpc-go's words": (x) =>
      x.error.message === 'header key "bad key" contains illegal characters not in [0-9a-z-_.]',
  });

  // Reflection on a server without it: k6's words around the server's own answer.
  let refused = "";
  try {
    new Client().connect(__ENV.NOREFLECT, { plaintext: true, reflect: true });
  } catch (e) {
    refused = String(e.message || e);
  }
  check(refused, {
    "reflect without reflection: k6's error": (m) =>
      m.replace(/^GoError: /, "") === "can't list services: rpc error: code = Unimplemented desc = Method not found!",
  });

  // Server stream: three features in k6's example rectangle.
  const names = [];
  const list = new Stream(client, "main.FeatureExplorer/ListFeatures", null);
  list.on("data", (f) => names.push(f.name));
  list.on("end", () => check(names, { "ListFeatures: 3 features": (n) => n.length === 3 }));
  list.write({ lo: { latitude: 400000000, longitude: -750000000 }, hi: { latitude: 420000000, longitude: -730000000 } });
  list.end();

  // Client stream: five points, one summary.
  const summaries = [];
  const route = new Stream(client, "main.RouteGuide/RecordRoute");
  route.on("data", (s) => summaries.push(s));
  route.on("end", () =>
    check(summaries, {
      "RecordRoute: one summary of 5 points, 1 feature": (s) =>
        s.length === 1 && s[0].pointCount === 5 && s[0].featureCount === 1,
    }),
  );
  for (let i = 0; i < 5; i++) route.write(i === 2 ? KNOWN : { latitude: i, longitude: i });
  route.end();

  // A message that does not fit (written once the first note is back): the stream fails
  // (error, then end), the script goes on.
  const events = [];
  let threw = false;
  const chat = new Stream(client, "main.RouteGuide/RouteChat", { timeout: "10s" });
  chat.on("data", (n) => {
    events.push("data " + n.message);
    try {
      chat.write({ location: KNOWN, nope: 1 });
    } catch (e) {
      threw = true;
    }
  });
  chat.on("error", (e) => events.push(`error ${e.code} ${e.message.split(":")[0]}`));
  chat.on("end", () =>
    check(events, {
      "RouteChat bad message: error then end": (e) =>
        e.join("|") === `data hi|error ${StatusUnknown} can't serialise request object to protocol buffer`,
      "RouteChat bad message: no exception": () => threw === false,
    }),
  );
  chat.write({ location: KNOWN, message: "hi" });
}
