"""study profile without a GPU or ncu: reading ncu's raw CSV, the summary of the main kernel,
the Markdown table, the ncu command, the file names, and the failures that must write nothing."""

import json
import stat
import sys
from types import SimpleNamespace

import pytest

from study import ncu, profile, profile_table
from study.__main__ import main
from study.ncu import parse_raw_csv
from study.profile import (DURATION, FFMA_COUNT, METRICS, OPTIONAL, SMEM_LD_CONFLICTS, ProfileError, ncu_command,
                           profile_stem, stall_metric)
from study.profile_table import render_table, summarise

MAIN = "void sgemm_v5_split_k<128, 8>(const float *, const float *, float *, int, int, int)"
REDUCE = "splitk_reduce(const float *, float *, int, int)"

# (metric, unit, main kernel, reduction kernel) as ncu 2025.3 prints them with --print-units base:
# thousands separators, n/a where a metric does not apply.
METRIC_ROWS = [
    ("gpu__time_duration.sum", "nsecond", "3,962,880", "41,120"),
    ("smsp__cycles_elapsed.avg.per_second", "hz", "1,980,000,000", "1,975,000,000"),
    ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "%", "74.05", "2.10"),
    ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "68,719,476,736", "0"),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "%", "0", "0"),
    ("smsp__issue_active.avg.pct_of_peak_sustained_active", "%", "76.47", "12.80"),
    ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "inst", "0.35", "0.01"),
    ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "inst", "0.41", "25.00"),
    ("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", "inst", "0.22", "0.10"),
    ("smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", "inst", "1.87", "0.02"),
    ("smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", "inst", "0.61", "0"),
    ("smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio", "inst", "2.10", "0.05"),
    ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "inst", "0.48", "0.90"),
    ("smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", "inst", "3.00", "1.00"),
    ("smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio", "inst", "0.03", "0.01"),
    ("smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio", "inst", "0.12", "0.70"),
    ("smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", "inst", "n/a", "n/a"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "", "1,048,576", "0"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "", "0", "0"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "", "4,194,304", "0"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "", "524,288", "0"),
    ("launch__registers_per_thread", "register/thread", "128", "32"),
    ("sm__maximum_warps_per_active_cycle_pct", "%", "25", "100"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "23.80", "61.50"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "3.50", "71.20"),
    ("dram__bytes_read.sum", "byte", "201,326,592", "1,048,576"),
    ("dram__bytes_write.sum", "byte", "67,108,864", "524,288"),
    ("lts__t_sector_hit_rate.pct", "%", "82.38", "40.10"),
]
LAUNCH = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC"]


def _quoted(cells):
    return ",".join(f'"{c}"' for c in cells)


def _csv(kernels=((MAIN, 2), (REDUCE, 3))):
    """ncu's raw page: header of launch columns and metric names, the units row, a row per kernel."""
    lines = [_quoted(LAUNCH + [m for m, *_ in METRIC_ROWS]),
             _quoted([""] * len(LAUNCH) + [u for _, u, *_ in METRIC_ROWS])]
    for i, (name, column) in enumerate(kernels):
        launch = [str(i), "703", "python3.12", "127.0.0.1", name, "1", "7", "(256, 1, 1)", "(32, 32, 4)", "0", "9.0"]
        lines.append(_quoted(launch + [row[column] for row in METRIC_ROWS]))
    return "\n".join(lines) + "\n"


OUTPUT = ("==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, profiling results may "
          "be inconsistent.\n==PROF== Connected to process 703 (/usr/bin/python3.12)\n"
          "some program output, with, commas\n"
          '==PROF== Profiling "sgemm_v5_split_k" - 0: 0%....50%....100% - 38 passes\n'
          '==PROF== Profiling "splitk_reduce" - 1: 0%....50%....100% - 38 passes\n'
          "==PROF== Disconnected from process 703\n" + _csv())


