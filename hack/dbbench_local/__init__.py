"""Real parts on this machine: control plane, database servers, the local node.

One home for the code that starts real processes, used by the tests' fixtures,
``hack/controlplane.py``, the bench, ``make e2e`` and ``make demo``. Everything
started here is stopped by its PID.
"""
