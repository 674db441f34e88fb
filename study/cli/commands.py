"""One function per subcommand: it turns the parsed options into a flow's arguments, calls the flow
and returns the exit code. Glue only: every flow lives in its own module (study/compare.py,
sweep.py, align.py, sanitize.py, profile.py, validate.py, ceilings.py, cublas_study.py, diff.py,
shards.py) and can be called without the command line.

Exit codes: 0 success, 1 a measurement was wrong or crashed (or a diff found a regression, or a
sanitizer run was not clean), 2 bad usage, no GPU or a missing tool, 130 interrupted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tabulate import tabulate

from study import (align, catalog, ceilings, compare, cublas_study, diff, hardware, metrics, pages, profile,
                   profile_table, results, sanitize, shards, sweep, validate, validate_pairs, worker)
from study.keys import shape_text
from study.plan import rung_wanted
from study.paths import report_dir
from study.registry import implementations_of
from study.select import UsageError, cases as select_cases, headline as headline_cases, named as named_case, one_op, \
    ops_named, parse_dtypes, parse_shapes
from study.timing import TimerSettings, TimingConfigError


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def no_gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to torch"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "cupy is not installed (pip install -e '.[cuda]')"
    return None


def gpu_or_exit(command: str) -> bool:
    reason = no_gpu_reason()
    if reason:
        say(f"study {command} needs a CUDA GPU: {reason}.\nTo render a report from an existing results file, run: "
            f"python -m study report reports/<gpu>/compare.json")
    return reason is None


def load(path: Path, read=results.load) -> dict:
    try:
        return read(path)
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None


# ---- measuring -----------------------------------------------------------------------------------------

def settings(args) -> TimerSettings:
    for name in ("noise", "ci"):  # given in %, as their help says; TimerSettings holds fractions
        value = getattr(args, name)
        if not 0 < value < 100:
            raise UsageError(f"--{name} is a percentage in (0, 100); got {value:g}")
    try:
        return TimerSettings(mode=(args.mode or ["cold"])[0], reps=args.reps, noise=args.noise / 100,
                             ci=args.ci / 100, gate_trials=args.trials, min_samples=args.min_samples,
                             min_time_s=args.min_time, timeout_s=args.timeout,
                             throttle_threshold=args.throttle_threshold, discard_throttled=not args.keep_throttled,
                             graph_launches=args.graph_launches)
    except TimingConfigError as exc:
        raise UsageError(str(exc)) from None


def shard(args) -> tuple[int, int] | None:
    try:
        return shards.parse_shard(args.shard) if args.shard else None
    except shards.ShardError as exc:
        raise UsageError(str(exc)) from None


def gpus_syntax(args) -> None:
    """``--gpus`` spelled right, told before the GPU check (which GPUs exist is checked after it)."""
    if args.gpus:
        try:
            worker.gpu_spec(args.gpus)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def gpus(args) -> list | None:
    """The GPU indices ``--gpus`` names (after the GPU check: it counts the GPUs), or None."""
    if not args.gpus:
        return None
    import torch

    try:
        return worker.parse_gpus(args.gpus, torch.cuda.device_count())
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run(args, cases, command: str, stem: str | None = None, finish=None) -> int:
    """compare's, sweep's and align's common end: shard, GPUs, then the compare flow (the best rungs paired
    with the reference afterwards where ``--paired`` is best: compare's default)."""
    timer_settings = settings(args)
    part = shard(args)
    cases, name = compare.sharded(cases, part, args.name, stem or command)
    if part:
        say(f"shard {part[0]}/{part[1]}: {len(cases)} cases")
    gpus_syntax(args)
    if not gpu_or_exit(command):
        return 2
    lanes = gpus(args)
    if lanes and args.no_isolate and len(lanes) > 1:
        raise UsageError("--gpus with several GPUs needs a worker per GPU: drop --no-isolate")
    pair_best = (args.paired or ("best" if command == "compare" else "off")) == "best"
    options = compare.RunOptions(timer_settings, out=args.out, name=name, seed=args.seed, isolate=not args.no_isolate,
                                 fresh=args.fresh, gpus=lanes, shard=part, what=f"autotune {args.autotune}",
                                 pair_best=pair_best, suites=tuple(getattr(args, "suite", None) or ()))
    code, _ = compare.run(cases, options, finish=finish)
    return code


def cmd_compare(args) -> int:
    if args.all or args.op or args.shape or args.suite or args.rung:
        cases = select_cases(args.op, args.shape, args.dtype, args.backend, args.rung, args.autotune, args.mode,
                             say=say, paired=args.paired == "all", suites=args.suite)
    else:
        cases = headline_cases(args.dtype, args.backend, args.autotune, args.mode, paired=args.paired == "all")
        say(f"the headline: {len(cases)} cases, each op's headline rungs at its defining shapes "
            "(python -m study list; --all for the whole study)")
    return run(args, cases, "compare")  # usage errors came first: they need no GPU to be told


