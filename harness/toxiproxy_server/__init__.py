"""A Toxiproxy-2.x-compatible proxy server (HTTP API on :8474), so the official image is a swap.

Run it as `python -m harness.toxiproxy_server --host 0.0.0.0 --port 8474` or `highwater
toxiproxy-server`. Layout: toxics.py (sans-I/O toxic stages), link.py (live-editable chains),
model.py (API objects and validation), proxy.py (sockets and pumps), api.py (routes), http.py
(HTTP/1.1 on asyncio streams), main.py (command line).
"""

# The Toxiproxy release whose API this server follows; "+highwater" marks the implementation.
VERSION = "2.12.0+highwater"
