#!/usr/bin/env python3
"""Feeds a coordinator N finished results as if N agents had run them (the coordinator's own
merge, timed by its "merged N agents' results in" line): register, pass the start barrier,
post each file as the agent's final result.

  VOLLEY_TOKEN=T bench/fake_agents.py HOST:PORT FILE...
"""
import json
import os
import sys
import threading
import urllib.request

addr, files = sys.argv[1], sys.argv[2:]
token = os.environ["VOLLEY_TOKEN"]


def post(path, body):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://{addr}{path}",
        data=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def agent(i, body):
    a = post("/v1/register", {"name": f"fake{i}", "version": os.environ.get("VOLLEY_VERSION", "0.1.0")})
    while not post("/v1/ready", {"agent": a["agent"], "setup_data": None})["go"]:
        pass
    final = b'{"agent": %d, "teardown_error": null, "aborted": null, "result": ' % a["agent"]
    post("/v1/final", final + body + b"}")


# Read before registering: Python is slow with 50 MB files, and the coordinator would take a
# silent agent for a lost one (run it with a long --agent-timeout anyway).
bodies = [open(f, "rb").read() for f in files]
threads = [threading.Thread(target=agent, args=(i, b)) for i, b in enumerate(bodies)]
for t in threads:
    t.start()
for t in threads:
    t.join()
