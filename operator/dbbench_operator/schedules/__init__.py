"""BenchmarkSchedules: runs made from a template on a cron schedule (CronJob's
semantics). `ticking` acts (the kopf timer's one call), `planning` decides and
`timing` computes the times; both pure."""
