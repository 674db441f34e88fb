"""One module per problem; importing this package registers every ladder
(:func:`study.registry.load` is the one place that imports it)."""

from study.ops import sgemm, sgemv  # noqa: F401
