"""No import cycle: the module-level imports of the framework form a DAG, and every module
imports on its own in a fresh interpreter (Triton twins without the framework)."""

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from study.paths import ROOT

PACKAGES = ("study", "triton_kernels")


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


MODULES = dict(_modules())


def _top_level_imports(path):
    """Modules of this repository imported at module level (not inside functions)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in found if m in MODULES}


def test_module_level_imports_form_no_cycle():
    graph = {name: _top_level_imports(path) - {name} for name, path in MODULES.items()}
    state = {}

    def visit(node, trail):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", " → ".join([*trail, node])
        state[node] = "open"
        for dep in sorted(graph[node]):
            visit(dep, [*trail, node])
        state[node] = "done"

    for name in graph:
        visit(name, [])


def test_triton_twin_modules_do_not_import_the_framework():
    for name, path in MODULES.items():
        if name.startswith("triton_kernels"):
            assert not any(m.startswith("study") for m in _top_level_imports(path)), name


def test_every_module_imports_on_its_own():
    def load(name):
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True,
                              env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
        return name, proc.returncode, proc.stderr[-800:]

    with ThreadPoolExecutor(4) as pool:
        failed = [(n, err) for n, code, err in pool.map(load, [m for m in MODULES if m != "study.__main__"]) if code]
    assert failed == []