def test_the_raw_csv_is_read_past_the_profilers_lines_with_numbers_as_floats():
    rows = parse_raw_csv(OUTPUT)
    assert [r["Kernel Name"] for r in rows] == [MAIN, REDUCE]
    main_row = rows[0]
    assert main_row[DURATION] == 3962880.0 and main_row[FFMA_COUNT] == 68719476736.0  # "3,962,880"
    assert main_row["Block Size"] == "(256, 1, 1)" and main_row["CC"] == "9.0"  # labels stay text
    assert main_row[stall_metric("gmma")] == "n/a"
    assert main_row["_units"][DURATION] == "nsecond" and "Kernel Name" not in main_row["_units"]
    assert parse_raw_csv("==PROF== nothing profiled\n") == []


def test_the_summary_is_of_the_longest_kernel_and_ranks_its_stalls():
    s = summarise(parse_raw_csv(OUTPUT))
    assert s["kernel"] == "sgemm_v5_split_k<128, 8>" and s["kernel_full"] == MAIN
    assert s["kernels"] == 2 and s["other_kernels"][0]["kernel"] == "splitk_reduce"
    assert s["other_kernels"][0]["ms"] == pytest.approx(0.04112)
    assert s["duration_ms"] == pytest.approx(3.96288) and s["sm_ghz"] == pytest.approx(1.98)
    # "selected" (3.00) is the issuing cycle, not a stall; the reduction's long_scoreboard is not this kernel's
    assert (s["top_stall"], s["top_stall_cycles"]) == ("not_selected", 2.10)
    assert (s["second_stall"], s["second_stall_cycles"]) == ("mio_throttle", 1.87)
    assert s["smem_ld_conflicts"] == 1048576 and s["smem_ld_conflicts_per_wavefront"] == pytest.approx(0.25)
    assert s["smem_st_conflicts_per_wavefront"] == 0
    assert s["ffma_tflops"] == pytest.approx(2 * 4096 ** 3 / 3.96288e-3 / 1e12)  # 34.68
    assert s["registers"] == 128 and s["occupancy_theoretical_pct"] == 25 and s["occupancy_achieved_pct"] == 23.8
    assert (s["tensor_pipe_pct"], s["tensor_pipe"]) == (0.0, "hmma") and s["gmma_pipe_pct"] is None
    assert (s["dram_read_bytes"], s["dram_write_bytes"]) == (201326592, 67108864)  # the main kernel's, not the sum
    assert (s["launch_dram_read_bytes"], s["launch_dram_write_bytes"]) == (201326592 + 1048576, 67108864 + 524288)
    # a launch's bytes only where every kernel of it has them
    no_write = _csv().replace('"201,326,592","67,108,864"', '"201,326,592","n/a"')  # the main kernel's write
    assert no_write != _csv() and summarise(parse_raw_csv(no_write))["launch_dram_write_bytes"] is None


def test_a_launchs_bytes_are_per_launch_of_the_implementation():
    # two launches of split-K and its reduction: each launch's bytes, not both launches'
    s = summarise(parse_raw_csv(_csv(((MAIN, 2), (REDUCE, 3), (MAIN, 2), (REDUCE, 3)))))
    assert s["launch_dram_read_bytes"] == 201326592 + 1048576
    # one kernel called twice a launch (hgemm v9's staging): the sidecar's launches say it is one launch
    twice = parse_raw_csv(_csv(((MAIN, 2), (MAIN, 2))))
    assert summarise(twice, launches=1)["launch_dram_read_bytes"] == 2 * 201326592
    assert summarise(twice)["launch_dram_read_bytes"] == 201326592  # without it, taken for two launches


@pytest.mark.parametrize("count, text", [(None, "—"), (0, "0 B"), (640, "640 B"), (55986, "56.0 kB"),
                                          (999_960, "1,000.0 kB"), (67187712, "67.2 MB"), (2.5e10, "25,000.0 MB")])
def test_bytes_are_written_in_decimal_units_without_exponents(count, text):
    from study.report.labels import size

    assert size(count) == text


@pytest.mark.parametrize("value, unit, count", [(2.5, "byte", 2.5), (2.5, "Kbyte", 2500), (2.5, "Mbyte", 2.5e6),
                                                 (2.5, "Gbyte", 2.5e9), (2.5, "MiB", None), (None, "byte", None)])
def test_bytes_in_any_unit_ncu_prints(value, unit, count):
    assert ncu.nbytes(value, unit) == count  # decimal prefixes, as ncu's; an unknown unit is no number


