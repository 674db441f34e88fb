"""The kept draws (study.draws): the values a seeded generator gives, drawn once for the precisions of a
shape, never handed out to be written into."""

import torch

from study import draws
from study.catalog import ladder


def test_draws_are_the_generators_values_in_order_and_kept():
    draws.forget()
    gen = torch.Generator().manual_seed(11)
    a = torch.rand(5, 7, generator=gen) * 2 - 1
    x = torch.rand(7, generator=gen) * 2 - 1
    got = draws.uniform(11, [(5, 7), (7,)])
    assert torch.equal(got[0], a) and torch.equal(got[1], x)
    assert draws.uniform(11, [(5, 7), (7,)])[0] is got[0]  # kept: the second caller does not draw again
    assert not torch.equal(draws.uniform(12, [(5, 7), (7,)])[0], a)  # another seed, other values


def test_an_input_written_into_does_not_change_the_next_groups_draw():
    draws.forget()
    problem = ladder("sgemv").problem
    fp32 = next(p for p in problem.precisions if p.name == "fp32")
    shape = {"M": 9, "N": 33}
    first = problem.make_inputs(shape, fp32, 3, "cpu")
    expected = first["A"].clone()
    first["A"].fill_(0.0)  # a kernel test may write into its inputs
    assert torch.equal(problem.make_inputs(shape, fp32, 3, "cpu")["A"], expected)
    fp16 = next(p for p in problem.precisions if p.name == "fp16")
    assert torch.equal(problem.make_inputs(shape, fp16, 3, "cpu")["A"], expected.to(torch.float16))


def test_the_kept_draws_stay_under_the_limit(monkeypatch):
    draws.forget()
    monkeypatch.setattr(draws, "LIMIT_BYTES", 3 * 100 * 4)  # three draws of 100 floats
    for seed in range(5):
        draws.uniform(seed, [(100,)])
    assert [key[0] for key in draws._KEPT] == [2, 3, 4]  # the least recently used went first
    draws.uniform(2, [(100,)])
    draws.uniform(5, [(100,)])
    assert [key[0] for key in draws._KEPT] == [4, 2, 5]
    draws.uniform(9, [(1000,)])  # larger than the limit: drawn, not kept
    assert 9 not in [key[0] for key in draws._KEPT]
    draws.forget()
