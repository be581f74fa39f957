"""Every module of the contract (runner-image/dbbench_contract/) has a test here that
imports it: the formats that cross a process boundary are each tested on their
own, not only through the programs that write and read them. The API model
(dbbench_contract.api) has its tests in api/ here."""

from __future__ import annotations

import ast
from pathlib import Path

import dbbench_contract

PACKAGE = Path(dbbench_contract.__file__).parent
HERE = Path(__file__).parent


def imported_modules(test_file: Path) -> set[str]:
    """The dbbench_contract modules a test file imports (`""` for the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(test_file.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "dbbench_contract":
            found |= {""} | {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "dbbench_contract."
        ):
            found.add((node.module or "").removeprefix("dbbench_contract."))
        elif isinstance(node, ast.Import):
            found |= {
                alias.name.removeprefix("dbbench_contract.").removeprefix("dbbench_contract")
                for alias in node.names if alias.name.split(".")[0] == "dbbench_contract"
            }  # fmt: skip
    return found


def test_every_contract_module_is_imported_by_a_test_of_its_own_here() -> None:
    modules = {"" if p.stem == "__init__" else p.stem for p in PACKAGE.glob("*.py")}
    assert len(modules) >= 14
    tested = set().union(*(imported_modules(p) for p in HERE.glob("test_*.py")))
    untested = sorted(f"dbbench_contract.{m}".rstrip(".") for m in modules - tested)
    assert untested == [], f"add a test of these to tests/unit/contract/: {untested}"
