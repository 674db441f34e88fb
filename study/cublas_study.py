"""``python -m study cublas-study``: the cuBLAS study's tables measured on this GPU, on one page.

The cuBLAS benchmark this study reproduces (docs/seeds.md §3) shows how throughput depends on
precision, shape, alignment and library path. Its tables, for cuBLAS (``torch.matmul``),
cuBLASLt (nvmath-python, heuristic and autotuned) and the study's own best CUDA rung and best
Triton twin, are steps here — each one ``study`` command writing its own results file into
``reports/<gpu>/cublas-study/`` (resumable like every command; a complete file is not measured
again):

- GEMM at the seed's shapes (2048³, 512×4096×4096, 64×8192×8192, 64×64×65536), FP32;
- GEMM at 2048³ and 4096³ in TF32, and in FP16 and BF16 (FP32 accumulation: the hgemm op, its
  tensor-core rungs v6–v8 and their twins);
- strided-batched GEMM (``torch.bmm``) at bgemm's attention-like shapes, FP32 and FP16;
- GEMV at 1024², 4096², 16384² in each of its precisions, cold and hot;
- the alignment table (``study align``, leading dimensions 4096 … 4111);
- a sweep per precision, M, N ∈ 256 … 8192 (×2) at K = 4096: cuBLAS, the best CUDA rung (v7 in
  FP32; hgemm v8 in FP16) and its twin, as heatmaps.

Each step is data (:class:`Step`): the flow it calls as a function — ``compare``, ``align`` or
``sweep`` — with its selection, and the command line it equals, which its results file records.
``reports/<gpu>/cublas-study.md`` is written from those files alone; each table names the file,
command and commit that measured it. ``--page-only`` rewrites the page without a GPU. "Best" is
the fastest ``ok`` record of a backend in a row (any rung, any autotune mode), named in the cell;
a wrong or crashed record is never best, and the page counts them.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from study import align, catalog, compare, keys, metrics, results, select, sweep
from study.plan import rung_wanted
from study.backends import cublaslt
from study.report.labels import EMULATION, shape_label
from study.timing import TimerSettings

SEED_GEMM_SHAPES = ("2048x2048x2048", "512x4096x4096", "64x8192x8192", "64x64x65536")
TF32_SHAPES = ("2048x2048x2048", "4096x4096x4096")
HALF_SHAPES = TF32_SHAPES  # the seed's FP16 row is 2048³ (docs/seeds.md §3); 4096³ as for TF32
GEMV_SHAPES = ("1024x1024", "4096x4096", "16384x16384")
SWEEP_AXES = (("M", "256:8192:x2"), ("N", "256:8192:x2"), ("K", "4096"))


def _flags(flag: str, values) -> list[str]:
    return [x for v in values for x in (flag, v)]


@dataclasses.dataclass(frozen=True)
class Step:
    """One table of the study: the flow that measures it (``compare``, ``align`` or ``sweep``) and its
    selection, called as a function; ``argv`` is the command line it equals."""

    name: str     # file stem of its results in the study's folder
    title: str
    flow: str     # compare, align or sweep
    op: str
    shapes: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    rungs: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    autotune: str = "off"
    axes: tuple[tuple[str, str], ...] = ()  # sweep: (axis, values)
    base: int = 0                           # align: the square's side
    # Until the step has run, its table may come from the comparison beside the folder (the
    # README's ``compare``, which measures GEMV at these shapes too): (op, shapes).
    from_compare: tuple[str, tuple[str, ...]] | None = None
    # Where the page's reader finds why a row stands where it does (prose with evidence, no figures).
    why: str = ""

    @property
    def argv(self) -> tuple[str, ...]:
        """The study command this step equals, without --out and --name."""
        if self.flow == "align":
            return ("align", "--op", self.op, "--base", str(self.base), *_flags("--rung", self.rungs))
        if self.flow == "sweep":
            return ("sweep", "--op", self.op, *(x for a, v in self.axes for x in (f"--{a.lower()}", v)),
                    *_flags("--rung", self.rungs), *_flags("--backend", self.backends), *_flags("--dtype", self.dtypes),
                    "--autotune", self.autotune)
        return ("compare", "--op", self.op, *_flags("--dtype", self.dtypes), *_flags("--shape", self.shapes),
                *_flags("--rung", self.rungs), *_flags("--backend", self.backends), "--autotune", self.autotune)

    def command(self, out: Path) -> list[str]:
        return [*self.argv, "--out", str(out), "--name", self.name]

    def cases(self, say) -> tuple[list, object]:
        """(its cases, what writes its page: None for the comparison report)."""
        if self.flow == "align":
            cases, line = align.cases(self.op, self.base, self.rungs[0] if self.rungs else None, self.dtypes or None,
                                      self.backends or None, self.autotune)
            say(line)
            return cases, lambda doc, json_path, md_path: align.write_outputs(doc, json_path)
        if self.flow == "sweep":
            cases, line = sweep.cases(self.op, dict(self.axes), self.dtypes or None, self.backends or None,
                                      self.rungs or None, self.autotune)
            say(line)
            return cases, lambda doc, json_path, md_path: sweep.write_outputs(doc, json_path)
        return select.cases([self.op], list(self.shapes) or None, list(self.dtypes) or None, self.backends or None,
                            self.rungs or None, self.autotune, say=say), None


STEPS = (
    Step("seed-fp32", "GEMM, FP32, at the seed's shapes", "compare", "sgemm", shapes=SEED_GEMM_SHAPES, autotune="both"),
    Step("seed-tf32", "GEMM, TF32", "compare", "sgemm", shapes=TF32_SHAPES, dtypes=("tf32",), autotune="both",
         why="Why the Triton twins trail cuBLAS here: every config issues TF32 `wgmma`, which reads B from shared "
             "memory K-major only, and this op's B is N-contiguous, so Triton re-lays each B tile through "
             "registers on the tensor cores' path (shared-store bank conflicts, an idle tensor pipe); with B "
             "K-major the same kernel runs several times faster. Evidence: docs/ladders/sgemm.md (\"TF32 and "
             "the Triton twins\"), `experiments/triton_tf32.py` and the ncu table `profiles/sgemm-tf32.md` "
             "beside this page."),
    Step("seed-half", "GEMM, FP16 and BF16 (FP32 accumulation; the tensor-core rungs v6–v8)", "compare", "hgemm",
         shapes=HALF_SHAPES, dtypes=("fp16", "bf16"), rungs=("v6", "v7", "v8"), autotune="both"),
    Step("batched", "Strided-batched GEMM (`torch.bmm`), FP32 and FP16, attention-like shapes (bgemm's defaults)",
         "compare", "bgemm", dtypes=("fp32", "fp16"), autotune="both",
         why="The FP16 rows with K = 64 or N = 64 do fewer than 64 flops a byte moved, about a quarter of what the "
             "H200's tensor cores need from HBM to stay busy: they are bound by memory, and the study's rung (hgemm "
             "v8's tile over the batch) meets `torch.bmm` there. At 8192 × (32×32×32) its 128-row tile computes 8× the "
             "outputs it stores. Evidence: docs/ladders/bgemm.md and the ncu table `profiles/bgemm.md`. "
             "The FP16 best-CUDA cells at 128 × (1024×64×1024) and 8192 × (32×32×32) are v1's 64-wide n tile before "
             "a fix to its C stores (40905e3); measured again after it (bgemm-runs/bgemm-bn64.md, 5ed7e35): 1.01× "
             "and 0.53×."),
    Step("gemv", "GEMV", "compare", "sgemv", shapes=GEMV_SHAPES, autotune="on", from_compare=("sgemv", GEMV_SHAPES)),
    Step("align-sgemm-4096", "Leading dimensions 4096 … 4111 (FP32 GEMM, 4096³)", "align", "sgemm", base=4096,
         rungs=("v7",)),
    Step("sweep-fp32", "Sweep, FP32, K = 4096", "sweep", "sgemm", axes=SWEEP_AXES, rungs=("v7",),
         backends=("cuda", "triton")),
    Step("sweep-tf32", "Sweep, TF32, K = 4096 (the FFMA rungs have no TF32: cuBLAS and the twin)", "sweep", "sgemm",
         axes=SWEEP_AXES, rungs=("v4",), backends=("triton",), dtypes=("tf32",)),
    Step("sweep-fp16", "Sweep, FP16, K = 4096 (hgemm v8, its twin and cuBLAS)", "sweep", "hgemm", axes=SWEEP_AXES,
         rungs=("v8",), backends=("cuda", "triton"), dtypes=("fp16",)),
)


def run(out: Path, say=print, gpus: list | None = None, gpus_text: str | None = None) -> int:
    """Each step whose results file is not complete, or is complete but has no record of a rung the step
    measures now (``_missing_rungs``; the step runs again whole), measured by its flow (``gpus``: on
    these GPUs, one worker each; ``gpus_text``: how the command line named them, recorded with it).
    Returns the worst exit code; an interruption (130) or a usage error (2) stops the study."""
    worst = 0
    for step in STEPS:
        path = out / f"{step.name}.json"
        doc = _complete(path) if path.is_file() else None
        missing = _missing_rungs(doc, step) if doc else []
        if doc and not missing:
            say(f"cublas-study: {step.name}: complete in {path}, not measured again")
            continue
        if missing:  # complete, but measured before these rungs existed (or before the step named them)
            say(f"cublas-study: {step.name}: {path} has no record of {', '.join(missing)}: measured again")
        argv = [*step.command(out), *(["--gpus", gpus_text] if gpus_text else [])]
        say(f"cublas-study: {step.name}: python -m study {' '.join(argv)}")
        try:
            cases, finish = step.cases(say)
        except select.UsageError as exc:
            say(f"error: {exc}")
            return 2
        options = compare.RunOptions(TimerSettings(), out=out, name=step.name, gpus=gpus, pair_best=step.flow == "compare",
                                     what=f"autotune {step.autotune}", argv=["python", "-m", "study", *argv])
        code, _ = compare.run(cases, options, finish=finish)
        if code in (2, 130):
            return code
        worst = max(worst, code)
    return worst


def _complete(path: Path) -> dict | None:
    """A step's results file if it is whole, else None (an unreadable one is measured again: the
    step's command says why it cannot resume it)."""
    try:
        doc = results.load(path)
    except (OSError, ValueError):
        return None
    return doc if doc.get("complete") else None


