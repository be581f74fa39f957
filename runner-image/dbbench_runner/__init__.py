"""dbbench's load generator: workloads, drivers, measurement and results."""

__version__ = "0.1.0"
