"""Databases under test: chart values, rendering, and setup through the drivers.

Inputs are this package's own `TopologyRequest` (not the CRD model) so the
operator core maps a BenchmarkRun target onto it in one place.
"""
