"""Triton twins of the softmax ladder (docs/ladders/softmax.md).

Plain kernels and configs: no import of the framework. What Triton does not let a twin say is
how a reduction maps to threads — ``tl.max`` and ``tl.sum`` choose shuffles and shared memory
themselves — so the twins of v1 (shared-memory trees) and v2 (shuffles, 16-byte loads) are one
kernel, three passes over BLOCK columns at a time, told apart by BLOCK and warps as the CUDA
rungs are by what one thread moves per step. The element type of Y is the storage type; the
math is FP32.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

# v4's twin keeps a row in one block (its length rounded up to a power of two) up to this many
# bytes: the CUDA rung's default budget, 1024 threads × 8 vectors of 16 bytes — 32768 FP32 or
# 65536 FP16/BF16 elements.
MAX_WHOLE_BYTES = 1024 * 8 * 16
# ... and up to this many values: a program of 32 warps holds 32 a thread. Beyond, a row that fits the bytes
# (FP16/BF16 rows of 32769–65536 elements, WHOLE 65536) compiles to 64 registers and a 232-byte stack (Triton 3.9,
# sm_90, 32 warps: spilled in the loop; 32768 values: 53 registers, no stack), and the twin ran 0.42–0.45× the
# CUDA rung at 1024 and 8192 rows of 50257 BF16 (reports/h200/suites/softmax-vocab.md, c83): such a row takes
# v3's two passes in its one program instead, the second read served by L2 (v4's and v5's twins; v6's splits it
# over programs that exchange its statistics, on a GPU).
MAX_WHOLE_VALUES = 32 * 32 * 32
# the most times v6's exchanging twin polls its row's words before it gives up (NaN out: _exchange_slice)
EXCHANGE_POLLS = tl.constexpr(1 << 24)


@triton.jit
def softmax_rows(x_ptr, y_ptr, M, N, ROWS: tl.constexpr):
    """v0: ROWS rows per program, one a lane, walked one column at a time, three times."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    ok = rows < M
    base = rows.to(tl.int64) * N
    m = tl.full([ROWS], float("-inf"), tl.float32)
    for j in range(0, N):
        m = tl.maximum(m, tl.load(x_ptr + base + j, mask=ok, other=0.0).to(tl.float32))
    # Compensated as the CUDA rung's: a plain serial sum drifts past the FP32 gate at N ≈ 2^18.
    d = tl.zeros([ROWS], dtype=tl.float32)
    lost = tl.zeros([ROWS], dtype=tl.float32)
    for j in range(0, N):
        term = tl.exp(tl.load(x_ptr + base + j, mask=ok, other=0.0).to(tl.float32) - m) - lost
        total = d + term
        lost = (total - d) - term
        d = total
    for j in range(0, N):
        x = tl.load(x_ptr + base + j, mask=ok, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + j, (tl.exp(x - m) / d).to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def softmax_passes(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    """v1/v2: one program per row, BLOCK columns a step: maximum, sum, then output."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    cols = tl.arange(0, BLOCK)
    top = tl.full([BLOCK], float("-inf"), tl.float32)
    for c0 in range(0, N, BLOCK):
        top = tl.maximum(top, tl.load(x_row + c0 + cols, mask=c0 + cols < N, other=float("-inf")).to(tl.float32))
    m = tl.max(top, axis=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        x = tl.load(x_row + c0 + cols, mask=c0 + cols < N, other=float("-inf")).to(tl.float32)
        acc += tl.exp(x - m)
    inv = 1.0 / tl.sum(acc, axis=0)
    _normalize(x_row, y_row, N, m, inv, BLOCK)


@triton.jit
def _normalize(x_row, y_row, N, m, inv, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    for c0 in range(0, N, BLOCK):
        x = tl.load(x_row + c0 + cols, mask=c0 + cols < N, other=float("-inf")).to(tl.float32)
        tl.store(y_row + c0 + cols, (tl.exp(x - m) * inv).to(y_row.dtype.element_ty), mask=c0 + cols < N)


@triton.jit
def _online_stats(x_row, N, BLOCK: tl.constexpr):
    """(maximum, sum of exp(x − maximum)) of a row in one read: per lane a running maximum and a
    sum rescaled when it grows, merged across lanes at the end; −inf adds nothing."""
    cols = tl.arange(0, BLOCK)
    run_m = tl.full([BLOCK], float("-inf"), tl.float32)
    run_d = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        x = tl.load(x_row + c0 + cols, mask=c0 + cols < N, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(run_m, x)
        live = new_m != float("-inf")
        safe = tl.where(live, new_m, 0.0)
        # a lane still at −inf keeps its sum (0, or NaN once it met a NaN, which must reach the output)
        run_d = tl.where(live, run_d * tl.exp(run_m - safe) + tl.exp(x - safe), run_d + tl.where(x == x, 0.0, x))
        run_m = new_m
    m = tl.max(run_m, axis=0)
    d = tl.sum(tl.where(run_m != float("-inf"), run_d * tl.exp(run_m - m), run_d), axis=0)
    return m, d


@triton.jit
def softmax_online(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    """v3: the statistics in one read (online), then the normalising pass."""
    row = tl.program_id(0).to(tl.int64)
    m, d = _online_stats(x_ptr + row * N, N, BLOCK)
    _normalize(x_ptr + row * N, y_ptr + row * N, N, m, 1.0 / d, BLOCK)


@triton.jit
def _whole_row(x_row, y_row, N, WHOLE: tl.constexpr):
    """The row whole in registers (WHOLE ≥ N, a power of two): read once, written once (v4's and v6's twins)."""
    cols = tl.arange(0, WHOLE)
    x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_row + cols, (e / tl.sum(e, axis=0)).to(y_row.dtype.element_ty), mask=cols < N)


@triton.jit
def softmax_whole(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr, WHOLE: tl.constexpr, FITS: tl.constexpr):
    """v4: the whole row (WHOLE ≥ N, a power of two) in registers, read once, when it FITS;
    otherwise v3's two passes over BLOCK columns at a time."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    if FITS:
        _whole_row(x_row, y_row, N, WHOLE)
    else:
        m, d = _online_stats(x_row, N, BLOCK)
        _normalize(x_row, y_row, N, m, 1.0 / d, BLOCK)


@triton.jit
def softmax_warp_rows(x_ptr, y_ptr, M, N, ROWS: tl.constexpr, BLOCK: tl.constexpr, WHOLE: tl.constexpr,
                      FITS: tl.constexpr):
    """v5: ROWS whole rows (WHOLE ≥ N, a power of two) a program, as a ROWS × WHOLE tile reduced along
    its rows, when a row FITS in a warp's registers (MAX_WARP_ROW_BYTES); the CUDA rung's warps are
    ``num_warps`` = ROWS here, and Triton lays the tile out over them itself. Otherwise each row
    takes v3's two passes over BLOCK columns at a time."""
    first = tl.program_id(0).to(tl.int64) * ROWS
    if FITS:
        rows = first + tl.arange(0, ROWS)
        cols = tl.arange(0, WHOLE)
        inside = (rows[:, None] < M) & (cols[None, :] < N)
        offsets = rows[:, None] * N + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=inside, other=float("-inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=1)[:, None])
        tl.store(y_ptr + offsets, (e / tl.sum(e, axis=1)[:, None]).to(y_ptr.dtype.element_ty), mask=inside)
    else:
        for r in range(ROWS):
            if first + r < M:
                x_row = x_ptr + (first + r) * N
                y_row = y_ptr + (first + r) * N
                m, d = _online_stats(x_row, N, BLOCK)
                _normalize(x_row, y_row, N, m, 1.0 / d, BLOCK)



@triton.jit
def softmax_split_stats(x_ptr, y_ptr, stats_ptr, sync_ptr, M, N, SLICE, SLICES, BLOCK: tl.constexpr,
                        WHOLE: tl.constexpr, ONE: tl.constexpr, FITS: tl.constexpr, EXCHANGE: tl.constexpr,
                        PAIRS: tl.constexpr, FAST: tl.constexpr = False):
    """v6. A row the launch gives one program (ONE; WHOLE ≥ N, a power of two): v4's twin, the whole row in
    registers, read once, written — where it FITS (the launch's test: at most MAX_WHOLE_VALUES values), else
    v3's two passes in that program. A longer row, where the launch can EXCHANGE: SLICES programs a row, each
    holding SLICE columns in its registers (WHOLE ≥ SLICE; PAIRS ≥ SLICES, powers of two), meeting through L2
    (:func:`_exchange_slice`): one read and one write an element, as the CUDA rung's cluster. Otherwise (the
    interpreter, which runs programs one after another, or more slices than EXCHANGE_SLICES or SMs) program (row, s)
    writes the online (maximum, sum of exp(x − maximum)) pair of columns [s·SLICE, (s+1)·SLICE) to ``stats`` (FP32,
    M × SLICES × 2) and ``softmax_split_normalize``, a second launch, reads the row again.

    What Triton cannot say of the CUDA rung: a cluster of programs scheduled together and reading each
    other's shared memory (Triton 3.6 has no DSMEM, and its num_ctas is for its own layouts, not for a
    kernel's exchange). The exchange says it through global atomics instead, a few hundred nanoseconds
    of L2 round trips where DSMEM takes tens."""
    if ONE:
        row = tl.program_id(0).to(tl.int64)
        if FITS:
            _whole_row(x_ptr + row * N, y_ptr + row * N, N, WHOLE)
        else:  # more values than the program's registers hold (MAX_WHOLE_VALUES): v3's two passes
            m, d = _online_stats(x_ptr + row * N, N, BLOCK)
            _normalize(x_ptr + row * N, y_ptr + row * N, N, m, 1.0 / d, BLOCK)
    elif EXCHANGE:
        _exchange_slice(x_ptr, y_ptr, stats_ptr, sync_ptr, M, N, SLICE, SLICES, WHOLE, PAIRS, FAST)
    else:
        row = tl.program_id(0).to(tl.int64)
        s = tl.program_id(1)
        start = s * SLICE
        m, d = _online_stats(x_ptr + row * N + start, tl.minimum(N - start, SLICE), BLOCK)
        tl.store(stats_ptr + (row * SLICES + s) * 2, m)
        tl.store(stats_ptr + (row * SLICES + s) * 2 + 1, d)


@triton.jit
def _exchange_slice(x_ptr, y_ptr, stats_ptr, sync_ptr, M, N, SLICE, SLICES, WHOLE: tl.constexpr,
                    PAIRS: tl.constexpr, FAST: tl.constexpr):
    """One slice of a row, in registers from its read to its write, the row's maximum and sum exchanged
    through L2. ``sync`` (int64, zeroed once): a ticket counter, never reset; ``stats`` (int64, zeroed once,
    M × SLICES × 2): each slice's maximum and sum, each a word of its FP32 bits under a tag that names the launch.

    The work goes by ticket, taken as a program starts, not by program id: a row's slices are consecutive
    tickets, so every row before the newest one has all its programs running, and a program waiting on its
    row waits only on programs that run or can start as the earlier rows finish (CUB's decoupled look-back
    takes its tiles so for the same reason: the hardware promises no order of blocks). A launch takes M × SLICES
    tickets, so a ticket's quotient by that is the launch's epoch, its remainder the program's (row, slice), and no
    counter needs resetting. A pair goes out as two 64-bit words, (tag, value), by relaxed atomic exchange, whose
    result nothing waits for; a row's programs poll the row's words (volatile, past L1) until each holds this
    launch's tag — the value in one word with it, so no fence orders the pair before a flag. Every launch writes
    every word, so a word holds this launch's tag or the last one's (or 0, zeroed), and consecutive tags differ;
    ``sync`` and ``stats`` go together (a counter set back alone would repeat a tag the words already carry). The
    first form (to 296cb8a: a count per row raised acquire-release after the pair, polled, the pairs read, and two
    counters reset at the end) had six L2 round trips in each program's path by its code, where this has two at
    best: the ticket and one poll (all of a program's warps poll, each for itself). A launch needs the GPU to
    itself, on one stream: a row's programs all resident (at most one an SM is assumed), no other exchanging launch
    of the same ``sync`` at once (their tickets would mix), no launch of the next before this one ends (no
    programmatic dependent launch)."""
    ticket = tl.atomic_add(sync_ptr, 1, sem="relaxed")  # orders nothing: it only hands out the work
    tickets = tl.cast(M, tl.int64) * SLICES  # tl.cast: Triton passes an M of 1 as a constant, which has no .to
    epoch = ticket // tickets
    local = (ticket - epoch * tickets).to(tl.int32)
    row = local // SLICES
    s = local % SLICES
    tag = (epoch % 0x7FFFFFFF + 1) << 32  # 1 to 2^31 − 1: never a zeroed word's 0, never the last launch's
    base, body, head, on_head, tail, on_tail = _aligned_slice(row, s, N, SLICE, WHOLE)
    cols = tl.arange(0, WHOLE)
    # the slice stays in X's type from its read to its write (FP16/BF16: two a register, 64 values a thread in 64
    # registers), each use converting afresh: a 16-bit slice's conversions go through tl.where on a condition the
    # compiler cannot fold, so that it does not merge them into one FP32 copy held across the exchange (344 bytes
    # spilled at BF16's 8 × 16384, against 88 so, 80 with the fast exponent); an FP32 slice has no narrower copy to
    # keep, nor the selects
    raw = tl.load(x_ptr + base + cols, mask=body, other=float("-inf"))
    xb = raw.to(tl.float32)
    xh = tl.load(x_ptr + head, mask=on_head, other=float("-inf")).to(tl.float32)
    xt = tl.load(x_ptr + tail, mask=on_tail, other=float("-inf")).to(tl.float32)
    m = tl.maximum(tl.max(xb, axis=0), tl.maximum(tl.max(xh, axis=0), tl.max(xt, axis=0)))
    # a slice of −inf alone: sum 0 (exp(−inf − 0)), or NaN where it holds one, which must reach the output
    shift = tl.where(m != float("-inf"), m, 0.0)
    if raw.dtype != tl.float32:
        xb = tl.where(shift == shift, raw, 0).to(tl.float32)  # a NaN shift makes NaN of the sum either way
    d = tl.sum(_exp(xb - shift, FAST), axis=0) + tl.sum(tl.exp(xh - shift), axis=0) + tl.sum(tl.exp(xt - shift), axis=0)
    first = stats_ptr + row.to(tl.int64) * SLICES * 2
    tl.atomic_xchg(first + s * 2, tag | _bits(m), sem="relaxed")
    tl.atomic_xchg(first + s * 2 + 1, tag | _bits(d), sem="relaxed")
    q = tl.arange(0, PAIRS)
    live = q < SLICES
    wm = tl.load(first + q * 2, mask=live, other=0, volatile=True)
    wd = tl.load(first + q * 2 + 1, mask=live, other=0, volatile=True)
    # bounded: a row whose peers never come (a launch that broke the rules above) ends in NaN, which the gate
    # reports, not in a GPU that hangs; 2^24 polls of an L2 round trip each are seconds, no row waits so long
    polls = 0
    while (_untagged(wm, wd, live, tag) > 0) & (polls < EXCHANGE_POLLS):
        wm = tl.load(first + q * 2, mask=live, other=0, volatile=True)
        wd = tl.load(first + q * 2 + 1, mask=live, other=0, volatile=True)
        polls += 1
    ms = tl.where(live, wm.to(tl.int32).to(tl.float32, bitcast=True), float("-inf"))
    ds = tl.where(live, wd.to(tl.int32).to(tl.float32, bitcast=True), 0.0)
    top = tl.max(ms, axis=0)
    total = tl.sum(tl.where(ms != float("-inf"), ds * tl.exp(ms - top), ds), axis=0)
    done = _untagged(wm, wd, live, tag) == 0
    scale = tl.where(done, 1.0 / total, float("nan"))
    if raw.dtype != tl.float32:
        xb = tl.where(done, raw, 0).to(tl.float32)  # not done: scale is NaN either way
    tl.store(y_ptr + base + cols, (_exp(xb - top, FAST) * scale).to(y_ptr.dtype.element_ty), mask=body)
    tl.store(y_ptr + head, (tl.exp(xh - top) * scale).to(y_ptr.dtype.element_ty), mask=on_head)
    tl.store(y_ptr + tail, (tl.exp(xt - top) * scale).to(y_ptr.dtype.element_ty), mask=on_tail)


@triton.jit
def _exp(x, FAST: tl.constexpr):
    """exp(x); FAST: libdevice's fast_expf (ex2.approx.ftz of x · log2 e, CUDA's __expf, which the CUDA rungs take),
    where tl.exp keeps the approximation's denormal fix-up around every MUFU: 1,248 → 1,056 SASS instructions a thread
    at FP32's 4 × 4096, +3–14 % on the H200 (reports/h200/experiments/softmax-twin-fastexp-ecdd5f2). A flag, not
    always on: Triton's interpreter has no fast_expf, and its tests run the exchange with FAST off."""
    if FAST:
        return libdevice.fast_expf(x)
    else:
        return tl.exp(x)


@triton.jit
def _untagged(wm, wd, live, tag):
    """How many of a row's live words do not yet carry ``tag`` (in their high 32 bits)."""
    return tl.sum((live & (((wm ^ tag) >> 32 != 0) | ((wd ^ tag) >> 32 != 0))).to(tl.int32), axis=0)


@triton.jit
def _bits(value):
    """An FP32 scalar's bits in the low half of an int64 (zero-extended, so a tag or-ed above them stays whole)."""
    return value.to(tl.uint32, bitcast=True).to(tl.int64)


@triton.jit
def _aligned_slice(row, s, N, SLICE, WHOLE: tl.constexpr):
    """Where slice ``s`` of ``row`` lies (element offsets from X's start, Y's the same), its slices laid on
    16-element boundaries so that its loads and stores are 16-byte vectors whatever N is: slice s covers
    [A + s·SLICE, A + (s+1)·SLICE) ∩ the row, A the row's start rounded down to 16 elements (SLICE a multiple of
    16; the launch plans the slices over N + 15 columns where N is no multiple of 16). Returned: the slice's first
    offset (a multiple of 16; the caller adds tl.arange(0, WHOLE), so no WHOLE 64-bit offsets stay live from the
    read to the write: 64 registers a thread at 16 warps, 107 with them) and the body's mask over those WHOLE
    columns, true on whole 16-element blocks inside the row (constant over a vector, which Triton needs to
    vectorise a masked access); then the row's two part blocks, 16 offsets and a mask each: the head (where the row
    starts, in slice 0) and the tail (where it ends, in the slice that holds it; none where that is the head's).
    At N = 50257 BF16 the unpeeled slices ran at half the aligned rows' rate (c113, H100: 834 GB/s against 1,750 at
    128256): every element a 2-byte access."""
    start = row.to(tl.int64) * N
    end = start + N
    first = start - start % 16
    base = tl.multiple_of(first + s * SLICE, 16)
    cols = tl.arange(0, WHOLE)
    block = cols // 16
    lo = (tl.maximum(start - base, 0) + 15) // 16  # the first whole block at or after the row's start
    hi = (end - base) // 16  # past the last whole block before its end (≤ 0: none, however it rounds)
    body = (block >= lo) & (block < hi) & (cols < SLICE)
    # each part a range of columns, empty where this slice has none (scalar conditions, not masks and-ed with
    # them: Triton 3.9's interpreter turns a mask and-ed with a scalar condition into integers)
    lane = tl.arange(0, 16)
    head = first + lane
    head_end = tl.where((s == 0) & (start % 16 != 0), tl.minimum(end, first + 16), start)
    last = end - end % 16
    tail = last + lane
    tail_end = tl.where(((last - first) // SLICE == s) & (end % 16 != 0) & ((last != first) | (start % 16 == 0)),
                        end, start)
    return base, body, head, (head >= start) & (head < head_end), tail, (tail >= start) & (tail < tail_end)


@triton.jit
def softmax_split_normalize(x_ptr, y_ptr, stats_ptr, M, N, SLICE, SLICES, BLOCK: tl.constexpr,
                            PAIRS: tl.constexpr):
    """v6, second launch: program (row, s) merges its row's SLICES (≤ PAIRS, a power of two) pairs as
    the online pair merges (a slice of −inf alone adds its sum as it is: 0, or NaN), then reads its
    slice again and writes exp(x − maximum) / sum."""
    row = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1)
    q = tl.arange(0, PAIRS)
    ms = tl.load(stats_ptr + (row * SLICES + q) * 2, mask=q < SLICES, other=float("-inf"))
    ds = tl.load(stats_ptr + (row * SLICES + q) * 2 + 1, mask=q < SLICES, other=0.0)
    m = tl.max(ms, axis=0)
    d = tl.sum(tl.where(ms != float("-inf"), ds * tl.exp(ms - m), ds), axis=0)
    start = s * SLICE
    _normalize(x_ptr + row * N + start, y_ptr + row * N + start, tl.minimum(N - start, SLICE), m, 1.0 / d, BLOCK)


@triton.jit
def softmax_ring(x_ptr, y_ptr, M, N, WHOLE: tl.constexpr, STAGES: tl.constexpr, PER_SM: tl.constexpr):
    """v7: a persistent grid (PER_SM programs an SM, none more than the rows: the launch's), program p taking
    rows p, p + programs, …, each whole (WHOLE ≥ N, a power of two) in registers, read once and written
    once; the loop is software-pipelined over STAGES rows
    (``tl.range``'s num_stages), so that Triton may issue the next rows' loads (into shared memory) while a
    row is reduced and written — the CUDA rung's ring, as far as Triton says it.

    What Triton cannot say of the CUDA rung: a bulk copy of a whole row by the copy engine counted on an
    mbarrier (Triton decides itself whether and how a loop's loads are pipelined, and ncu is the judge of
    what it did), a row split over a cluster of 2–8 blocks (rows beyond one program's registers,
    MAX_WHOLE_VALUES, are out of the twin's scope: v6's twin takes them), and v8's ring of pieces refilled by a
    loader warp as the write pass leaves them: this is v8's twin too."""
    first = tl.program_id(0).to(tl.int64)
    programs = tl.num_programs(0)
    for k in tl.range(0, tl.cdiv(M - first, programs), num_stages=STAGES):
        offset = (first + k * programs) * N
        _whole_row(x_ptr + offset, y_ptr + offset, N, WHOLE)


# CUDA v0: 256 threads, one row each.
V0_THREAD_PER_ROW = dict(ROWS=256, num_warps=8, num_stages=1)
ROWS_SPACE = [dict(ROWS=r, num_warps=r // 32, num_stages=1) for r in (64, 128, 256, 512)]
# CUDA v1: 256 threads, one element each per step.
V1_BLOCK_PER_ROW = dict(BLOCK=256, num_warps=8, num_stages=1)
# CUDA v2 and v3: 256 threads, one 16-byte vector each per step (4 FP32 elements).
V2_SHUFFLE_VECTOR = dict(BLOCK=1024, num_warps=8, num_stages=1)
V3_ONLINE = dict(BLOCK=1024, num_warps=8, num_stages=1)
BLOCK_SPACE = [dict(BLOCK=b, num_warps=w, num_stages=1)
               for b, w in ((256, 8), (512, 4), (1024, 4), (1024, 8), (2048, 8), (4096, 8), (4096, 16), (8192, 32))]
# CUDA v4: 1024 threads; BLOCK is the fallback's step for rows beyond MAX_WHOLE_BYTES.
V4_ON_CHIP = dict(BLOCK=4096, num_warps=32, num_stages=1)
# At least 8 warps: a whole row of 32768 values in 4 warps would be 256 a thread (spilled).
WHOLE_SPACE = [dict(BLOCK=4096, num_warps=w, num_stages=1) for w in (8, 16, 32)]
# CUDA v5: 256 threads, a warp (and a row) each; rows fit up to 32 lanes × 16 slots × 16 bytes (ON_CHIP=16).
MAX_WARP_ROW_BYTES = 32 * 16 * 16
V5_WARP_PER_ROW = dict(ROWS=8, BLOCK=1024, num_warps=8, num_stages=1)
WARP_ROWS_SPACE = [dict(ROWS=r, BLOCK=1024, num_warps=r, num_stages=1) for r in (4, 8, 16)]
# CUDA v6: 1024 threads a block (the declared 8 × 1024 × 8). A row goes whole to one program while it
# takes at most MAX_WHOLE_BYTES (v4's twin), else to the fewest slices of at most that many bytes, at
# most MAX_SLICES (the CUDA rung's fewest blocks of 1024 × 8 vectors, up to a cluster of 8); BLOCK is
# the step of both launches over a slice.
MAX_SLICES = 8
# ... unless the twin can exchange (on a GPU): slices of a row, each in the registers of a program, up to
# EXCHANGE_SLICES a row (rows of 2^20; a row's programs must all be resident at once), at one of EXCHANGE_POINTS
# (EXCHANGE_POINTS_16BIT for FP16 and BF16) — values a slice at most, warps: the launch's plan, whatever the config's
# num_warps, which is for a row whole in a program. FP32: 32 values a thread in 64 registers (Triton 3.9, ptxas for
# sm_90a), no spill; 4 warps hold eight programs an SM, so that some load while others wait for their rows (16 warps
# held two, 32 one). 16-bit: 64 values a thread, kept in their own width from the read to the write (two a register;
# _exchange_slice says how), 80 bytes spilled a thread around the sum (Triton 3.9's ptxas; 88 before the fast
# exponent), 4 programs an SM at 8 warps. The first point,
# unless the second fills its programs (columns ÷ the slices' padded widths) by EXCHANGE_FILL more, or the first
# needs more than EXCHANGE_SLICES. experiments/softmax_twin_exchange.py, H100, GB/s, one run each
# (reports/h100-80gb-hbm3/experiments/softmax-twin-points-ce2ab88/): FP32 4 × 4096 against 16 × 16384 — 1024×262144
# 2,750 / 2,283, 64×262144 2,363 / 1,974, 64×151936 2,235 / 1,968, 8×262144 1,135 / 875, 8192×50257 2,908 against
# 2,837 at 8 × 8192, 1024×128256 2,670 / 2,827 (the one loss); BF16 8 × 16384 in its width against 16 × 16384
# converted (the points before) — 1024×262144 2,145 / 1,307, 64×262144 1,717 / 1,122, 1024×128256 2,116; 4 × 4096
# where 8 × 16384 fills its programs worst: 1024×50257 2,061 / 1,932, 8192×50257 2,185 / 2,053.
EXCHANGE_POINTS = ((4096, 4), (16384, 16))
EXCHANGE_POINTS_16BIT = ((16384, 8), (4096, 4))
EXCHANGE_FILL = 1.10
EXCHANGE_SLICES = 64
# ... and at most this many registers a thread (the launch's maxnreg), so that 4 warps hold eight programs an SM and
# 8 warps four. Uncapped, ptxas (Triton 3.9, sm_90) took 72–73 for the tagged
# exchange at 8 warps with 8 pairs — FP32 rows of 40001 and 50257, three programs an SM — and 64, no spill, capped.
# Measured (H100, reports/h100-80gb-hbm3/experiments/softmax-twin-tagged-c3bd8bc/): 64 ahead of no cap and of 96 at
# every case timed (no cap: FP32 64 × 262144 1,490 GB/s against 1,969; 96: BF16 1024 × 262144 900 against 1,312).
EXCHANGE_REGISTERS = 64
V6_CLUSTER_ROWS = dict(BLOCK=4096, num_warps=32, num_stages=1)
SPLIT_ROWS_SPACE = [dict(BLOCK=b, num_warps=w, num_stages=1) for b, w in ((4096, 8), (4096, 16), (4096, 32), (8192, 32))]
# CUDA v7: 512 threads, one block an SM for long rows; PER_SM programs an SM walk the rows, STAGES rows in flight.
V7_TMA_RING = dict(PER_SM=1, STAGES=2, num_warps=16, num_stages=1)
RING_SPACE = [dict(PER_SM=p, STAGES=st, num_warps=w, num_stages=1)
              for p, st, w in ((1, 2, 16), (1, 3, 16), (2, 2, 8), (2, 2, 16), (1, 2, 32))]
