"""`highwater run`: the main job (main.py), its cluster with admin endpoints (observed.py) and
its live progress line (progress.py)."""
