"""The page of a results file, with what the report package is handed rather than reads: each op's
report sections (declared by its problem, :func:`study.catalog.report_sections`) and the sanitizer's
marks found beside the page (:func:`study.sanitize.marks_beside`). A sanitize run's, a sweep's or an align
run's file gets its own page (a sweep's and an align run's with CSV, heatmaps or line plot); every other file the
comparison report.
"""

from __future__ import annotations

from pathlib import Path

from study import align, catalog, report, results, sanitize, sweep


def write_report(doc: dict, md_path: Path) -> Path:
    """The comparison report of ``doc`` at ``md_path``, figures beside it."""
    md_path = Path(md_path)
    return report.write_report(doc, md_path, sections=catalog.report_sections(),
                               marks=sanitize.marks_beside(md_path.parent))


def read_record(path: Path) -> dict:
    """A file ``write_page`` renders: a sanitize run's as it is, any other as a results file (checked, upgraded)."""
    raw = results.read_json(path)
    return raw if sanitize.is_sanitize(raw) else results.load(path, raw)


def write_page(doc: dict, json_path: Path, md_path: Path | None = None) -> Path:
    """The page of a results file: a sanitize run's; a sweep's or an align run's own (CSV, figures and page beside
    the file) unless ``md_path`` asks for the comparison report, which every other file gets."""
    if sanitize.is_sanitize(doc):
        md_path = Path(md_path or results.beside(json_path, ".md"))
        md_path.write_text(sanitize.markdown(doc))
        return md_path
    if md_path is None:
        for is_kind, kind in ((sweep.is_sweep, sweep), (align.is_align, align)):
            if is_kind(doc):
                return kind.write_outputs(doc, Path(json_path))[1]
    return write_report(doc, md_path or results.beside(json_path, ".md"))
