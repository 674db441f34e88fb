"""``python -m study align``: how throughput depends on the leading dimensions.

One square GEMM (M = N = K = ``base``) measured with its rows of A, B and C ``pad`` elements
further apart than their length, for ``pad`` in 0 … 15 — padded views of the same matrices, not
new shapes (``study.problem.pad_rows``): a leading dimension of base … base + 15 for every
operand at once. Implementations: the op's baselines (cuBLAS, cuBLASLt), one CUDA rung and its
Triton twin (the ladder's last rung unless ``--rung`` names another). A CUDA rung decides its
vector path per call (``ALIGNED``: every leading dimension a multiple of 4, recorded with the
result) and falls back to scalar loads otherwise; the libraries and Triton take the strides.

The page is a table (GFLOPS per leading dimension and implementation, and the ratio to pad 0)
and a line plot, beside the results file and its CSV.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from study import metrics, results, select, sweep
from study.report import png
from study.select import UsageError

PADS = range(16)


def shape(problem, base: int) -> dict:
    """The square problem of side ``base`` (an op whose axes are M, N and K)."""
    if set(problem.axes) != {"M", "N", "K"}:
        raise ValueError(f"align measures ops of axes M, N, K; {problem.name} has {', '.join(problem.axes)}")
    return {axis: base for axis in problem.axes}


def cases(op: str, base: int, rung: str | None = None, dtypes=None, backends=None, autotune: str = "off",
          modes=None, paired: bool = False) -> tuple[list, str]:
    """(the cases of an align run — its rung the op's last unless named —, a line that counts them): one
    precision and one timing mode at a time; a usage error says what cannot be aligned."""
    all_ops, problem = select.one_op(op)
    if not problem.paddable:
        raise UsageError(f"{op}'s kernels take no leading dimensions; align runs on "
                         + ", ".join(name for name, lad in all_ops.items() if lad.problem.paddable))
    if base < 1:
        raise UsageError(f"--base must be at least 1; got {base}")
    try:
        square = shape(problem, base)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if len(dtypes or []) > 1 or len(modes or []) > 1:
        raise UsageError("align measures one precision and one timing mode at a time (one --dtype, one --mode)")
    rung = rung or f"v{len(all_ops[op].rungs) - 1}"
    precisions = select.parse_dtypes(dtypes, [op], all_ops) if dtypes else None
    cases = padded(select.planned([op], {op: [square]}, precisions, backends, [rung], autotune, modes, paired))
    return cases, (f"align {op} at {base}³, rung {rung}: leading dimensions {base} … {base + 15}, "
                   f"{len(cases)} cases")


def padded(cases: list, pads=PADS) -> list:
    """Every case once per padding, in padding order (a group is one padding: its reference
    and rungs stay together on a shard or GPU)."""
    return [dataclasses.replace(c, pad=p) for p in pads for c in cases]


def is_align(doc: dict) -> bool:
    return " study align " in f" {doc.get('environment', {}).get('command', '')} "


def _series(doc: dict) -> dict:
    """(implementation, autotune) -> {pad: record} over the ok records. An align run has one
    precision and one timing mode (``cmd_align`` refuses more); a file with several is refused here."""
    kinds = {(m.get("precision"), m.get("mode")) for m in doc["measurements"]}
    if len(kinds) > 1:
        raise ValueError(f"an align page shows one precision and one timing mode; this file has {sorted(kinds)}")
    out: dict = {}
    for m in doc["measurements"]:
        if m["status"] == "ok":
            out.setdefault((m["implementation"], m["autotune"]), {})[m.get("pad") or 0] = m
    return out


def _base_and_pads(doc: dict) -> tuple[int, list[int]]:
    """The square's side and the paddings an align run measured."""
    base = next(iter(doc["measurements"]))["shape"]["M"] if doc["measurements"] else 0
    return base, sorted({m.get("pad") or 0 for m in doc["measurements"]})


def table(doc: dict, per: float = 1.0) -> str:
    """GFLOPS (``per`` 1e3: TFLOPS, as the cuBLAS study's page states every GEMM) per leading dimension
    (rows) and implementation (columns), with the ratio to the unpadded case and the CUDA rungs' scalar
    path marked: the page's table, and the cuBLAS study's."""
    from tabulate import tabulate

    series = _series(doc)
    base, pads = _base_and_pads(doc)
    names = sorted(series, key=lambda k: (k[0].split("/")[2] not in ("cublas", "cublaslt"), k))
    header = ["leading dim"] + [f"{name.split('/', 1)[1]}{'' if tune == 'n/a' else f' ({tune})'}"
                                for name, tune in names]
    rows = []
    for pad in pads:
        row = [str(base + pad)]
        for key in names:
            m, first = series[key].get(pad), series[key].get(0)
            if m is None:
                row.append("—")
                continue
            value = metrics.headline(m)
            rel = f" ({value / metrics.headline(first):.2f})" if first and pad else ""
            aligned = (m.get("config") or {}).get("ALIGNED")
            row.append(f"{value / per:,.{1 if per > 1 else 0}f}{rel}" + (" ·scalar" if aligned == 0 else ""))
        rows.append(row)
    return tabulate(rows, header, tablefmt="github", disable_numparse=True)


def reading(unit: str = "GFLOPS") -> str:
    """How to read :func:`table`, wherever it is shown."""
    return (f"{unit}, median; in brackets the ratio to the unpadded case; ·scalar: a CUDA rung that took its "
            "scalar path (a leading dimension not a multiple of 4).")


def markdown(doc: dict, figure: Path | None, md_path: Path) -> str:
    base, pads = _base_and_pads(doc)
    env = doc["environment"]
    not_ok = [m for m in doc["measurements"] if m["status"] != "ok"]
    lines = [f"# `study align` on {(env.get('gpu') or {}).get('name', '?')}", "",
             f"Generated from the results file beside it by `{env.get('command', '')}` at commit "
             f"`{(env.get('git') or {}).get('commit')}`; do not edit by hand.", "",
             f"{doc['measurements'][0]['op'] if doc['measurements'] else '?'} at {base}³, "
             f"{doc['measurements'][0]['precision'] if doc['measurements'] else '?'}, "
             f"{doc['measurements'][0].get('mode') if doc['measurements'] else '?'} mode: the rows of A, B and C "
             f"padded by {', '.join(map(str, pads))} elements (padded views of the same matrices; v0 re-lays B "
             f"column-major, unpadded). {reading()}", "",
             table(doc), ""]
    if figure is not None:
        lines += [f"![throughput over the leading dimension]({figure.relative_to(md_path.parent).as_posix()})", ""]
    if not_ok:
        lines += [f"Not measured: {len(not_ok)} cases (" + "; ".join(
            sorted({f"{m['implementation']}: {m['status']} ({(m.get('reason') or '').partition(chr(10))[0][:100]})"
                    for m in not_ok})[:5]) + ").", ""]
    return "\n".join(lines)


def figure(doc: dict, path: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = _series(doc)
    if not series:
        return None
    base = doc["measurements"][0]["shape"]["M"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for (name, tune), by_pad in sorted(series.items()):
        pads = sorted(by_pad)
        ax.plot([base + p for p in pads], [metrics.headline(by_pad[p]) for p in pads], marker="o",
                label=name.split("/", 1)[1] + ("" if tune == "n/a" else f" ({tune})"))
    ax.set_xlabel("leading dimension of A, B and C (elements)")
    ax.set_ylabel(metrics.unit(doc["measurements"][0]["work"]["bound"]))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    png.save(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_outputs(doc: dict, json_path: Path) -> tuple[Path, Path]:
    """CSV (study.sweep's tidy rows, a ``pad`` column included), figure and page beside the file."""
    csv_path, md_path = results.beside(json_path, ".csv"), results.beside(json_path, ".md")
    sweep.write_csv(doc, csv_path)
    fig = figure(doc, json_path.parent / "figures" / f"{results.stem(json_path)}.png")
    md_path.write_text(markdown(doc, fig, md_path))
    return csv_path, md_path