def test_several_launches_of_one_kernel_are_averaged():
    text = _csv(((MAIN, 2), (MAIN, 2))).replace('"3,962,880"', '"4,000,000"', 1)
    s = summarise(parse_raw_csv(text))
    assert s["launches"] == 2 and s["kernels"] == 1 and s["other_kernels"] == []
    assert s["duration_ms"] == pytest.approx((4.0 + 3.96288) / 2)


def test_a_kernel_called_twice_in_a_launch_counts_both_calls():
    # sgemm v12 at 4517x62x2411: stage_rows for A's rows then for B's, the rung's kernel, its reduction
    text = _csv(((REDUCE, 3), (REDUCE, 3), (MAIN, 2)))
    s = summarise(parse_raw_csv(text))
    (other,) = s["other_kernels"]
    assert s["calls"] == 3 and other["calls"] == 2
    assert other["ms"] == pytest.approx(2 * 0.04112)  # both calls' time in one launch, not their mean
    # the longest kernel called three times a launch (hgemm v9's staging), the others once: still one launch
    s = summarise(parse_raw_csv(_csv(((MAIN, 2), (MAIN, 2), (MAIN, 2), (REDUCE, 3)))))
    assert s["calls"] == 4 and s["other_kernels"][0]["calls"] == 1


@pytest.mark.parametrize("value, unit, ghz", [(1.98e9, "hz", 1.98), (1.98, "Ghz", 1.98), (1980, "Mhz", 1.98),
                                               (1.98, "cycle/nsecond", 1.98), (1.98e9, "cycle/second", 1.98),
                                               (1980.0, "cycle/usecond", 1.98), (1.98, "furlong", None)])
def test_sm_frequency_in_any_unit_ncu_prints(value, unit, ghz):
    got = ncu.ghz(value, unit)
    assert got == (None if ghz is None else pytest.approx(ghz))


def _save(folder, name, text, sidecar=None):
    path = folder / f"{name}.csv"
    path.write_text(text)
    if sidecar:
        path.with_suffix(".json").write_text(json.dumps(sidecar))
    return path


def test_the_table_is_rendered_from_the_saved_files(tmp_path):
    a = _save(tmp_path, "ncu-sgemm-v5_split_k-cuda-4096x4096x4096", _csv(),
              {"implementation": "sgemm/v5_split_k/cuda", "shape": "4096x4096x4096", "precision": None,
               "gpu": "NVIDIA H200", "ncu_version": "Version 2025.3.1.0 (build 36398880)",
               "metrics_left_out": [stall_metric("gmma")]})
    b = _save(tmp_path, "ncu-sgemv-v2_vector_loads-cuda-16384x16384-fp16", _csv(((REDUCE, 3),)))  # no sidecar
    text = render_table([a, b])
    lines = text.splitlines()
    row_a = next(line for line in lines if "`sgemm/v5_split_k/cuda`" in line)
    for cell in ("4096x4096x4096", "3.9629", "1.98", "74.0", "34.68", "not_selected 2.10", "mio_throttle 1.87",
                 "1,048,576 (0.25) / 0 (0.00)", "| 128 ", "25.0 / 23.8", "3.5", "201.3 MB / 67.1 MB"):
        assert cell in row_a, cell
    row_b = next(line for line in lines if "`sgemv/v2_vector_loads/cuda`" in line)  # named by its file
    assert "16384x16384 fp16" in row_b and "long_scoreboard 25.00" in row_b and "`splitk_reduce`" in row_b
    assert "2 kernels per launch; the row is the longest, `sgemm_v5_split_k<128, 8>`" in text
    assert "`splitk_reduce` 0.0411 ms" in text
    assert f"not collected there: `{stall_metric('gmma')}`" in text
    assert "NVIDIA H200, Version 2025.3.1.0" in text and "not typed" in text
    for metric in (DURATION, SMEM_LD_CONFLICTS, "smsp__issue_active.avg.pct_of_peak_sustained_active",
                   "sm__maximum_warps_per_active_cycle_pct", "dram__bytes_read.sum", "dram__bytes_write.sum"):
        assert f"`{metric}`" in text  # the footnote names each column's metrics


