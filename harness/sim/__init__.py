"""The simulator's command (`highwater sim`), the search for failing schedules (`highwater sim
explore`), the simulated brokers' settings (config.py) and clients (workload.py). A schedule
runs through the one run pipeline: harness/run/simulated.simulate."""
