"""softmax v7 at other commits' sources against v7 now, interleaved in one process (docs/ladders/softmax.md, v7).

A suite rerun named v7 slower than a committed run of the same configs; this times the versions side by side, so
that all see the same GPU, clocks and power state. Each version is a source taken from git: ``name=REV`` takes
v7's ``07_tma_ring.cu`` as at REV; ``name=REV:ring.cuh`` takes today's ``07_tma_ring.cu`` with ``ring.cuh`` as at
REV. Each is written into a temporary folder of its own beside copies of today's softmax headers (nothing is
written into the repository, so a killed run leaves nothing there), and its persistent grid is sized by its own
kernel's occupancy (the driver's count of its clusters: its launcher is built for its file). For each shape and
precision, in two rounds of all versions, each version's gate (check_output) must pass before it is timed; its
cold time (median of 100 launches by the study's own timer, L2 flushed before each, after the study's warm-up)
prints as GB/s, with the launch's cluster size, threads, stages and clusters. A version that cannot take a shape (a
row longer than its ring's scope) is said so and left out of that case. ``head`` is the working tree's v7
(``--only`` picks one version, for ncu).

    python experiments/softmax_v7_versions.py [--only NAME] [--version NAME=REV[:ring.cuh] ...] MxN ...
        e.g. --version old=f84c808 --version prev=9187409:ring.cuh 1024x128256 64x151936
                                                    (from the repository root, on a GPU, in a git checkout,
                                                     or with GIT_DIR naming a repository holding the REVs)
"""

import argparse
import dataclasses
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from softmax_v8_clusters import cases, cold_median_ms, cold_timer  # noqa: E402

from study.backends import backend  # noqa: E402
from study.backends.launch import Unsupported  # noqa: E402
from study.catalog import implementation, ladder  # noqa: E402
from study.ops.softmax import SOFTMAX  # noqa: E402
from study.ops.softmax_rings import tma_ring_launcher  # noqa: E402
from study.problem import check_output  # noqa: E402

IMPL = "softmax/v7_tma_ring/cuda"


def git_show(rev: str, path: Path) -> str:
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(["git", "show", f"{rev}:{path.relative_to(root).as_posix()}"], cwd=root, check=True,
                          capture_output=True, text=True).stdout


def materialise(spec: str, kernel: Path, folder: Path) -> Path:
    """Version ``spec`` (REV or REV:HEADER) of ``kernel`` written into ``folder`` beside copies of the headers of the
    kernel's own folder (HEADER as at REV); returns the kernel's path there."""
    rev, _, header = spec.partition(":")
    for own in kernel.parent.glob("*.cuh"):
        shutil.copy(own, folder / own.name)
    if header:
        if not (kernel.parent / header).is_file():
            sys.exit(f"{header} is no header of {kernel.parent}")
        (folder / header).write_text(git_show(rev, kernel.parent / header))
    target = folder / kernel.name
    target.write_text(kernel.read_text() if header else git_show(rev, kernel))
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="append", default=[], metavar="NAME=REV[:HEADER]")
    parser.add_argument("--only", help="time only this version (for ncu)")
    parser.add_argument("shapes", nargs="+")
    args = parser.parse_args()
    head = implementation(IMPL)
    names = [item.partition("=")[0] for item in args.version]
    if len(set(names + ["head"])) != len(names) + 1 or not all(n.isidentifier() for n in names):
        sys.exit(f"--version names must be distinct identifiers other than 'head'; got {names}")
    with tempfile.TemporaryDirectory() as scratch:
        versions = []
        for name, item in zip(names, args.version):
            folder = Path(scratch) / name
            folder.mkdir()
            path = materialise(item.partition("=")[2], head.target.path, folder)
            versions.append((name, dataclasses.replace(head, target=dataclasses.replace(head.target, path=path),
                                                       launcher=tma_ring_launcher(SOFTMAX.cuda_defines, path))))
        versions = [(n, i) for n, i in versions + [("head", head)] if args.only in (None, n)]
        problem = ladder("softmax").problem
        timer = cold_timer()
        print(torch.cuda.get_device_name(0), f"{IMPL} versions, cold, median of 100 launches, GB/s, two rounds")
        for shape_text, precision_name, precision, shape, tensors, ref, scale, nbytes in cases(problem, args.shapes):
            got, configs = {}, {}
            for round_ in range(2):
                for name, impl in versions:
                    if round_ == 1 and name not in got:
                        continue
                    try:
                        launch = backend("cuda").prepare(impl, problem, tensors, shape, precision,
                                                         config=dict(impl.params))
                    except Unsupported as outside:  # a row no cluster's ring holds: v6's, not v7's
                        print(shape_text, precision_name, name, "not run:", outside)
                        continue
                    if round_ == 0:
                        verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
                        if not verdict.ok:
                            print(shape_text, precision_name, name, "wrong:", verdict.message)
                            continue
                    got.setdefault(name, []).append(nbytes / cold_median_ms(launch.fn, timer) / 1e6)
                    c = launch.config
                    configs[name] = f"CL{c.get('CLUSTER')} T{c.get('THREADS')} S{c.get('STAGES')} {c.get('clusters')}"
            if got:
                print(f"{shape_text:>12s} {precision_name} " + " ".join(
                    f"{name} {'/'.join(f'{g:,.0f}' for g in values)} [{configs[name]}]"
                    for name, values in got.items()), flush=True)


if __name__ == "__main__":
    main()
