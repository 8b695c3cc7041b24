"""A run of a plan: its phases, once for both runtimes (pipeline.py), on containers
(containers.py, with the cluster's admin endpoints: observed.py) or on the simulator
(simulated.py); `highwater run` (main.py) with its live progress line (progress.py)."""
