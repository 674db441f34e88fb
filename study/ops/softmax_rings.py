"""softmax's ring rungs, v7 to v10: rows streamed by TMA bulk copies into shared memory by a persistent grid
of blocks, clusters (v7 to v9) or teams (v10) (docs/ladders/softmax.md, v7 to v10). Their plans (a row's share, the
ring), the clusters the GPU runs at once, and their launchers; study/ops/softmax.py registers them."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from study.backends import cuda
from study.backends.launch import PointUnsupported, Unsupported
from study.paths import CUDA_DIR
from study.problem import DEFAULT_SMS, CudaLaunch, CudaLauncher, cdiv, out_of_scope, sm_count

V7_PATH = CUDA_DIR / "softmax" / "07_tma_ring.cu"
MAX_RING_STAGES = 4                 # the kernel's static_assert
RING_CLUSTERS = (1, 2, 4, 8)        # blocks a row: the portable cluster sizes
RING_BYTES = 227 * 1024 - 1024      # a block's 227 KiB of shared memory (sm_90) less its static barriers and scratch
SM_SHARED = 228 * 1024              # an SM's shared memory, of which ...
BLOCK_RESERVED = 2 * 1024           # ... each resident block takes 1 KiB for the system and up to 1 KiB of statics
WIDE_CLUSTER = 8                    # blocks a row once one or two blocks' rings cannot hold it twice ...
WIDE_THREADS = 256                  # ... with two stages and 256 threads a block, ...
WIDE_VALUES = 96                    # ... while a block's share is at most this many values a thread


@dataclasses.dataclass(frozen=True)
class RingPlan:
    """v7's plan for a row: blocks a row (``cluster``), rows in each block's ring (``stages``), the
    16-byte body vectors of a row a block holds in a stage (``chunk``), and threads a block where the plan
    sets them (``threads``; None: the config's)."""

    cluster: int
    stages: int
    chunk: int
    threads: int | None = None

    @property
    def ring_bytes(self) -> int:
        return self.stages * self.chunk * 16


def tma_ring_plan(n: int, element_bytes: int, params) -> RingPlan | str:
    """v7's ring for rows of ``n`` elements, or why none holds them. The body of a row is at most n·bytes / 16
    vectors (a row off 16 bytes has a head and a tail of single elements besides). FIT=1 (the declared
    config): one block a row, else a pair, while their rings hold two stages of their shares of the body in
    :data:`RING_BYTES`, with as many stages as fit, up to :data:`MAX_RING_STAGES`; longer rows over a cluster of
    8 with two stages of 256 threads while a share is at most :data:`WIDE_VALUES` values a thread, else the
    config's threads and as many stages as fit. Why (c102 at dab7d18, the space timed at each shape): the
    8-block, 2-stage, 256-thread point (at 1024×128256 BF16, 45 clusters at once by the driver's count, 360
    blocks) beat the fewest blocks a row (4, one block an SM: 30 clusters, 120 blocks) by 25 % at 64×151936 BF16
    and 2.6 % at 1024×128256 BF16, and 8 × 512 × 3 by 4.5 % at 1024×128256 FP32 and 1.5 % at 8192×128256 FP32,
    but lost 3 % to 512 threads and 3 stages at 1024×262144 BF16 (128 values a thread); in the vocab suite (c103
    at f84c808) it also cost 1024×151936 BF16 3 % against 4 × 512 × 3. Otherwise the config's CLUSTER and
    STAGES, when they fit."""
    body = max(1, n * element_bytes // 16)
    if params.get("FIT"):
        for cluster in RING_CLUSTERS[:2]:
            chunk = cdiv(body, cluster)
            stages = min(MAX_RING_STAGES, RING_BYTES // (chunk * 16))
            if stages >= 2:
                return RingPlan(cluster, stages, chunk)
        chunk = cdiv(body, WIDE_CLUSTER)
        if 2 * chunk * 16 <= RING_BYTES:
            if chunk * 16 // element_bytes <= WIDE_VALUES * WIDE_THREADS:
                return RingPlan(WIDE_CLUSTER, 2, chunk, WIDE_THREADS)
            return RingPlan(WIDE_CLUSTER, min(MAX_RING_STAGES, RING_BYTES // (chunk * 16)), chunk)
        most = RING_CLUSTERS[-1]
        return out_of_scope(f"two stages of a {most}-block cluster's rings hold rows of at most "
                            f"{most * RING_BYTES // 2 // element_bytes} elements; N={n} is longer (v6 takes it)")
    plan = RingPlan(params["CLUSTER"], params["STAGES"], cdiv(body, params["CLUSTER"]))
    if plan.ring_bytes > RING_BYTES:
        return out_of_scope(f"{plan.stages} stages of {plan.chunk * 16} bytes (N={n} over {plan.cluster} block(s)) exceed "
                            f"a block's {RING_BYTES}-byte ring")
    return plan


def scope_check(plan_of):
    """A ring rung's check: why its plan (``plan_of(n, element_bytes, params)``) refuses the case, or None."""
    def check(params, shape, precision):
        plan = plan_of(shape["N"], precision.element_bytes, params)
        return plan if isinstance(plan, str) else None

    return check


def vector_path_defines(op_defines, rung: str, config, tensors, out, shape, precision) -> dict:
    """The op's defines (``op_defines``: ALIGNED, PEEL) of a ring rung's case, whose bulk copies move 16-byte
    vectors: X and Y must share their offset from 16 bytes (the vector paths), else the case is refused."""
    defines = op_defines(config, tensors, out, shape, precision)
    if not (defines["ALIGNED"] or defines["PEEL"]):
        raise Unsupported(f"{rung}'s bulk copies move 16-byte vectors: X and Y must lie at the same offset from "
                          f"16 bytes (v6 takes other rows)")
    return defines


def vector_ring_defines(op_defines, rung: str, plan_of, plan_defines):
    """The defines of a ring rung: the op's (``op_defines``: ALIGNED, PEEL), then ``plan_defines(plan)`` of the
    plan ``plan_of(n, element_bytes, config)`` gives. The bulk copies move 16-byte vectors, so X and Y must share
    their offset from 16 bytes (the vector paths); a plan refused is this point's, not the case's."""
    def defines(config, tensors, out, shape, precision):
        defines = vector_path_defines(op_defines, rung, config, tensors, out, shape, precision)
        plan = plan_of(shape["N"], precision.element_bytes, config)
        if isinstance(plan, str):
            raise PointUnsupported(plan)  # this point's ring; the fitted point's may hold the row
        return {**defines, **plan_defines(plan, defines)}

    return defines


def tma_ring_launcher(op_defines, path=V7_PATH) -> CudaLauncher:
    """v7's launcher: CLUSTER, STAGES and THREADS from :func:`tma_ring_plan`; ``path``: the kernel file it launches,
    whose occupancy sizes the grid (another version of v7, experiments/softmax_v7_versions.py)."""
    return CudaLauncher(launch=functools.partial(tma_ring_launch, path=path), check=scope_check(tma_ring_plan),
                        defines=vector_ring_defines(
        op_defines, "v7", tma_ring_plan,
        lambda plan, defines: {"CLUSTER": plan.cluster, "STAGES": plan.stages,
                               "THREADS": plan.threads or defines["THREADS"]}))


def resident_clusters(path, symbol: str, defines, cluster: int, threads: int, smem: int, sms: int,
                      per_sm: int | None = None) -> tuple[int, str]:
    """(clusters of ``cluster`` blocks of ``threads`` threads and ``smem`` bytes of dynamic shared memory the GPU
    runs at once, where the count came from), for the persistent grids of v7 and v8. One block or a pair: the SMs
    times the blocks an SM takes (shared memory and threads decide), over the cluster size — a pair always fits a
    TPC. Clusters of 4 or 8 share a GPC, so the SMs do not say it: the driver's count
    (``cuOccupancyMaxActiveClusters``), else an estimate of 16-SM GPCs (132 SMs: 8 of them), each holding
    16 / CLUSTER clusters an SM's worth of blocks. ``per_sm``: the blocks an SM takes where the caller has the
    driver's count (registers count too); else shared memory and threads decide."""
    per_sm = per_sm or max(1, min(2048 // threads, SM_SHARED // (smem + BLOCK_RESERVED)))
    if cluster <= 2:
        return sms * per_sm // cluster, "SMs"
    counted = cuda.active_clusters(path, symbol, defines, cluster, threads, smem)
    if counted:
        return counted, "driver"
    return sms // 16 * (16 // cluster) * per_sm, "estimate"


def tma_ring_launch(defines, tensors, out, shape, precision, path=V7_PATH) -> CudaLaunch:
    """v7: a persistent grid of as many clusters as the GPU runs at once (:func:`resident_clusters`), none more
    than the rows, so that each walks its rows in one round; the ring as dynamic shared memory. Recorded:
    ``chunk`` (body vectors a block holds a row), ``clusters`` and where their count came from."""
    m, n = shape["M"], shape["N"]
    plan = tma_ring_plan(n, precision.element_bytes, {**defines, "FIT": 0})
    resident, source = resident_clusters(path, "softmax_v7_tma_ring", defines, plan.cluster, defines["THREADS"],
                                         plan.ring_bytes, sm_count(out))
    clusters = max(1, min(m, resident))
    args = (cuda.as_cupy(tensors["X"]), cuda.as_cupy(out), np.int32(m), np.int32(n), np.int32(plan.chunk))
    return CudaLaunch(grid=(clusters * plan.cluster, 1, 1), block=(defines["THREADS"], 1, 1), args=args,
                      smem=plan.ring_bytes, facts={"chunk": plan.chunk, "clusters": clusters, "clusters_from": source})


MAX_PIECES = 32                     # the kernels' static_assert
LOADER = 32                         # v8's and v9's loader warp, beside their THREADS computing threads
LOOKAHEAD = 1.5                     # FIT: a share fits the ring this many times over (v8, v9)
PIECE_RING_BYTES = 227 * 1024 - 2048  # the ring: the statics take the rest (v9 at 8 blocks 1,280 bytes; test_nvcc)
FEW_ROUNDS = 8                      # FIT: a grid that walks the rows in at most this many rounds balances them
OVERLAP_SHARES = 2                  # v9 overlaps rows where its ring holds this many shares (the kernel's rule)


@dataclasses.dataclass(frozen=True)
class PieceRingKernel:
    """A rung on the piece ring (v8, v9): its rung key, file and symbol, and whether it overlaps two rows where the
    ring holds both shares (v9). Both plan alike (:func:`piece_ring_plan`, :func:`balanced_plan`): v9 overlaps
    where that plan's share fits the ring :data:`OVERLAP_SHARES` times, and walks the rows as v8 elsewhere."""

    rung: str
    path: object
    symbol: str
    overlaps: bool = False


V8 = PieceRingKernel("v8", CUDA_DIR / "softmax" / "08_piece_ring.cu", "softmax_v8_piece_ring")
V9 = PieceRingKernel("v9", CUDA_DIR / "softmax" / "09_overlap_ring.cu", "softmax_v9_overlap_ring", overlaps=True)


@dataclasses.dataclass(frozen=True)
class PieceRingPlan:
    """v8's plan for a row: blocks a row (``cluster``), the 16-byte body vectors of a row a block holds
    (``chunk``), vectors a piece (``piece``, at most the share) and pieces in the ring (``pieces``)."""

    cluster: int
    chunk: int
    piece: int
    pieces: int

    @property
    def per_row(self) -> int:
        return cdiv(self.chunk, self.piece)

    @property
    def ring_bytes(self) -> int:
        return self.pieces * self.piece * 16

    @property
    def overlaps(self) -> bool:
        """Whether the ring holds :data:`OVERLAP_SHARES` shares, so that v9 and v10 run the next row's first pass
        before this row's second (the kernels' `overlap_rows`)."""
        return OVERLAP_SHARES * self.per_row <= self.pieces


def piece_ring_plan(n: int, element_bytes: int, params) -> PieceRingPlan | str:
    """v8's (and v9's) ring for rows of ``n`` elements, or why none holds them: the config's PIECE (shortened to a
    share shorter than it) and as many pieces as :data:`PIECE_RING_BYTES` holds, up to :data:`MAX_PIECES`. FIT=1
    (the declared config): the fewest blocks a row (1, 2, 4, 8) whose share fits the ring :data:`LOOKAHEAD` times,
    else 8 blocks while the share fits the ring; otherwise the config's CLUSTER, when its share fits the ring (a
    share of more pieces than the ring has would wait on its own pieces: the kernel traps; one of as many loads
    the next row only behind its own stores)."""
    body = max(1, n * element_bytes // 16)

    def plan(cluster: int) -> PieceRingPlan:
        chunk = cdiv(body, cluster)
        piece = min(params["PIECE"], chunk)
        return PieceRingPlan(cluster, chunk, piece, min(MAX_PIECES, PIECE_RING_BYTES // (piece * 16)))

    if params.get("FIT"):
        fitting = [plan(c) for c in RING_CLUSTERS if plan(c).pieces >= LOOKAHEAD * plan(c).per_row]
        chosen = fitting[0] if fitting else plan(RING_CLUSTERS[-1])
    else:
        chosen = plan(params["CLUSTER"])
    if chosen.per_row > chosen.pieces:
        return out_of_scope(f"a share of {chosen.chunk * 16} bytes (N={n} over {chosen.cluster} block(s)) takes more "
                            f"than the {chosen.pieces} pieces of a {chosen.ring_bytes}-byte ring (v6 takes it)")
    return chosen


def piece_ring_launcher(op_defines, kernel: PieceRingKernel = V8) -> CudaLauncher:
    """v8's or v9's launcher: CLUSTER, PIECE and PIECES from :func:`piece_ring_plan`, the cluster size balanced over
    the rows where FIT=1 (:func:`balanced_plan`)."""
    plain = vector_ring_defines(op_defines, kernel.rung, piece_ring_plan, _piece_defines)

    def defines(config, tensors, out, shape, precision):
        defines = plain(config, tensors, out, shape, precision)
        if not config.get("FIT"):
            return defines
        plan = balanced_plan({**defines, "PIECE": config["PIECE"]}, shape["M"], shape["N"], precision.element_bytes,
                             sm_count(out), kernel)  # the config's piece: the base's may be cut to its share
        return {**defines, **_piece_defines(plan, defines)}

    return CudaLauncher(launch=functools.partial(piece_ring_launch, kernel=kernel), check=scope_check(piece_ring_plan),
                        defines=defines)


def _piece_defines(plan: PieceRingPlan, defines) -> dict:
    return {"CLUSTER": plan.cluster, "PIECE": plan.piece, "PIECES": plan.pieces}


def piece_ring_resident(defines, plan: PieceRingPlan, sms: int, kernel: PieceRingKernel = V8) -> tuple[int, str]:
    """(the kernel's clusters that the GPU runs at once for ``plan``, where the count came from): the driver's
    count of blocks an SM for one block a row (registers count at THREADS + 32 threads, a kernel without cluster
    dimensions), else :func:`resident_clusters`."""
    threads = defines["THREADS"] + LOADER
    defines = {**defines, **_piece_defines(plan, defines)}
    per_sm = (cuda.resident_blocks(kernel.path, kernel.symbol, defines, threads, plan.ring_bytes)
              if plan.cluster == 1 else None)
    return resident_clusters(kernel.path, kernel.symbol, defines, plan.cluster, threads, plan.ring_bytes, sms,
                             per_sm=per_sm)


def rounds_and_balance(m: int, resident: int) -> tuple[int, float]:
    """(rounds, balance) of ``m`` rows on a persistent grid of ``resident`` clusters, each walking rows c,
    c + resident, …: ⌈m / resident⌉ rounds, and the share of the grid's cluster-rounds that hold a row,
    m / (rounds · resident) — the last round runs m mod resident clusters while the others wait."""
    rounds = cdiv(m, resident)
    return rounds, m / (rounds * resident)


def balanced_plan(defines, m: int, n: int, element_bytes: int, sms: int,
                  kernel: PieceRingKernel = V8) -> PieceRingPlan:
    """FIT's plan for ``m`` rows: :func:`piece_ring_plan`'s (its CLUSTER in ``defines``), except where its grid walks
    the rows in at most :data:`FEW_ROUNDS` rounds: then the cluster size from 1 to 8 whose share fits the ring with
    the fewest rounds, then the best balance, then the most blocks (:func:`rounds_and_balance`), no worse balanced
    than the base. A cluster's blocks share a GPC, so the driver counts the clusters at once: 132 SMs ran 39 of 3,
    30 of 4, 22 of 5, 17 of 6, 15 of 7 or 8 on the H100 of c106. Why (c106 at afb891b, each size timed cold,
    experiments/softmax_v8_clusters.py): 64 rows of 262144 FP32 on 15 clusters of 8 take 5 rounds for 4.3 rounds'
    work, on 22 of 5 three (2,150 → 2,283 GB/s); 64×151936 FP32 over 8 blocks 1,778 GB/s, over 5 2,014, over 3
    2,107; BF16 64×151936 over a pair, one round, 1,965 against 1,367 over 4; 8 rows of 131072 FP32 over 8 blocks
    667 against 615 over 4. Past a few rounds the base holds: at 1,024 rows FP32 262144 ran 2,901 GB/s over 8
    blocks, 2,802 over 5 (47 rounds for 69), BF16 2,830 over 4, 2,637 over 3; at 128×262144 BF16 three blocks (4
    rounds, balance 0.82) lost 7 % to four (5 rounds, 0.85), which the balance floor keeps."""
    base = piece_ring_plan(n, element_bytes, {**defines, "FIT": 0})
    rounds, balance = rounds_and_balance(m, piece_ring_resident(defines, base, sms, kernel)[0])
    if rounds > FEW_ROUNDS:
        return base
    best, best_key = base, (rounds, -balance)
    for cluster in range(8, 0, -1):  # ties to the larger cluster: a round's rows over more SMs
        plan = piece_ring_plan(n, element_bytes, {**defines, "CLUSTER": cluster, "FIT": 0})
        if isinstance(plan, str) or cluster == base.cluster:
            continue
        r, b = rounds_and_balance(m, piece_ring_resident(defines, plan, sms, kernel)[0])
        if b >= balance and (r, -b) < best_key:
            best, best_key = plan, (r, -b)
    return best


def piece_ring_launch(defines, tensors, out, shape, precision, kernel: PieceRingKernel = V8) -> CudaLaunch:
    """v8 and v9: as v7's persistent grid, blocks of THREADS computing threads and a loader warp, the clusters as
    :func:`piece_ring_resident` counts them. Recorded: ``chunk``, ``pieces``, ``per_row`` (pieces a row's share
    takes), ``clusters``, where their count came from, ``rounds`` (rows a cluster walks, at most) and, for v9,
    ``overlap`` (1: the ring holds two rows' shares, so the next row's first pass runs before this row's gather)."""
    m, n = shape["M"], shape["N"]
    plan = piece_ring_plan(n, precision.element_bytes, {**defines, "FIT": 0})
    resident, source = piece_ring_resident(defines, plan, sm_count(out), kernel)
    clusters = max(1, min(m, resident))
    args = (cuda.as_cupy(tensors["X"]), cuda.as_cupy(out), np.int32(m), np.int32(n), np.int32(plan.chunk))
    return CudaLaunch(grid=(clusters * plan.cluster, 1, 1), block=(defines["THREADS"] + LOADER, 1, 1), args=args,
                      smem=plan.ring_bytes, facts={"chunk": plan.chunk, "pieces": plan.pieces, "per_row": plan.per_row,
                                                   "clusters": clusters, "clusters_from": source,
                                                   "rounds": cdiv(m, clusters),
                                                   **({"overlap": int(plan.overlaps)}
                                                      if kernel.overlaps else {})})


TEAM_LOOKAHEAD = 1.5  # FIT: a team's share fits the ring this many times where it walks more than one row (v8's)
ROW_COST = 512        # FIT: a row's fixed cost on a block, in body vectors (its two reductions and the poll)
ROW_SLOTS = 4         # v10's rows of exchange slots (the kernel's, as v9's)


def team_words(team: int) -> int:
    """The 64-bit words of a team's exchange: ring.cuh's ExchangeSlots::WORDS (rows × rounds × ranks × (m, d))."""
    return ROW_SLOTS * 2 * team * 2


@dataclasses.dataclass(frozen=True)
class TeamPlan:
    """v10's plan: ``teams`` teams of ``team`` consecutive blocks, each team walking rows t, t + teams, …, and the
    ring of each block (:class:`PieceRingPlan`, its ``cluster`` the team: ``chunk`` is a block's share)."""

    team: int
    teams: int
    ring: PieceRingPlan

    def rounds(self, m: int) -> int:
        return cdiv(m, self.teams)

    def leaves_room(self, m: int) -> bool:
        """Whether a block's ring holds its share :data:`TEAM_LOOKAHEAD` times, so that the next row loads while
        this one is held — or once, where each team takes one row."""
        return self.ring.pieces >= (TEAM_LOOKAHEAD if self.rounds(m) > 1 else 1) * self.ring.per_row


def team_plan(m: int, n: int, element_bytes: int, blocks: int, params) -> TeamPlan | str:
    """v10's teams for ``m`` rows of ``n`` elements on a grid of at most ``blocks`` blocks (one an SM), or why none
    holds them. A team of T blocks shares a row as a cluster of T would (:func:`piece_ring_plan`: the config's
    PIECE, as many pieces as the ring budget holds); ⌊blocks / T⌋ teams, none more than the rows. FIT=1 (the
    declared config): of the team sizes up to THREADS (the gather's one thread a rank) whose plan leaves the ring
    room (:meth:`TeamPlan.leaves_room`), the fewest rounds × (share + :data:`ROW_COST`), ties to the smaller team —
    rounds balance the rows over the teams, the share sets a row's time on a block, and the cost a row carries
    besides its bytes (two block reductions, the poll through L2) keeps the teams from growing past what the bytes
    pay for. Why (H100, cold, one run each, reports/h100-80gb-hbm3/experiments/softmax-v10-first-d7cb2fb/): a first
    rule asked for three shares in the ring and took 16-block teams at 64 × 262144 FP32 (8 rounds of 64 KB, 2,378
    GB/s) and 32 × 262144 FP32 (2,028), where autotuning found 8 blocks (4 and 2 rounds of 128 KB: 2,476 and 2,196):
    a row costs ~350 and ~740 vectors besides its share by those pairs, hence ROW_COST; and one row a team needs no
    second share (64 × 151936 BF16 over 6 blocks, 3 rounds: 1,399 GB/s, where v8's 64 pairs in one round ran 1,948).
    FIT=0: the config's TEAM."""
    def plan(team: int) -> TeamPlan | str:
        if team > blocks:
            return out_of_scope(f"a team of {team} blocks on a grid of {blocks} (one block an SM)")
        ring = piece_ring_plan(n, element_bytes, {"PIECE": params["PIECE"], "CLUSTER": team, "FIT": 0})
        return ring if isinstance(ring, str) else TeamPlan(team, max(1, min(m, blocks // team)), ring)

    if not params.get("FIT"):
        return plan(params["TEAM"])
    best, best_key = None, None
    for team in range(1, min(params["THREADS"], blocks) + 1):
        p = plan(team)
        if isinstance(p, str) or not p.leaves_room(m):
            continue
        key = (p.rounds(m) * (p.ring.chunk + ROW_COST), team)
        if best_key is None or key < best_key:
            best, best_key = p, key
    if best is None:
        return out_of_scope(f"no team of up to {min(params['THREADS'], blocks)} blocks holds a row of {n} elements "
                            f"in its rings (v6 takes it)")
    return best


def team_ring_check(params, shape, precision):
    """v10's scope at the default GPU's SMs (the launch plans with the GPU's own)."""
    plan = team_plan(shape["M"], shape["N"], precision.element_bytes, DEFAULT_SMS, params)
    return plan if isinstance(plan, str) else None


def team_ring_launcher(op_defines) -> CudaLauncher:
    """v10's launcher: TEAM, PIECE and PIECES from :func:`team_plan` at the GPU's SMs."""
    def defines(config, tensors, out, shape, precision):
        defines = vector_path_defines(op_defines, "v10", config, tensors, out, shape, precision)
        plan = team_plan(shape["M"], shape["N"], precision.element_bytes, sm_count(out), config)
        if isinstance(plan, str):
            raise PointUnsupported(plan)  # this point's team; the fitted point's may hold the row
        return {**defines, "TEAM": plan.team, "PIECE": plan.ring.piece, "PIECES": plan.ring.pieces}

    return CudaLauncher(launch=team_ring_launch, check=team_ring_check, defines=defines)


def team_ring_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v10: a persistent grid of teams × TEAM blocks of THREADS computing threads and a loader warp, one block an SM
    (the teams' blocks poll for each other: all must run at once), and the launch's own exchange words and ticket
    counter, zeroed once here (ring.cuh: the tags carry each launch's epoch, so nothing resets them). Recorded
    besides the config's TEAM: ``teams``, ``chunk``, ``pieces``, ``per_row``, ``rounds`` and ``overlap`` (as v9's)."""
    m, n = shape["M"], shape["N"]
    plan = team_plan(m, n, precision.element_bytes, sm_count(out), {**defines, "FIT": 0})
    ring = plan.ring
    words = torch.zeros(plan.teams * team_words(plan.team), dtype=torch.int64, device=out.device)
    tickets = torch.zeros(1, dtype=torch.int64, device=out.device)
    args = (cuda.as_cupy(tensors["X"]), cuda.as_cupy(out), np.int32(m), np.int32(n), np.int32(ring.chunk),
            cuda.as_cupy(words), cuda.as_cupy(tickets))
    return CudaLaunch(grid=(plan.teams * plan.team, 1, 1), block=(defines["THREADS"] + LOADER, 1, 1), args=args,
                      smem=ring.ring_bytes, keep=(words, tickets),
                      facts={"teams": plan.teams, "chunk": ring.chunk, "pieces": ring.pieces,
                             "per_row": ring.per_row, "rounds": plan.rounds(m),
                             "overlap": int(ring.overlaps)})