def _rows(doc: dict, with_mode: bool = True) -> dict:
    """(shape, precision[, mode]) -> the records of that table row, in first-seen order."""
    groups: dict = {}
    for m in doc["measurements"]:
        key = (shape_label(m["shape"]), m["precision"]) + ((m["mode"],) if with_mode else ())
        groups.setdefault(key, []).append(m)
    return groups


def _lt(records: list[dict]) -> dict:
    """autotune mode -> the row's ok cuBLASLt record."""
    return {m["autotune"]: m for m in records if m["backend"] == "cublaslt" and m["status"] == "ok"}


def _best(records: list[dict], backend: str) -> dict | None:
    return metrics.best(m for m in records if m["backend"] == backend)


def _cell(m: dict | None, name_it: bool) -> str:
    if m is None:
        return "—"
    scale, unit = (1e3, "T") if (m.get("work") or {}).get("bound", "compute") == "compute" else (1.0, "")
    value = metrics.headline(m) / scale
    text = f"{value:,.1f}" if unit else f"{value:,.0f}"
    if m.get("x_ref") is not None and not m.get("reference"):
        text += f" ({m['x_ref']:.2f}×)"
    if name_it:
        text += f" {(m.get('rung') or '').split('_')[0]}" + ("" if m["autotune"] in ("n/a", "off") else " tuned")
        if m.get("math") in EMULATION:
            text += f" ({m['math'].replace('xtf', 'xTF')} emulation)"
    return text


