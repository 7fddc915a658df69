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
    req = urllib.request.Request(
        f"http://{addr}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def agent(i, path):
    a = post("/v1/register", {"name": f"fake{i}", "version": os.environ.get("VOLLEY_VERSION", "0.1.0")})
    while not post("/v1/ready", {"agent": a["agent"], "setup_data": None})["go"]:
        pass
    result = json.load(open(path))
    post("/v1/final", {"agent": a["agent"], "result": result, "teardown_error": None, "aborted": None})


threads = [threading.Thread(target=agent, args=(i, f)) for i, f in enumerate(files)]
for t in threads:
    t.start()
for t in threads:
    t.join()
