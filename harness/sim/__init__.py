"""Plans on the simulator: workload, faults, history and check (`highwater sim`), and the search
for failing schedules (`highwater sim explore`). Entry point: run.simulate."""