def _own_cell(records: list[dict], backend: str) -> str:
    """The study's fastest rung on ``backend``; when that is an emulation (3xTF32 tensor-core
    products in an FP32 row), also the fastest rung that computes in the precision itself (FFMA), so
    that an FP32 row never reads a tensor-core figure as the FFMA ladder's."""
    best = _best(records, backend)
    text = _cell(best, True)
    if best is not None and best.get("math") in EMULATION:
        plain = metrics.best(m for m in records if m["backend"] == backend and m.get("math") not in EMULATION)
        text += f"; FFMA {_cell(plain, True)}"
    return text


def _rel(path: Path, page: Path) -> str:
    return Path(os.path.relpath(path, page.parent)).as_posix()


def _source(path: Path, doc: dict, page: Path) -> str:
    env = doc["environment"]
    return (f"From [`{_rel(path, page)}`]({_rel(path, page)}): `{env.get('command', '?')}` at commit "
            f"`{(env.get('git') or {}).get('commit', '?')}`.")


def gemm_table(doc: dict) -> tuple[list[str], list[list[str]]]:
    """Rows: (shape, precision); columns: cuBLAS, cuBLASLt heuristic / autotuned, best CUDA, best
    Triton — TFLOPS and × cuBLAS."""
    header = ["shape", "precision", "cuBLAS", "cuBLASLt heuristic", "cuBLASLt autotuned", "best CUDA", "best Triton"]
    rows = []
    for (shape, precision, mode), records in _rows(doc).items():
        lt = _lt(records)
        precision = precision if mode == "cold" else f"{precision} ({mode})"
        rows.append([shape, precision, _cell(_best(records, "cublas"), False), _cell(lt.get("off"), False),
                     _cell(lt.get("on"), False), _own_cell(records, "cuda"), _own_cell(records, "triton")])
    return header, rows