def test_the_command_profiles_the_validate_target_with_every_metric():
    cmd = ncu_command("sgemm/v4_double_buffer/cuda", "4096x4096x4096", None, 1, METRICS)
    joined = " ".join(cmd)
    for flags in ("--clock-control none", "--profile-from-start off", "--csv", "--page raw",
                  f"--metrics {','.join(METRICS)}"):
        assert flags in joined
    assert cmd[0] == "ncu"
    assert cmd[-7:] == [sys.executable, "-m", "study.child", "ncu", "sgemm/v4_double_buffer/cuda", "4096x4096x4096",
                        "1"]
    with_precision = ncu_command("sgemv/v2_vector_loads/cuda", "16384x16384", "fp16", 3, METRICS, ncu="/opt/ncu")
    assert with_precision[0] == "/opt/ncu" and with_precision[-4:] == ["16384x16384", "3", "--precision", "fp16"]
    assert len(set(METRICS)) == len(METRICS)
    assert all(stall_metric(r) in METRICS for r in ("barrier", "long_scoreboard", "mio_throttle", "imc_miss"))


def test_optional_metrics_are_asked_for_only_where_ncu_lists_them():
    kept, left_out = profile.chosen_metrics(None)
    assert set(left_out) == set(OPTIONAL) and not set(OPTIONAL) & set(kept)
    kept, left_out = profile.chosen_metrics({"sm__pipe_tensor_op_gmma_cycles_active"})
    assert profile.GMMA_PIPE in kept and stall_metric("gmma") in left_out
    assert DURATION in kept and SMEM_LD_CONFLICTS in kept  # never filtered


def test_file_names_are_safe_and_read_back():
    stem = profile_stem("sgemm/v4_double_buffer/cuda", "4096x4096x4096")
    assert stem == "ncu-sgemm-v4_double_buffer-cuda-4096x4096x4096"
    assert profile.label_from_stem(stem) == {"implementation": "sgemm/v4_double_buffer/cuda",
                                             "shape": "4096x4096x4096", "precision": None}
    fp16 = profile_stem("sgemv/v2_vector_loads/cuda", "16384x16384", "fp16")
    assert fp16.endswith("-16384x16384-fp16") and profile.label_from_stem(fp16)["precision"] == "fp16"
    hostile = profile_stem("../../etc/passwd", "1x2;rm -rf /", "fp 16")
    assert "/" not in hostile and not hostile.startswith(".") and ".." not in hostile
    assert all(c.isalnum() or c in "_.-" for c in hostile)


def test_a_point_of_the_space_is_profiled_by_its_overrides_and_named_by_them():
    params = {"BM": 128, "HOIST": 0, "STAGES": 4}
    config = profile.parse_config(["HOIST=1", "STAGES=3,BM=64"], params)
    assert config == {"HOIST": 1, "STAGES": 3, "BM": 64}
    cmd = ncu_command("hgemm/v6_mma_sync/cuda", "4096x4096x4096", "fp16", 1, METRICS, config=config)
    assert cmd[-2:] == ["--config", "BM=64,HOIST=1,STAGES=3"]
    stem = profile_stem("hgemm/v6_mma_sync/cuda", "4096x4096x4096", "fp16", config)
    assert stem == "ncu-hgemm-v6_mma_sync-cuda-4096x4096x4096-fp16-cfg_BM_64_HOIST_1_STAGES_3"
    assert stem != profile_stem("hgemm/v6_mma_sync/cuda", "4096x4096x4096", "fp16")  # never overwrites it
    assert profile.label_from_stem(stem) == {"implementation": "hgemm/v6_mma_sync/cuda", "shape": "4096x4096x4096",
                                             "precision": "fp16"}
    for bad in (["FOO=1"], ["HOIST"], ["HOIST=x"]):
        with pytest.raises(ProfileError) as info:
            profile.parse_config(bad, params)
        assert info.value.code == 2
    # a declared config that fits itself to the shape (softmax v4, FIT=1): a point named runs as written
    fitted = {"THREADS": 1024, "ON_CHIP": 8, "FIT": 1}
    assert profile.parse_config(["THREADS=256"], fitted) == {"THREADS": 256, "FIT": 0}
    assert profile.parse_config(["THREADS=256,FIT=1"], fitted) == {"THREADS": 256, "FIT": 1}
    # the command says when it turned the fit off unasked, not when the user asked for FIT=0 or FIT=1
    assert profile.unfitted(["THREADS=256"], {"THREADS": 256, "FIT": 0}) == ["FIT=0"]
    assert profile.unfitted(["THREADS=256", "FIT=0"], {"THREADS": 256, "FIT": 0}) == []
    assert profile.unfitted(["THREADS=256,FIT=1"], {"THREADS": 256, "FIT": 1}) == []


