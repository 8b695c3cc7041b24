"""`python -m harness.toxiproxy_server`: run the Toxiproxy-compatible server."""

import sys

from harness.toxiproxy_server.main import main

sys.exit(main())
