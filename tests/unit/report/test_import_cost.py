"""What the CLI and the results service import when they start.

matplotlib (~0.4 s of CPU) and Otava's scipy (~0.45 s) are loaded where a
chart is drawn and where a series is judged (dbbench_report/canvas.py,
dbbench_results/history/changes.py), not when `dbbench get` or the service
starts: every CLI call and every service start paid both before. The
`kubernetes` client (~0.18 s) is loaded where the CLI talks to the API server
(dbbench_cli/kube.py's `connect` and `api_error`), not for `dbbench check`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.manifests import REPO

HEAVY = ("matplotlib", "scipy", "otava")


def printed(probe: str) -> str:
    """What `probe` prints, run by a fresh interpreter in the repository."""
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=REPO).stdout  # fmt: skip


@pytest.mark.parametrize("module", ["dbbench_cli.cli", "dbbench_results.__main__",
                                    "dbbench_results.server", "dbbench_report"])  # fmt: skip
def test_starting_loads_no_chart_or_statistics_library(module: str) -> None:
    probe = f"import sys, {module}; print(sorted({{m.split('.')[0] for m in sys.modules}}))"
    loaded = printed(probe)
    assert not [name for name in HEAVY if f"'{name}'" in loaded], loaded


def test_drawing_a_chart_loads_matplotlib_then() -> None:
    probe = (
        "import sys\nfrom dbbench_report import plots\nfrom dbbench_report.figures import Line\n"
        "before = 'matplotlib' in sys.modules\n"
        "svg = plots.line_chart('t', [Line('a', (0.0, 1.0), (1.0, 2.0))], xlabel='x', ylabel='y')\n"
        "print(before, 'matplotlib' in sys.modules, svg.startswith('<svg'))"
    )
    assert printed(probe).split() == ["False", "True", "True"]


def test_checking_a_manifest_loads_no_kubernetes_client() -> None:
    probe = (
        "import contextlib, io, sys\nfrom dbbench_cli.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['check', 'examples/quickstart.yaml'])\n"
        "print(code, 'kubernetes' in sys.modules)"
    )
    assert printed(probe).split() == ["0", "False"]
