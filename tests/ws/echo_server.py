#!/usr/bin/env python3
"""An independent WebSocket echo server (the `websockets` PyPI package) for Volley's tests.

It speaks the same small command protocol as `volley target`'s /ws/echo (see
crates/testserver/src/ws.rs), so the conformance scripts in tests/k6/ give the same counts
against either server; the WebSocket framing, handshake, ping/pong and close handling are the
`websockets` library's own, not Volley's.

    python3 tests/ws/echo_server.py [PORT] [--deflate]   # prints "listening PORT" once ready

With --deflate the server accepts permessage-deflate (the library's defaults) when offered.

Any path echoes. Commands (text messages): `!close CODE [REASON]`, `!ping` (payload "srv"),
`!burst N`, `!binary N`, `!headers` (the upgrade request's headers as JSON, names lower-case),
`!drop` (closes the TCP connection without a close frame), `!frag N` (N bytes as
above, binary, sent in 4 fragments). The first subprotocol offered is
accepted. The server exits when stdin closes, so a test that dies never leaves it behind.
"""

import asyncio
import json
import sys

import websockets
from websockets.asyncio.server import serve
from websockets.frames import Close

MAX_BURST = 10_000
MAX_BINARY = 1 << 20


def first_offered(connection, offered):
    return offered[0] if offered else None


async def handler(ws):
    headers = {k.lower(): v for k, v in ws.request.headers.raw_items()}
    try:
        async for msg in ws:
            if isinstance(msg, str) and msg.startswith("!"):
                cmd, _, arg = msg[1:].partition(" ")
                if cmd == "close":
                    code, _, reason = arg.partition(" ")
                    await ws.close(int(code or 1000), reason)
                    return
                if cmd == "ping":
                    await ws.ping(b"srv")
                    continue
                if cmd == "burst":
                    for i in range(min(int(arg), MAX_BURST)):
                        await ws.send(f"burst {i}")
                    continue
                if cmd == "binary":
                    await ws.send(bytes(i % 256 for i in range(min(int(arg), MAX_BINARY))))
                    continue
                if cmd == "headers":
                    await ws.send(json.dumps(headers))
                    continue
                if cmd == "frag":
                    data = bytes(i % 256 for i in range(min(int(arg), MAX_BINARY)))
                    q = max(1, len(data) // 4)
                    await ws.send([data[i : i + q] for i in range(0, len(data), q)])
                    continue
                if cmd == "drop":
                    ws.transport.abort()
                    return
            await ws.send(msg)
    except websockets.ConnectionClosed:
        pass


async def main():
    args = [a for a in sys.argv[1:] if a != "--deflate"]
    port = int(args[0]) if args else 0
    async with serve(
        handler,
        "127.0.0.1",
        port,
        select_subprotocol=first_offered,
        max_size=64 << 20,
        # No compression unless asked: frames on the wire are what the client sent.
        compression="deflate" if "--deflate" in sys.argv else None,
        ping_interval=None,
    ) as server:
        bound = server.sockets[0].getsockname()[1]
        print(f"listening {bound}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main())