def page_writer(module):
    """A flow's own page in place of the comparison report (a sweep's, an align run's)."""
    def finish(doc, json_path, md_path):
        csv_path, md = module.write_outputs(doc, json_path)
        say(f"wrote {csv_path} and {md}")

    return finish


def cmd_align(args) -> int:
    cases, line = align.cases(args.op, args.base, args.rung, args.dtype, args.backend, args.autotune, args.mode,
                              paired=args.paired == "all")
    say(line)
    return run(args, cases, "align", stem=f"align-{args.op}-{args.base}", finish=page_writer(align))


def cmd_sweep(args) -> int:
    problem = one_op(args.op)[1]
    given = [(a, v) for a, v in (("m", args.m), ("n", args.n), ("k", args.k), ("batch", args.batch)) if v is not None]
    for item in args.axis or []:
        axis, sep, value = item.partition("=")
        if not sep or not axis.strip():
            raise UsageError(f"--axis {item!r}: expected NAME=SPEC, e.g. --axis batch=32:256:x2")
        given.append((axis.strip(), value))
    cases, line = sweep.cases(args.op, sweep.axis_specs(problem, given), args.dtype, args.backend, args.rung,
                              args.autotune, args.mode, paired=args.paired == "all", suites=args.suite or ())
    say(line)
    limit = sweep.CASE_LIMIT if args.limit is None else args.limit
    mine = len(compare.sharded(cases, shard(args), None, "")[0])  # the limit is about what this process measures
    if mine > limit and not args.yes:
        say(f"study sweep: {mine} cases{' in this shard' if mine != len(cases) else ''} is above the limit of "
            f"{limit}; narrow the ranges, or pass --yes (or --limit N) to run them")
        return 2
    return run(args, cases, "sweep", stem=f"sweep-{args.op}", finish=page_writer(sweep))


def cmd_rerun(args) -> int:
    old = load(args.results)
    planned = compare.rerun_plan(old)  # usage errors before the GPU check
    if not gpu_or_exit("rerun"):
        return 2
    out = args.out or Path(results.stem(args.results) + "-rerun.json")  # here, not beside a committed report
    return compare.rerun(old, planned, args.results, out)


def cmd_cublas_study(args) -> int:
    out = args.out
    if args.page_only:
        if out is None:
            raise UsageError("--page-only needs --out: the folder of the study's results, e.g. "
                             "reports/h200/cublas-study")
        try:
            print(f"wrote {cublas_study.write_page(out)}")
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        return 0
    gpus_syntax(args)
    if not gpu_or_exit("cublas-study"):
        return 2
    out = out or report_dir(hardware.current_device().slug) / "cublas-study"
    code = cublas_study.run(out, say=say, gpus=gpus(args), gpus_text=args.gpus)
    if code not in (2, 130):
        print(f"wrote {cublas_study.write_page(out)}")
    return code


def cmd_ceilings(args) -> int:
    if not gpu_or_exit("ceilings"):
        return 2
    device = hardware.current_device()
    measured, source = ceilings.load_or_measure(device, TimerSettings(), hardware.Clocks(), remeasure=args.remeasure)
    if args.copy_sizes and source != "measured now":  # a fresh measurement has the curve already
        measured = ceilings.add_copy_by_size(measured, device, TimerSettings(), hardware.Clocks())
        results.write(ceilings.cache_path(device), measured)
        source += " + the copy by size measured now"
    out_dir = args.out or report_dir(device.slug)
    results.write(out_dir / "ceilings.json", measured)
    text = ceilings.markdown(measured)
    (out_dir / "ceilings.md").write_text(text)
    print(text)
    say(f"ceilings: {source}" + ("" if source == "measured now" else " (--remeasure to measure again)")
        + f"; wrote {out_dir / 'ceilings.json'} and ceilings.md")
    return 0


def cmd_validate(args) -> int:
    named = [(name, text, None) for name, text in args.kernel or ()]
    named += [(n, text, precision) for name, ref, text, precision in args.pair or () for n in (name, ref)]
    for name, text, precision in named:  # usage errors before the GPU check, as in compare
        named_case(name, text, precision)
    for name, ref, text, precision in args.pair or ():
        try:
            validate_pairs.pair_cases(name, ref, text, precision)  # a rung and its op's reference, as compare pairs
        except (KeyError, ValueError) as exc:
            raise UsageError(f"--pair {name} {ref} {text} {precision}: "
                             f"{exc.args[0] if exc.args else 'not a case compare plans'}") from None
    if not gpu_or_exit("validate"):
        return 2
    chosen = args.kernel or args.pair
    return validate.main(args.out, use_ncu=not args.no_ncu,
                         kernels=[tuple(k) for k in args.kernel or ([] if chosen else validate.KERNELS)],
                         pairs=[tuple(p) for p in args.pair or ([] if chosen else validate_pairs.PAIRS)])


