"""Suites of shapes: the GEMMs, GEMVs, batched attention products and softmax rows that public models
bring, vocabulary and attention-score rows, GEMVs of every aspect, and a seeded suite of odd sizes, as
data (``compare --suite NAME``, ``list --suites``).

A model suite is derived from a model's published dimensions (docs/suites.md gives the sources and
the derivation): with T tokens, hidden size d, MLP width f, H heads of size h, vocabulary V,

- GEMM (sgemm, hgemm): C[T×N] = A[T×K]·W[K×N] for each weight: the fused Q/K/V projection, the
  attention output, the MLP's up (and gate) and down projections, the LM head; T = 1 (decode),
  16 (a small batch or a draft) and 4,096 (a prefill chunk);
- gemm_bias_relu: the MLP's up projection (the product an activation follows);
- bgemm: per head, scores Q·Kᵀ (T×ctx by h) and the weighted values P·V (T×h by ctx), for T = 1,
  16 and the whole context (ctx, the context a decode step attends over);
- sgemv: W·x for each weight matrix (rows = output features);
- softmax: T rows over the vocabulary, H·T rows of attention scores over the context.

The ``odd`` suite draws sizes log-uniformly from 1 to 16,384 with a fixed seed, most of them no
multiple of 8 (the TMA rungs' 16-byte rows, every tile's tail), within a work bound per op so that a
suite run stays minutes long.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Mapping

TOKENS = (1, 16, 4096)
ODD_SEED = 2026
ODD_COUNT = 16
MAX_SIZE = 16384


@dataclasses.dataclass(frozen=True)
class Model:
    """The dimensions of a transformer that its GEMMs follow from (docs/suites.md)."""

    name: str
    hidden: int          # d
    mlp: int             # f, the MLP's inner width
    heads: int           # H
    head_dim: int        # h
    kv_heads: int        # key/value heads (grouped-query attention: fewer than H)
    vocab: int           # V
    context: int         # the context a decode step attends over
    gated: bool          # a gated MLP (gate and up projections side by side, fused here)
    source: str          # where the numbers are published

    def weights(self) -> list[tuple[str, int, int]]:
        """(name, in features K, out features N) of each weight matrix of a layer, and the LM head."""
        qkv = (self.heads + 2 * self.kv_heads) * self.head_dim
        return [("qkv", self.hidden, qkv), ("attn_out", self.heads * self.head_dim, self.hidden),
                ("mlp_up", self.hidden, (2 if self.gated else 1) * self.mlp), ("mlp_down", self.mlp, self.hidden),
                ("lm_head", self.hidden, self.vocab)]


MODELS = (
    Model("llama2-7b", hidden=4096, mlp=11008, heads=32, head_dim=128, kv_heads=32, vocab=32000, context=4096,
          gated=True, source="Touvron et al., Llama 2 (2023), Table 1 and the released config.json"),
    Model("gpt2-xl", hidden=1600, mlp=6400, heads=25, head_dim=64, kv_heads=25, vocab=50257, context=1024,
          gated=False, source="Radford et al., Language Models are Unsupervised Multitask Learners (2019), "
                              "Table 2, and the released config.json"),
)


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    about: str
    shapes: Mapping[str, tuple[Mapping[str, int], ...]]  # op -> shapes in its axes
    source: str


def _model_suite(model: Model) -> Suite:
    gemm = [{"M": t, "N": n, "K": k} for t in TOKENS for _, k, n in model.weights()]
    up = next((k, n) for name, k, n in model.weights() if name == "mlp_up")
    ctx, queries = model.context, (1, 16, model.context)  # decode, a draft of 16, a whole-context prefill
    attention = []
    for t in queries:
        attention += [{"batch": model.heads, "M": t, "N": ctx, "K": model.head_dim},       # Q·Kᵀ
                      {"batch": model.heads, "M": t, "N": model.head_dim, "K": ctx}]       # P·V
    return Suite(
        name=model.name,
        about=f"a layer's projections and LM head at {', '.join(map(str, TOKENS))} tokens, attention over "
              f"{model.context}",
        shapes={"sgemm": tuple(gemm), "hgemm": tuple(gemm),
                "gemm_bias_relu": tuple({"M": t, "N": up[1], "K": up[0]} for t in TOKENS),
                "bgemm": tuple(attention),
                "sgemv": tuple({"M": n, "N": k} for _, k, n in model.weights()),
                "softmax": tuple([{"M": t, "N": model.vocab} for t in TOKENS]
                                 + [{"M": model.heads * t, "N": ctx} for t in queries])},
        source=model.source)


def _odd_size(rng: random.Random, top: int = MAX_SIZE) -> int:
    """Log-uniform in [1, top]; four times in five a multiple of 8 is moved off it."""
    size = min(top, max(1, round(math.exp(rng.uniform(0.0, math.log(top))))))
    if size % 8 == 0 and rng.random() < 0.8:
        size = min(top, size + rng.randint(1, 7))
    return size


def _odd_shapes(axes: tuple[str, ...], work_bound: float, rng: random.Random, count: int = ODD_COUNT) -> tuple:
    """``count`` shapes whose product of sizes stays within ``work_bound`` (drawn again until it does)."""
    out = []
    while len(out) < count:
        shape = {axis: _odd_size(rng, 64 if axis == "batch" else MAX_SIZE) for axis in axes}
        if math.prod(shape.values()) <= work_bound:
            out.append(shape)
    return tuple(out)


def _odd_suite() -> Suite:
    rng = random.Random(ODD_SEED)
    gemm = _odd_shapes(("M", "N", "K"), 2**36, rng)  # ≤ 1.4e11 FLOP: ~3 ms in FP32 FFMA on an H200
    return Suite(
        name="odd",
        about=f"{ODD_COUNT} shapes an op, sizes 1–{MAX_SIZE} drawn log-uniformly (seed {ODD_SEED}), "
              "most no multiple of 8",
        shapes={"sgemm": gemm, "hgemm": gemm, "gemm_bias_relu": gemm,
                "bgemm": _odd_shapes(("batch", "M", "N", "K"), 2**34, rng),
                "sgemv": _odd_shapes(("M", "N"), 2**28, rng),
                "softmax": _odd_shapes(("M", "N"), 2**28, rng)},
        source=f"study.suites, random.Random({ODD_SEED})")


# Vocabulary sizes of public model families, from their released config.json (docs/suites.md).
VOCABULARIES = {"llama2": 32000, "gpt2": 50257, "llama3": 128256, "qwen2": 151936, "gemma3": 262144}
VOCAB_ROWS = (1, 8, 64, 1024, 8192)               # tokens whose logits one softmax normalises
CONTEXTS = (128, 512, 2048, 8192, 32768, 131072)  # attention-score rows: a query over this many keys
ELEMENT_BOUND = 2**30                              # M·N: 4 GiB of FP32 in, 4 out, 40 GiB with the reference


def _within(shapes) -> tuple:
    return tuple(s for s in shapes if math.prod(s.values()) <= ELEMENT_BOUND)


def _vocab_suite() -> Suite:
    return Suite(
        name="vocab",
        about=f"softmax over vocabularies of {min(VOCABULARIES.values()):,}–{max(VOCABULARIES.values()):,} at "
              f"{', '.join(map(str, VOCAB_ROWS))} rows; the LM heads' GEMVs",
        shapes={"softmax": _within({"M": m, "N": v} for v in VOCABULARIES.values() for m in VOCAB_ROWS),
                "sgemv": tuple({"M": v, "N": 4096} for v in VOCABULARIES.values())},
        source="the released config.json of Llama 2, GPT-2, Llama 3, Qwen2 and Gemma 3 (vocab_size)")


def _attention_suite() -> Suite:
    rows = (32, 4096)  # a decode step of 32 heads; a 128-token prefill chunk of 32 heads
    return Suite(
        name="attention",
        about=f"softmax of attention scores: {' and '.join(map(str, rows))} rows over contexts of "
              f"{CONTEXTS[0]:,}–{CONTEXTS[-1]:,} keys",
        shapes={"softmax": _within({"M": m, "N": n} for n in CONTEXTS for m in rows)},
        source="32 heads as in Llama 2 7B; context lengths from 128 to 131,072 (docs/suites.md)")


def _gemv_aspect_suite() -> Suite:
    short_wide = [{"M": m, "N": n} for m in (1, 8, 64) for n in (2**16, 2**20)]
    tall_skinny = [{"M": m, "N": n} for m in (2**20, 2**22) for n in (16, 64, 256)]
    return Suite(name="gemv-aspect", about="GEMV short and wide (1–64 rows, up to 2^20 columns) and tall and skinny "
                                           "(2^20–2^22 rows, 16–256 columns)",
                 shapes={"sgemv": _within(short_wide + tall_skinny)}, source="study.suites (docs/suites.md)")


SUITES: dict[str, Suite] = {s.name: s for s in (*(_model_suite(m) for m in MODELS), _odd_suite(), _vocab_suite(),
                                                _attention_suite(), _gemv_aspect_suite())}


def suite(name: str) -> Suite:
    if name not in SUITES:
        raise KeyError(f"unknown suite {name!r}; known: {', '.join(SUITES)} (python -m study list --suites)")
    return SUITES[name]


def shapes_of(op: str, names, required: bool = False) -> list[dict[str, int]]:
    """The shapes the named suites give ``op``, in their order, each once (KeyError for an unknown
    suite; with ``required``, for a suite that has none of the op's, naming the ops it covers)."""
    shapes: list[dict[str, int]] = []
    for name in names:
        found = suite(name)
        if required and op not in found.shapes:
            raise KeyError(f"suite {name} has no shapes of {op}; it covers {', '.join(found.shapes)}")
        shapes += [s for s in map(dict, found.shapes.get(op, ())) if s not in shapes]
    return shapes
