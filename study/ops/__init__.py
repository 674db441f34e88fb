"""One module per problem; importing this package registers every ladder
(:func:`study.catalog.load` is the one place that imports it), in this order, which is the
order of ``list`` and of the reports: the SGEMM ladder first, the ops built on it after (bgemm
builds on hgemm too)."""

from study.ops import sgemm, sgemv, hgemm, bgemm, softmax, gemm_bias_relu  # noqa: F401, I001