def gemv_table(doc: dict) -> tuple[list[str], list[list[str]]]:
    header = ["shape", "precision", "mode", "cuBLAS GB/s", "best CUDA", "best Triton", "cuBLAS % of bandwidth",
              "best CUDA % of bandwidth"]
    rows = []
    for (shape, precision, mode), records in _rows(doc).items():
        lib, cuda = _best(records, "cublas"), _best(records, "cuda")
        pct = [f"{m['pct_peak']:.1f} %" if m and m.get("pct_peak") is not None else "—" for m in (lib, cuda)]
        rows.append([shape, precision, mode, _cell(lib, False), _cell(cuda, True), _cell(_best(records, "triton"), True),
                     *pct])
    return header, rows


def _algorithm(m: dict | None) -> dict:
    return dict(((m or {}).get("config") or {}).get("algorithm") or {})


def _algorithm_text(algo: dict) -> str:
    keys = ("algorithm_id", "tile", "split_k", "cluster_shape", "cta_swizzling")
    return ", ".join(f"{k.replace('algorithm_id', 'id')} {algo[k]}" for k in keys if k in algo) or "—"


def lt_table(docs: list[dict]) -> tuple[list[str], list[list[str]]]:
    """cuBLASLt's two choices beside cuBLAS (``torch.matmul``, ``torch.bmm``) per GEMM row: the
    heuristic's first algorithm and the one nvmath's autotune kept, each with its TFLOPS as this study timed it, and what the
    autotuned pick changed (the fields of the recorded algorithm that differ)."""
    header = ["shape", "precision", "cuBLAS", "Lt heuristic", "its algorithm", "Lt autotuned", "its algorithm",
              "autotune changed", "considered"]
    rows = []
    for doc in docs:
        for (shape, precision), records in _rows(doc, with_mode=False).items():
            lt = _lt(records)
            if not lt:
                continue
            off, on = _algorithm(lt.get("off")), _algorithm(lt.get("on"))
            changed = [k for k in dict.fromkeys([*off, *on]) if off.get(k) != on.get(k)] if off and on else []
            considered = ((lt.get("on") or {}).get("config") or {}).get("algorithms_considered", "—")
            rows.append([shape, precision, _cell(_best(records, "cublas"), False), _cell(lt.get("off"), False),
                         _algorithm_text(off), _cell(lt.get("on"), False), _algorithm_text(on),
                         (", ".join(changed) or "nothing") if off and on else "—", str(considered)])
    return header, rows


LT_TEXT = ("cuBLASLt through nvmath-python (`study/backends/cublaslt.py`): *heuristic* is the first algorithm "
           "cuBLASLt's heuristic lists for the problem; *autotuned* is the one nvmath's `autotune` keeps after timing "
           f"up to {cublaslt.ALGORITHMS} planned candidates {cublaslt.AUTOTUNE_ITERATIONS} times each with its own "
           "events. Both are then timed by this study like "
           "every other row (cold, noise-stopped medians), so an autotuned pick slower than the heuristic's is one "
           "that won nvmath's short timing and lost this one; *autotune changed* names the recorded fields in which "
           "the two algorithms differ (tile, split-K, cluster shape, swizzling).")


def _not_ok(doc: dict) -> str:
    bad = [m for m in doc["measurements"] if m["status"] not in ("ok", "skipped")]
    return (f" {len(bad)} measurement(s) wrong or crashed, never ranked: "
            + ", ".join(f"`{m['implementation']}` {shape_label(m['shape'])} ({m['status']})" for m in bad[:8])
            + "." if bad else "")


