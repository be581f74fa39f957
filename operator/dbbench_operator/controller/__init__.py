"""The run's loop and its passes: what kopf calls, admission, pacing, the reconcile pass."""
