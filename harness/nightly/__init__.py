"""`highwater nightly`: a suite of plans within a budget, one PySpark summary, trends, JUnit."""
