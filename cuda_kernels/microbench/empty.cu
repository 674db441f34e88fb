// Launch overhead: a kernel that does nothing. Its event-timed duration is the floor under
// every measurement; a kernel within 2x of it is reported as launch-bound.
// Not a rung: measured by `python -m study ceilings` and once at the start of each compare.
// config: THREADS=32
#include "common.cuh"

extern "C" __global__ void empty_kernel() {}