def _no_ncu(monkeypatch):
    monkeypatch.setattr(ncu.shutil, "which", lambda name: None)
    monkeypatch.setattr(ncu, "FALLBACK_DIRS", ())
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)


def test_no_ncu_is_a_clear_error_and_writes_nothing(monkeypatch, tmp_path):
    _no_ncu(monkeypatch)
    with pytest.raises(ProfileError, match="Nsight Compute \\(ncu\\) is not on PATH") as info:
        profile.run_profile("sgemm/v1_naive/cuda", "256x256x256", out_dir=tmp_path / "out")
    assert info.value.code == 2 and not (tmp_path / "out").exists()
    assert main(["profile", "sgemm/v1_naive/cuda", "256x256x256"]) == 2


def _fake_ncu(tmp_path, monkeypatch, body: str):
    """An ncu that answers --query-metrics and --version, and runs ``body`` for a profile."""
    script = tmp_path / "bin" / "ncu"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n"
                      'case "$1" in --query-metrics) echo \'"Metric name","Metric type"\'; '
                      "echo '\"gpu__time_duration\",\"Counter\"'; exit 0;; "
                      "--version) echo 'NVIDIA (R) Nsight Compute Command Line Profiler'; "
                      "echo 'Version 2025.3.1.0 (build 1)'; exit 0;; esac\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(ncu.shutil, "which", lambda name: str(script))
    monkeypatch.setattr("study.hardware.current_device", lambda: SimpleNamespace(name="NVIDIA H200", slug="h200"))


@pytest.mark.parametrize("body, message", [
    ("exit 1\n", "failed the correctness check"),
    ("echo '==ERROR== Failed to find metric regex:^sm__bogus(.sum)?$' >&2; exit 1\n", "does not know a metric"),
    ("echo '==WARNING== No kernels were profiled.'; exit 0\n", "no kernel"),
])
def test_a_failing_profile_names_its_cause_and_writes_nothing(tmp_path, monkeypatch, body, message):
    _fake_ncu(tmp_path, monkeypatch, body)
    out = tmp_path / "out"
    with pytest.raises(ProfileError, match=message):
        profile.run_profile("sgemm/v1_naive/cuda", "256x256x256", out_dir=out)
    assert not out.exists()


def test_a_profile_saves_the_csv_and_its_sidecar(tmp_path, monkeypatch):
    (tmp_path / "ncu-output.txt").write_text(OUTPUT)
    _fake_ncu(tmp_path, monkeypatch, f"cat {tmp_path / 'ncu-output.txt'}\n")
    out = tmp_path / "profiles"
    path = profile.run_profile("sgemm/v1_naive/cuda", "256x256x256", launches=2, out_dir=out)
    assert path == out / "ncu-sgemm-v1_naive-cuda-256x256x256.csv"
    saved = path.read_text()
    assert saved.startswith('"ID","Process ID"') and "==PROF==" not in saved and "program output" not in saved
    assert parse_raw_csv(saved) == parse_raw_csv(OUTPUT)
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["implementation"] == "sgemm/v1_naive/cuda" and meta["launches"] == 2 and meta["gpu"] == "NVIDIA H200"
    assert meta["precision"] is None and meta["ncu_version"] == "Version 2025.3.1.0 (build 1)"
    assert "-m study.child ncu sgemm/v1_naive/cuda 256x256x256 2" in meta["command"]
    assert set(meta["metrics_left_out"]) == set(OPTIONAL)  # the fake ncu lists none of them
    assert any("Disconnected" in line for line in meta["ncu_log"])


