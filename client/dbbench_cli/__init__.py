"""`dbbench` (also `kubectl dbbench`): list, inspect, fetch, report and compare runs."""
