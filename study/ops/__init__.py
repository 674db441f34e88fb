"""One module per problem; importing this package registers every ladder."""

from study.ops import sgemm  # noqa: F401
