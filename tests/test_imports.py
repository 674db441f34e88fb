"""No import cycle: every import of the framework — at module level and inside functions alike —
forms a DAG, so no cycle hides behind an import in a function body; every module imports on its own
in a fresh interpreter (Triton twins without the framework); and no module outgrows one job."""

import ast
import subprocess
import sys

from study.paths import ROOT

PACKAGES = ("study", "triton_kernels")
MAX_LINES = 450       # a module that does one job fits in this (docs/architecture.md)
MAX_MAIN_LINES = 400  # the command line's entry parses and dispatches, nothing more


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


MODULES = dict(_modules())


def _imports(path, anywhere: bool = True):
    """Modules of this repository that a module imports: anywhere in it (functions included), or at
    module level only. ``from package import module`` depends on that module; ``from module import
    name`` on the module."""
    tree = ast.parse(path.read_text())
    nodes = ast.walk(tree) if anywhere else tree.body
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                      for a in node.names}
    return {m for m in found if m in MODULES}


def _cycle(graph) -> list[str] | None:
    """A cycle of the graph as a path, or None."""
    state: dict = {}

    def visit(node, trail):
        if state.get(node) == "done":
            return None
        if state.get(node) == "open":
            return [*trail[trail.index(node):], node]
        state[node] = "open"
        for dep in sorted(graph[node]):
            found = visit(dep, [*trail, node])
            if found:
                return found
        state[node] = "done"
        return None

    for name in graph:
        found = visit(name, [])
        if found:
            return found
    return None


def test_imports_anywhere_form_no_cycle():
    graph = {name: _imports(path) - {name} for name, path in MODULES.items()}
    cycle = _cycle(graph)
    assert cycle is None, " → ".join(cycle)


def test_the_cycle_finder_sees_an_import_inside_a_function(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import study.paths\n")
    b.write_text("def f():\n    import study.keys\n")
    assert "study.keys" in _imports(b) and "study.keys" not in _imports(b, anywhere=False)
    assert _cycle({"x": {"y"}, "y": {"x"}}) == ["x", "y", "x"] and _cycle({"x": {"y"}, "y": set()}) is None


def test_triton_twin_modules_do_not_import_the_framework():
    for name, path in MODULES.items():
        if name.startswith("triton_kernels"):
            assert not any(m.startswith("study") for m in _imports(path)), name


def test_every_module_does_one_job_in_a_few_hundred_lines():
    long = {name: n for name, path in MODULES.items() if name.startswith("study")
            and (n := len(path.read_text().splitlines())) > (MAX_MAIN_LINES if name == "study.__main__" else MAX_LINES)}
    assert long == {}


# Third-party packages the import check loads once, before it forks a child per module: a fresh interpreter
# spent most of its time importing torch (about 100 interpreters, a minute on CI's two cores); a child forked
# after them still holds no module of this repository, which is what "on its own" asks.
PRELOAD = ("numpy", "torch", "triton", "triton.language")
_IMPORT_EACH = """
import importlib, os, sys, traceback
for name in {preload!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
own = [m for m in sys.modules if m.split(".")[0] in {packages!r}]
assert not own, own
running, failed = {{}}, []
def reap():
    pid, status = os.wait()
    if status:
        failed.append(running[pid])
    del running[pid]
for name in {names!r}:
    if len(running) == 2:
        reap()
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            sys.stderr.write(f"--- {{name}}\\n" + traceback.format_exc()[-800:])
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    running[pid] = name
while running:
    reap()
print("failed:", " ".join(failed))
"""


def test_every_module_imports_on_its_own():
    names = [m for m in MODULES if m != "study.__main__"]
    code = _IMPORT_EACH.format(preload=PRELOAD, packages=PACKAGES, names=names)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    failed = proc.stdout.split("failed:")[-1].split()
    assert failed == [], proc.stderr[-4000:]
