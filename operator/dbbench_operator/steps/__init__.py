"""A run's steps on the cluster: advancing, runner Jobs, cold cache, collecting results."""