def cmd_sanitize(args) -> int:
    all_ops, ops = ops_named(args.op)
    shapes = parse_shapes(args.shape, ops, all_ops) if args.shape else None
    precisions = parse_dtypes(args.dtype, ops, all_ops) if args.dtype else None
    backends = set(args.backend or ["cuda"])
    wanted = set(args.rung or [])
    impls = [i for op in ops for i in implementations_of(all_ops[op]) if i.backend in backends and i.rung
             and rung_wanted(i.rung, i.rung_index, wanted)]
    if not impls:
        raise UsageError("no implementation matches --op/--rung/--backend")
    try:
        tool_path = sanitize.find_tool()
    except sanitize.SanitizerMissing as exc:
        say(f"study sanitize: {exc}")
        return 2
    if not gpu_or_exit("sanitize"):
        return 2
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1; got {args.jobs}")
    device = hardware.current_device()
    names = sorted({n for per_op in (precisions or {}).values() for n in per_op}) or None
    _, code = sanitize.run(impls, args.tool or sanitize.TOOLS, tool_path, args.out or report_dir(device.slug), device,
                           results.python_argv(), names, shapes, jobs=args.jobs, say=say, resume=args.resume)
    return code


def cmd_profile(args) -> int:
    if args.source or args.table:  # rendered from saved files, no GPU
        if args.config:
            raise UsageError("--config chooses what to profile; --table and --source render saved files")
        files = [] if args.source else profile_table.saved_files(args.targets)
        if args.table and not files:
            raise UsageError("no saved profiles (ncu-*.csv) there; make one with python -m study profile IMPL SHAPE")
        try:
            text = (profile_table.render_source_table(args.source) if args.source
                    else profile_table.render_table(files))
        except (OSError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        if args.md:
            args.md.parent.mkdir(parents=True, exist_ok=True)
            args.md.write_text(text)
            say(f"wrote {args.md}")
        else:
            print(text)
        return 0
    if len(args.targets) != 2:
        raise UsageError("profile takes IMPL SHAPE (e.g. sgemm/v4_double_buffer/cuda 4096x4096x4096), or --table")
    try:
        impl, _ = profile.resolve(*args.targets, args.precision)  # usage errors before the tool and GPU checks
        config = profile.parse_config(args.config, impl.params)
        for added in profile.unfitted(args.config, config):
            say(f"study profile: {added}: the point named runs as written, not fitted to the shape "
                f"(give {added.partition('=')[0]}=1 to keep the fit)")
        profile.find_ncu()
    except profile.ProfileError as exc:
        say(f"study profile: {exc}")
        return exc.code
    if not gpu_or_exit("profile"):
        return 2
    try:
        path = profile.run_profile(*args.targets, precision=args.precision, launches=args.launches, out_dir=args.out,
                                   say=say, config=config)
    except profile.ProfileError as exc:
        say(f"study profile: {exc}")
        return exc.code
    print(profile_table.render_table([path]))
    say(f"wrote {path} and {path.with_suffix('.json').name}")
    return 0


# ---- files: no GPU ---------------------------------------------------------------------------------------

def cmd_list(args) -> int:
    if args.suites:
        from study.suites import SUITES

        for found in SUITES.values():
            print(f"{found.name}: {found.about}\n  source: {found.source}")
            for op, shapes in found.shapes.items():
                print(f"  {op} ({len(shapes)}): {', '.join(shape_text(s) for s in shapes)}")
            print()
        return 0
    problems = catalog.check_integrity()
    ladders = catalog.ladders()
    if args.json:
        print(json.dumps([impl.to_json() for lad in ladders.values() for impl in implementations_of(lad)], indent=1))
    else:
        for op, lad in ladders.items():
            source = {(i.rung, i.backend): i.source for i in implementations_of(lad) if i.rung is not None}
            p = lad.problem
            # each rung's file (a twin's file::function), the folders they live in below the table
            rows = [[f"v{n}", r.key, r.idea, r.removes,
                     *(Path(source[(r.key, b)]).name if (r.key, b) in source else "—" for b in ("cuda", "triton"))]
                    for n, r in enumerate(lad.rungs)]
            folders = sorted({str(Path(text.split("::")[0]).parent) + "/" for text in source.values() if text})
            rows += [["", f"{b.key} ({'reference' if b.reference else 'baseline'})", f"{b.title} → {b.library}",
                      "", "", ""] for b in lad.baselines]
            print(f"{op}  ({p.bound}-bound, {metrics.unit(p.bound)}; shape {p.shape_form}; precisions "
                  f"{', '.join(f'{x.name} ({x.dtype}, {x.math})' for x in p.precisions)}; default shapes "
                  f"{', '.join(shape_text(s) for s in p.default_shapes)}; modes {', '.join(p.default_modes)})")
            print(tabulate(rows, ["#", "rung", "idea", "bottleneck removed", "CUDA", "Triton"], tablefmt="simple"))
            print(f"in {', '.join(folders)}" if folders else "")
            print(f"headline (compare without a selection): {', '.join(lad.headline_rungs)} at "
                  f"{', '.join(shape_text(s) for s in p.headline)} in {', '.join(p.headline_dtypes)}")
            print()
    for p in problems:
        say(f"registry problem: {p}")
    return 2 if problems else 0


def cmd_report(args) -> int:
    print(f"wrote {pages.write_page(load(args.results, read=pages.read_record), args.results, args.md)}")
    return 0


def cmd_diff(args) -> int:
    a, b = load(args.a), load(args.b)
    if args.threshold < 0:
        raise UsageError(f"--threshold is how much slower, in %, counts as a regression: at least 0; got "
                         f"{args.threshold:g}")
    threshold = args.threshold / 100
    if args.floor < 0:
        raise UsageError(f"--floor must be at least 0; got {args.floor}")
    floor = args.floor / 100
    pairs = diff.pair_runs(a, b, threshold, floor)
    if not any(p.a is not None and p.b is not None for p in pairs):
        ops = lambda d: ", ".join(sorted({m["op"] for m in d["measurements"]})) or "none"  # noqa: E731
        say(f"nothing to pair: {args.a} measured {ops(a)}, {args.b} measured {ops(b)}; every case is only in "
            f"one of them")
        return 2
    print(diff.terminal(a, b, pairs, threshold))
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(diff.markdown(args.a, args.b, a, b, pairs, threshold, floor))
        say(f"wrote {args.md}")
    return 1 if diff.regressions(pairs, threshold) else 0


def cmd_repeats(args) -> int:
    from study import repeats

    for target in args.targets:
        if not target.exists():
            raise UsageError(f"{target}: no such file or folder")
    paths = repeats.paths_of(args.targets)
    if not paths:
        raise UsageError(f"no results file under {', '.join(map(str, args.targets))}")
    try:
        found = repeats.runs(paths)
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(repeats.markdown(found, relative_to=args.md.parent.resolve()))
        say(f"wrote {args.md}")
    else:
        print(repeats.markdown(found))
    return 0


def cmd_merge(args) -> int:
    if any(args.out.resolve() == Path(f).resolve() for f in args.files):
        raise UsageError(f"--out {args.out} is one of the files to merge: it would be overwritten; write the "
                         "merged file elsewhere")
    try:
        doc = shards.merge(args.files, allow_mixed=args.allow_mixed)
    except (shards.ShardError, OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    results.write(args.out, doc)
    md = pages.write_page(doc, args.out)
    say(f"merged {len(doc['measurements'])} measurements from {len(args.files)} files into {args.out} and {md}"
        + (" (mixed environments: see the report)" if doc["environment"].get("mixed") else ""))
    return 0


def cmd_index(args) -> int:
    from study import index
    from study.paths import ROOT

    reports = ROOT / "reports"
    folders = args.folders or (sorted(p for p in reports.iterdir() if p.is_dir()) if reports.is_dir() else [])
    if not folders:
        raise UsageError(f"no reports folder to index: {reports} holds none; name one")
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder")
    if args.minutes is not None and (not args.commands or args.minutes <= 0):
        raise UsageError("--minutes takes a positive number of GPU minutes, with --commands")
    for folder in folders:
        print(index.commands(folder, args.minutes) if args.commands else f"wrote {index.write(folder)}",
              end="" if args.commands else "\n")
    return 0


def cmd_env(args) -> int:
    env = results.machine_environment()
    if args.json:
        print(json.dumps(env, indent=1))
    else:
        print(tabulate([[k, "—" if v is None else v] for k, v in results.flatten(env)], tablefmt="plain"))
    return 0


COMMANDS = {"list": cmd_list, "compare": cmd_compare, "sweep": cmd_sweep, "align": cmd_align,
            "cublas-study": cmd_cublas_study, "report": cmd_report, "ceilings": cmd_ceilings,
            "validate": cmd_validate, "diff": cmd_diff, "repeats": cmd_repeats, "merge": cmd_merge,
            "rerun": cmd_rerun, "index": cmd_index, "env": cmd_env, "sanitize": cmd_sanitize, "profile": cmd_profile}