def _missing_rungs(doc: dict, step: Step) -> list[str]:
    """Rungs the step measures now (those its ``--rung`` flags name, or all of its op's) without a
    single record in the step's file: a file measured before the ladder grew or the step moved to a
    better rung. Its table's "best" is then the best of the rungs it had, and the page says which
    are missing rather than let the reader take it for the ladder's best."""
    named = step.rungs
    keys = [r.key for index, r in enumerate(catalog.ladder(step.op).rungs) if rung_wanted(r.key, index, named)]
    seen = {m.get("rung") for m in doc["measurements"]}
    return [k for k in keys if k not in seen]


def _only(doc: dict, step: Step) -> dict:
    """The records of the step's op and shapes in the comparison the step borrows from."""
    op, shapes = step.from_compare
    keep = [m for m in doc["measurements"] if m["op"] == op and keys.shape_text(m["shape"]) in shapes]
    return {**doc, "measurements": keep}


def markdown(folder: Path, page: Path) -> str:
    from tabulate import tabulate

    docs, paths = {}, {}
    for step in STEPS:
        path = folder / f"{step.name}.json"
        borrowed = not path.is_file() and step.from_compare and (folder.parent / "compare.json").is_file()
        if borrowed:
            path = folder.parent / "compare.json"
        if path.is_file():
            doc = _only(results.load(path), step) if borrowed else results.load(path)
            if doc["measurements"]:
                docs[step.name], paths[step.name] = doc, path
    if not docs:
        raise FileNotFoundError(f"no results of the cuBLAS study in {folder}: run `python -m study cublas-study`")
    gpu = (next(iter(docs.values()))["environment"].get("gpu") or {}).get("name", "?")
    lines = [f"# The cuBLAS study on {gpu}", "",
             f"Generated by `python -m study cublas-study` from the results files in [`{_rel(folder, page)}/`]"
             f"({_rel(folder, page)}/); do not edit by hand. "
             "GEMM cells: TFLOPS (× cuBLAS; figures in the unit on their axis), and for the study's own kernels "
             "the rung "
             "that was fastest "
             "(`tuned`: with autotuning). GEMV cells: GB/s from the minimum bytes. Cold mode (L2 flushed before each "
             "sample) unless a row says hot. How each number was measured: docs/method.md.", ""]
    for step in STEPS:
        doc = docs.get(step.name)
        lines += [f"## {step.title}", ""]
        if doc is None:
            lines += [f"Not measured yet (`python -m study {' '.join(step.argv)}`).", ""]
            continue
        path = paths[step.name]
        source = _source(path, doc, page) + ("" if doc.get("complete", True) else " **Incomplete run.**")
        missing = _missing_rungs(doc, step)
        if missing:
            source += (f" **Rungs this step measures that have no record here:** {', '.join(missing)}; the CUDA "
                       "and Triton figures are of the rungs the file has (`python -m study cublas-study` measures "
                       "the step again).")
        if step.flow == "compare":
            header, rows = (gemv_table if step.op == "sgemv" else gemm_table)(doc)
            lines += [source + _not_ok(doc), "", tabulate(rows, header, tablefmt="github", disable_numparse=True), ""]
            lines += [step.why, ""] if step.why else []
        elif step.flow == "align":
            figure = folder / "figures" / f"{step.name}.png"
            lines += [source + _not_ok(doc), "", align.reading("TFLOPS"), "", align.table(doc, per=1e3), ""]
            if figure.is_file():
                lines += [f"![throughput over the leading dimension]({_rel(figure, page)})", ""]
        else:
            figures = sorted((folder / "figures").glob(f"{step.name}-*.png"))
            lines += [source + _not_ok(doc) + f" Every point: [`{step.name}.md`]({_rel(folder / (step.name + '.md'), page)})"
                      " and its CSV.", ""]
            lines += [f"![{step.title}]({_rel(f, page)})" for f in figures] + [""]
    gemm_docs = [docs[s.name] for s in STEPS if s.name in docs and s.flow == "compare" and s.op != "sgemv"]
    header, rows = lt_table(gemm_docs)
    if rows:
        lines += ["## cuBLASLt's choices", "", LT_TEXT, "", tabulate(rows, header, tablefmt="github",
                                                                      disable_numparse=True), ""]
    return "\n".join(lines)


def write_page(folder: Path, page: Path | None = None) -> Path:
    page = page or folder.parent / "cublas-study.md"
    page.write_text(markdown(folder, page))
    return page
