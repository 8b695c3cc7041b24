"""`highwater bench <target>`: benchmarks. Each target is a module harness.bench.<target>
exposing add_arguments(parser) and run(args) -> int; add one row to TARGETS to add one.
Benchmarks print figures and write them as JSON under store/bench/; they never assert durations."""
