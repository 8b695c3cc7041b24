"""Documented loss scenarios (SCENARIOS.md): plans in chaos_plans/scenarios/, run per mode.

`highwater scenario list | run ID --mode M [--repeat N] | min-isr`; see cli.py.
"""
