"""The checker: everything that judges a run, in both runtimes.

- The history (HISTORY.md): check.py (the PySpark pipeline: anomalies.py, history.py,
  sidecar.py), and reference.py, the plain-Python reference checker the simulator uses,
  differential-tested against it (tests/unit/checker/test_differential.py).
- The run checks beside the history: convergence.py (`unconverged-replicas`), exits.py
  (`unexpected-exits`), metadata_check.py and metadata_log_check.py (`metadata-divergence`),
  quorum_check.py (`controller-commit-while-cut`), replica_logs.py (`diverged-offsets`, the
  segment files of a run's replicas).
- expectations.py: a plan's `expected` against all of them, the run's verdict.
"""
