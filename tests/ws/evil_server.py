"""A WebSocket server that misbehaves on purpose, one way per path (raw sockets, no library),
for tests/k6/parity_ws_errors.js (crates/cli/tests/k6_parity_protocols.rs).

/status/N     answers the upgrade with HTTP status N and a short body
/partial      completes the handshake, sends half of a text frame, closes the TCP connection
/badutf8      completes the handshake, sends a text frame that is not UTF-8, waits
/big/N        completes the handshake, sends one text message of N bytes, waits
/eof          completes the handshake and closes the TCP connection without a close frame
/badaccept    answers 101 with a wrong Sec-WebSocket-Accept
Prints its port; exits when stdin closes.
"""
import base64, hashlib, socket, sys, threading

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(op, payload):
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | op, n])
    elif n < 65536:
        head = bytes([0x80 | op, 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | op, 127]) + n.to_bytes(8, "big")
    return head + payload


def serve(c):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                return
            data += chunk
        head = data.split(b"\r\n\r\n")[0].decode("latin1").split("\r\n")
        path = head[0].split(" ")[1]
        hdrs = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in head[1:] if ":" in l}
        if path.startswith("/status/"):
            code = int(path.split("/")[2])
            body = b"no websocket here"
            c.sendall(b"HTTP/1.1 %d Nope\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (code, len(body), body))
            return
        key = hdrs.get("sec-websocket-key", "")
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if path == "/badaccept":
            accept = "AAAAAAAAAAAAAAAAAAAAAAAAAAA="
        c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
        if path == "/partial":
            f = frame(1, b"x" * 100)
            c.sendall(f[:20])
        elif path == "/badutf8":
            c.sendall(frame(1, b"ok \xff\xfe bad"))
            c.recv(65536)
        elif path.startswith("/big/"):
            c.sendall(frame(1, b"y" * int(path.split("/")[2])))
            c.recv(65536)
        elif path == "/eof":
            pass
        else:
            c.recv(65536)
    except OSError:
        pass
    finally:
        c.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    print(s.getsockname()[1], flush=True)

    def accept():
        while True:
            c, _ = s.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