def test_the_cli_renders_saved_profiles_and_refuses_bad_usage(tmp_path, capsys):
    _save(tmp_path, "ncu-sgemm-v4_double_buffer-cuda-4096x4096x4096", _csv())
    assert main(["profile", "--table", str(tmp_path)]) == 0
    assert "`sgemm/v4_double_buffer/cuda`" in capsys.readouterr().out
    md = tmp_path / "doc" / "profiles.md"
    assert main(["profile", "--table", str(tmp_path / "ncu-sgemm-v4_double_buffer-cuda-4096x4096x4096.csv"),
                 "--md", str(md)]) == 0
    assert "not_selected 2.10" in md.read_text()
    (tmp_path / "empty").mkdir()
    assert main(["profile", "--table", str(tmp_path / "empty")]) == 2
    assert main(["profile", "sgemm/v4_double_buffer/cuda"]) == 2
    assert main(["profile", "sgemm/no_such_rung/cuda", "4096x4096x4096"]) == 2
    assert main(["profile", "sgemm/v4_double_buffer/cuda", "4096x4096"]) == 2
    assert "unknown implementation" in capsys.readouterr().err


SOURCE_PAGE = (
    '"Kernel Name","k_v6",\n'
    '"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_wait","stall_selected",'
    '"stall_long_sb","stall_wait (Not Issued)"\n'
    '"0x10","      HMMA.16816.F32 R4, R8, R12, R4","60","64","50","10","0","50"\n'
    '"0x20","@!P0  HMMA.16816.F32 R16, R8, R14, R16","20","64","15","5","0","15"\n'
    '"0x30","      IMAD.WIDE R2, R3, 0x2, R6","15","128","5","5","5","5"\n'
    '"0x40","      LDSM.16.M88.4 R8, [R20]","5","16","0","2","3","0"\n')


def test_the_source_page_is_summed_by_opcode_with_its_stall_reasons(tmp_path):
    path = tmp_path / "source-k.csv"
    path.write_text(SOURCE_PAGE)
    kernel, rows = ncu.parse_source_csv(path.read_text())
    total, ops = profile_table.summarise_source(rows)
    assert kernel == "k_v6" and total == 100
    hmma = ops[0]
    assert hmma["opcode"] == "HMMA" and hmma["samples"] == 80 and hmma["executed"] == 128  # predicated one too
    assert hmma["reasons"]["wait"] == 65 and "wait (Not Issued)" not in hmma["reasons"]
    assert [o["opcode"] for o in ops] == ["HMMA", "IMAD", "LDSM"]
    text = profile_table.render_source_table(path)
    assert "| HMMA" in text and "wait 65.0 %" in text and "80.0 %" in text and "not typed" in text


def test_a_gzipped_source_page_renders_as_the_csv_does(tmp_path):
    import gzip

    plain, packed = tmp_path / "source-k.csv", tmp_path / "source-k.csv.gz"
    plain.write_text(SOURCE_PAGE)
    packed.write_bytes(gzip.compress(SOURCE_PAGE.encode()))
    render = profile_table.render_source_table
    assert render(packed).replace("source-k.csv.gz", "source-k.csv") == render(plain)
    packed.write_bytes(gzip.compress(SOURCE_PAGE.encode())[:40])  # cut short
    with pytest.raises(ValueError, match="not a whole gzip file"):
        render(packed)


def test_a_file_that_is_not_the_source_page_is_refused(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text('"ID","Kernel Name","Metric"\n"0","k","1"\n')
    with pytest.raises(ValueError, match="source page"):
        profile_table.render_source_table(path)


def test_a_profiled_point_of_the_space_is_named_with_its_config_in_row_and_notes(tmp_path):
    sidecar = {"implementation": "hgemm/v6_mma_sync/cuda", "shape": "4096x4096x4096", "precision": None,
               "config": {"HOIST": 1}, "metrics_left_out": [stall_metric("gmma")]}
    text = render_table([_save(tmp_path, "ncu-hgemm-v6-cfg_HOIST_1", _csv(), sidecar),
                         _save(tmp_path, "ncu-hgemm-v6", _csv(), {**sidecar, "config": None})])
    assert text.count("`hgemm/v6_mma_sync/cuda` (HOIST=1)") == 3  # its row and its two notes (kernels, metrics)
    assert "- `hgemm/v6_mma_sync/cuda` 4096x4096x4096: not collected there" in text  # the declared one
