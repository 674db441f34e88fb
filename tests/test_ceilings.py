"""Stored ceilings without a GPU: which files count as complete (an older file lacking a ceiling
this version measures is measured again), the Markdown table and the summary a run carries.
The figures are made up."""

import json

import pytest

from study import ceilings, hardware, metrics

H200 = hardware.Device(name="NVIDIA H200", slug="h200", capability=(9, 0), sms=132, max_sm_clock_mhz=1980.0,
                       max_mem_clock_mhz=3201.0, bus_width_bits=6016, l2_bytes=62914560, memory_bytes=150 * 2**30,
                       driver="x", clock_source="NVML")


def _stored() -> dict:
    shape = {"shape": {"M": 4096, "N": 4096, "K": 4096}}
    return {"device": H200.to_json(), "utc": "2000-01-01T00:00:00+00:00",
            "launch_overhead": {"median_ms": 0.004},
            "ffma": {"median_ms": 1.0, "gflops": 60000.0, "theoretical_gflops": 66908.16},
            "mma_sync_fp16": {"median_ms": 1.0, "gflops": 500000.0, "theoretical_gflops": 1070530.56},
            "copy": {"median_ms": 1.0, "gbps": 4000.0, "theoretical_gbps": 4814.304},
            "tensor_fp16": {"median_ms": 0.2, "gflops": 700000.0, "theoretical_gflops": 1070530.56, **shape},
            "tensor_bf16": {"median_ms": 0.2, "gflops": 700000.0, "theoretical_gflops": 1070530.56, **shape},
            "tensor_tf32": {"median_ms": 0.4, "gflops": 350000.0, "theoretical_gflops": 535265.28, **shape}}


def test_a_stored_file_without_the_mma_sync_ceiling_is_incomplete():
    stored = _stored()
    assert ceilings.complete(stored)
    del stored["mma_sync_fp16"]
    assert not ceilings.complete(stored)


def test_an_incomplete_cached_file_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("STUDY_CACHE_DIR", str(tmp_path))
    old = _stored()
    del old["mma_sync_fp16"]
    path = ceilings.cache_path(H200, "GPU-0123456789abcdef")
    path.write_text(json.dumps(old))
    monkeypatch.setattr(ceilings, "measure", lambda device, settings, clocks: _stored())
    measured, source = ceilings.load_or_measure(H200, None, None, uuid="GPU-0123456789abcdef")
    assert source == "measured now" and "mma_sync_fp16" in measured
    assert ceilings.load_or_measure(H200, None, None, uuid="GPU-0123456789abcdef")[1] == str(path)  # cached now


def test_the_mma_sync_ceiling_is_a_row_of_the_table_but_no_scoring_ceiling():
    text = ceilings.markdown(_stored())
    row = next(line for line in text.splitlines() if "mma.sync" in line)
    assert "FP16 mma.sync loop (m16n8k16, FP32 accumulate; legacy warp-level MMA)" in row
    assert "500,000 GFLOPS" in row and "1,070,531 GFLOPS" in row and "46.7 %" in row
    assert text.index("FFMA loop") < text.index("mma.sync loop") < text.index("FP16 tensor cores")
    summary = ceilings.summary(_stored())
    assert summary["tensor_fp16_gflops"] == pytest.approx(700000.0)
    assert not any("mma" in key for key in summary)


def test_the_copy_by_size_curve_is_optional_and_tabled_when_measured():
    stored = _stored()
    assert ceilings.complete(stored) and "by size" not in ceilings.markdown(stored)  # older files stay complete
    stored["copy_by_size"] = [{"bytes_read": 32 * 2**20, "bytes_moved": 64 * 2**20, "median_ms": 0.02, "gbps": 3355.4},
                              {"bytes_read": 2**31, "bytes_moved": 2**32, "median_ms": 1.0, "gbps": 4294.9}]
    text = ceilings.markdown(stored)
    table = text[text.index("## Device copy by size"):]
    assert "| 64 MiB" in table and "3,355 GB/s" in table and "69.7 %" in table and "4,096 MiB" in table
    assert ceilings.COPY_SIZES[0] == 4 * 2**20 and ceilings.COPY_SIZES[-1] == 2 * 2**30
    # a run carries the curve as [bytes moved, GB/s] pairs, what metrics.copy_ceiling reads
    assert ceilings.summary(stored)[metrics.COPY_CURVE] == [[64 * 2**20, 3355.4], [2**32, 4294.9]]
    assert metrics.COPY_CURVE not in ceilings.summary(_stored())


def test_the_curve_is_added_to_stored_ceilings_with_a_cold_timer(monkeypatch):
    from study.timing import TimerSettings

    made = {}

    def fake_timer(settings, device, clocks):
        made["mode"] = settings.mode

    monkeypatch.setattr(ceilings, "for_gpu", fake_timer)
    monkeypatch.setattr(ceilings, "copy_by_size", lambda timer: [{"bytes_moved": 1, "gbps": 2.0}])
    added = ceilings.add_copy_by_size(_stored(), H200, TimerSettings(mode="hot"), None)
    assert made["mode"] == "cold" and added["copy_by_size"] == [{"bytes_moved": 1, "gbps": 2.0}]
    assert added["copy"] == _stored()["copy"]  # the rest as it was
