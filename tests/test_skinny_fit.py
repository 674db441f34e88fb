"""FIT_BN without a GPU: the skinny-M rungs' weight tile fitted to N (study/ops/skinny_fit.py) picks the width each
measured autotune point preferred, falls back to the declared one, and the CUDA rungs and their twins pick alike."""

import pytest

from study.ops.skinny_fit import SKINNY_TILES, fit_defines, fit_twin_meta, fitted_bn
from study.catalog import implementation


@pytest.mark.parametrize("batch, n, best", [
    (1, 22016, 256),  # gemm_bias_relu v4 at 1×22016×4096: 50.1 µs at 256 against 53.5 at 128 (c67)
    (1, 6400, 64),    # at 1×6400×1600: 10.7–10.9 µs at 64 against 11.7–13.6 at 128 and 256 (c78)
    (25, 64, 64),     # bgemm v3 at 25×16×64×1024: 8.1 µs at 64 against 8.7 at 128 (c77)
    (32, 128, 64),    # at 32×1×128×4096: 14.1 against 15.5
    (32, 4096, 128),  # at 32×16×4096×128: every width passes the SMs an entry's share; 128 was the fastest
])
def test_the_fitted_width_is_the_one_each_measured_autotune_winner_had(batch, n, best):
    # the width only: at K = 128 the winner also had 4 stages, where the fit keeps its width's 8
    assert fitted_bn(n, batch, 132, declared=128) == best


def test_the_narrowest_width_that_fits_the_sms_else_the_declared():
    # tiles of 64 up to the SMs' count: 64; past it, the next width whose tiles fit; none: the declared width
    assert [fitted_bn(n, 1, 132, 128) for n in (1, 64 * 132, 64 * 132 + 1, 128 * 132, 128 * 132 + 1, 256 * 132,
                                                256 * 132 + 1)] == [64, 64, 128, 128, 256, 256, 128]
    assert fitted_bn(50257, 1, 132, declared=256) == 256
    assert fitted_bn(64, 200, 132, declared=128) == 128  # more entries than SMs: no entry has one of its own


def test_fit_bn_sets_the_width_threads_and_stages_of_its_space_point_and_nothing_without_it():
    defines = {"BN": 128, "BK": 64, "STAGES": 8, "THREADS": 288, "MIN_SLICES": 4, "FIT_BN": 1, "TOKENS": 8}
    fitted = fit_defines(defines, {"M": 1, "N": 22016, "K": 4096}, 132)
    assert fitted == {**defines, "BN": 256, "THREADS": 544, "STAGES": 5}
    assert fit_defines({**defines, "FIT_BN": 0}, {"M": 1, "N": 22016, "K": 4096}, 132)["BN"] == 128
    # every width's threads and stages are those of a point of the CUDA rung's space (compiled and tested there)
    for name in ("hgemm/v10_skinny_m/cuda", "gemm_bias_relu/v4_skinny_m/cuda", "bgemm/v3_batched_skinny_m/cuda"):
        impl = implementation(name)
        assert impl.params["FIT_BN"] == 1
        points = {(p["BN"], p["THREADS"], p["STAGES"]) for p in impl.space}
        assert {(bn, t["THREADS"], t["STAGES"]) for bn, t in SKINNY_TILES.items()} <= points, name


@pytest.mark.parametrize("name", ["hgemm/v10_skinny_m", "gemm_bias_relu/v4_skinny_m", "bgemm/v3_batched_skinny_m"])
def test_the_twin_fits_the_same_width_as_its_cuda_rung(name):
    cuda, twin = implementation(f"{name}/cuda"), implementation(f"{name}/triton")
    assert twin.params["FIT_BN"] == 1
    shapes = [{"M": 1, "N": n, "K": 4096} for n in (1600, 4096, 6400, 12288, 22016, 50257)]
    if name.startswith("bgemm"):
        shapes = [{"batch": b, **s} for b in (1, 25, 32) for s in shapes]
    for shape in shapes:
        defines = fit_defines(dict(cuda.params), shape, 132)
        meta = fit_twin_meta(dict(twin.params), shape, 132)
        assert meta["BN"] == defines["BN"] and meta["num_stages"] == defines["STAGES"], shape
        assert meta["num_warps"] * 32 + 32 == defines["THREADS"]  # the producer warp has no counterpart
    assert fit_twin_meta({**twin.params, "FIT_BN": 0}, {"M": 1, "N": 22016, "K": 4096}, 132)["BN"] == 128
    assert fit_twin_meta({"FIT_BN": 1}, {"M": 1, "N": 22016, "K": 4096}, 132) == {"FIT_BN": 1}  # under the tuner


def test_the_tuner_logs_the_width_a_fitted_point_ran_at(tmp_path, monkeypatch):
    # the FIT_BN=1 point of the space runs at the fitted width: its trial says so beside the point as written
    from types import SimpleNamespace

    from study.backends import cuda_tune
    monkeypatch.setenv("STUDY_CACHE_DIR", str(tmp_path))
    impl = implementation("hgemm/v10_skinny_m/cuda")
    monkeypatch.setattr(cuda_tune, "check_output", lambda *a: SimpleNamespace(ok=True))
    shape = {"M": 1, "N": 22016, "K": 4096}

    def prepare(impl, problem, tensors, shape, precision, config, pad):
        return SimpleNamespace(fn=None, out=None, poison=None, config=fit_defines(dict(config), shape, 132))

    timer = SimpleNamespace(device=SimpleNamespace(name="GPU", capability=(9, 0)), warm_up=lambda fn, flush: None,
                            samples=lambda fn, reps, flush: ([1.0] * reps, None), settings=SimpleNamespace(tune_reps=3))
    tuning = SimpleNamespace(timer=timer, mode="cold", ref=None, scale=None)
    _, log = cuda_tune.tune(impl, None, None, shape, SimpleNamespace(name="bf16"), tuning, 0, prepare)
    fitted = [t for t in log["trials"] if t["config"]["FIT_BN"] == 1]
    assert fitted and all(t["ran"] == {"BN": 256, "THREADS": 544, "STAGES": 5} for t in fitted)
    assert all("ran" not in t for t in log["trials"] if t["config"]["FIT_BN"] == 0)


def test_a_named_profile_point_runs_as_written_and_the_twin_records_its_fitted_width():
    from study import profile
    from study.ops.twin_configs import launched_facts

    params = implementation("hgemm/v10_skinny_m/cuda").params
    assert profile.parse_config(["BN=256,THREADS=544,STAGES=5"], params) == {"BN": 256, "THREADS": 544, "STAGES": 5,
                                                                             "FIT_BN": 0}
    twin = dict(implementation("hgemm/v10_skinny_m/triton").params)
    meta = fit_twin_meta(twin, {"M": 1, "N": 4096, "K": 4096}, 132)
    assert launched_facts(twin, meta) == {"BN": 64, "num_warps": 4}  # 8 stages either way
    assert launched_facts(twin, fit_twin_meta(twin, {"M": 1, "N": 11008, "K": 4096}, 132)) == {}
