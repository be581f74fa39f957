"""What crosses a process boundary, typed once (pure: pydantic models, no I/O).

dbbench is four programs that hand each other files and JSON: the operator
writes a step file, runner pods read it and write summaries, progress and
environment files, the results service merges them and adds progress up, the
operator reads merged summaries and writes the run's summary, and the report
and the CLI read all of it back. Each of those formats has its one model
here, with its defaults, so that no program re-parses another's output by
hand. This package imports nothing of dbbench's (an import contract says so)
and does no I/O: callers read and write the bytes.

Modules:
    api          the BenchmarkRun API: spec and status models (the CRD is generated
                 from them), units, semantic checks; api.admission (with its CEL
                 evaluator, cel-python) is imported on its own, by `dbbench check`
    wire         the base models (camelCase on the wire, frozen)
    durations    the one duration syntax (CRD pattern and parser)
    defaults     defaults that more than one program applies
    step         the step file (operator -> runner)
    summary      per-pod and merged step summaries (runner -> service -> operator, report)
    progress     per-pod and per-step progress (runner -> service -> operator)
    environment  environment.json (runner -> report)
    step_nodes   a step's nodes.json: the nodes its pods ran on (operator -> report)
    run_summary  the run's summary.json (operator -> report, CLI, browser)
    layout       where each file lives under a run's results directory
    tokens       the per-run results token (operator, results service)
"""
