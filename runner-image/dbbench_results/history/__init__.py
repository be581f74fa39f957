"""A series' history: the index of finished runs' figures by series, kept by the
results service as run summaries are stored, and the change points found in it
(dbbench_contract.history is the format; docs/results.md the endpoint)."""
