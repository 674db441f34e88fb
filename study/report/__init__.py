"""Markdown and figures from a results document alone (no GPU, no registry): pure functions from
results to text, the figures their one side effect (``figures/`` beside the page). Every figure shown
is derived in :mod:`study.metrics`; this package only lays them out, in the unit of each op (GFLOPS
or GB/s).

- :mod:`~study.report.labels`: names and formatters every page shares;
- :mod:`~study.report.tables`: the ladder, detail, device, best-rung and equal-clock tables;
- :mod:`~study.report.figures`: the ladder, best-against-the-reference and roofline figures;
- :mod:`~study.report.page`: the page, with the sections an op declares (:class:`~study.report.page.Section`:
  :mod:`~study.report.fusion` for gemm_bias_relu, :mod:`~study.report.seed_ladder` for hgemm) and the
  sanitizer's marks, both handed over by the caller (:mod:`study.pages`).
"""

from study.report.figures import WRAP, best_figure, figure, roofline  # noqa: F401
from study.report.labels import BACKEND_LABEL, EMULATION, flags, reason_line, shape_label  # noqa: F401
from study.report.page import Section, render, with_sanitizer_marks, write_report  # noqa: F401
from study.report.tables import best_by_shape, best_table, gpus_used  # noqa: F401
