"""experiments/softmax_v7_versions.py's sources: a version of v7 taken from git into a folder of its own."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

from softmax_v7_versions import git_show, materialise  # noqa: E402

KERNEL = ROOT / "cuda_kernels" / "softmax" / "07_tma_ring.cu"


def _first_commit_of(path: Path) -> str:
    revs = subprocess.run(["git", "log", "--format=%H", "--", path.relative_to(ROOT).as_posix()], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout.split()
    return revs[-1]


@pytest.fixture(scope="module")
def git_checkout():
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout: the versions come from git")


def test_a_revision_takes_the_kernel_as_it_was_beside_todays_headers(git_checkout, tmp_path):
    # v7's first commit: its kernel file as then, the folder's headers (ring.cuh, row.cuh, …) as now, so that an old
    # kernel that includes a header finds one, and nothing is written into the repository
    rev = _first_commit_of(KERNEL)
    path = materialise(rev, KERNEL, tmp_path)
    assert path == tmp_path / KERNEL.name and path.read_text() == git_show(rev, KERNEL)
    for header in KERNEL.parent.glob("*.cuh"):
        assert (tmp_path / header.name).read_text() == header.read_text()


def test_a_header_at_a_revision_takes_todays_kernel_with_that_header(git_checkout, tmp_path):
    ring = KERNEL.parent / "ring.cuh"
    rev = _first_commit_of(ring)
    if git_show(rev, ring) == ring.read_text():
        pytest.skip("the history here holds no other form of ring.cuh (a shallow clone)")
    path = materialise(f"{rev}:ring.cuh", KERNEL, tmp_path)
    assert path.read_text() == KERNEL.read_text()
    assert (tmp_path / "ring.cuh").read_text() == git_show(rev, ring)
    with pytest.raises(SystemExit, match="no header"):
        materialise("HEAD:nothing.cuh", KERNEL, tmp_path)
