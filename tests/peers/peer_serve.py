"""Shared by the grpcio test servers here: listen on a free loopback port, print it, and serve
until stdin closes (the test process went away)."""
import sys
import threading


def serve(server):
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)

    def watch_stdin():
        sys.stdin.read()
        server.stop(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.wait_for_termination()
