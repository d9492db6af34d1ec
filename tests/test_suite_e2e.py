"""`neurogc suite` end to end: real workloads, real agent, real load generator, the scoreboard."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from test_bench_e2e import png_decodes

from conftest import REPO, processes_mentioning

NEUROGC = REPO / "target" / "release" / "neurogc"


def neurogc(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEUROGC), *args], capture_output=True, text=True, timeout=timeout)


def test_two_workloads_by_two_policies_give_a_complete_scoreboard(tmp_path):
    out = neurogc(
        "suite", "--workloads", "seed,large-heap", "--policies", "default,freeze:1,again=default",
        "--repeat", "2", "--turn", "1s", "--warmup", "1500ms", "--rate", "30",
        "--runs-dir", str(tmp_path),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "ETA" in out.stderr, "a progress line with the suite's ETA"
    (suite,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    info = json.loads((suite / "suite.json").read_text())
    assert info["status"] == "complete"
    assert [w["name"] for w in info["workloads"]] == ["seed", "large-heap"]
    board = json.loads((suite / "scoreboard.json").read_text())
    for w, entry in zip(board["workloads"], info["workloads"]):
        # `again` is `default` run a second time: an A/A pair, never a recipe of its own.
        assert w["best_fixed"] in ("default", "freeze:1"), w
        cells = {c["label"]: c for c in w["cells"]}
        assert set(cells) == {"default", "freeze:1", "again"}
        assert cells["again"]["same_policy_as"] == "default", cells["again"]
        assert cells["again"]["to_same"]["estimate"] > 0
        assert cells["default"]["same_policy_as"] is None
        for c in cells.values():
            assert c["kind"] == "fixed" and c["rounds"] == 2, c
            assert c["p99_ms"]["median"] > 0 and c["rss_peak_mib"]["median"] > 10
            assert c["cpu_ms_per_request"]["median"] > 0
            assert c["to_best"]["estimate"] > 0
        assert cells[w["best_fixed"]]["to_best"]["estimate"] == 1.0
        # The best fixed policy keeps within the memory bound: 1.10 x the default's peak RSS.
        assert cells["default"]["rss_to_default"] == 1.0
        assert cells[w["best_fixed"]]["rss_to_default"] <= 1.10, cells
        # Each workload is a turns bench: one trial per policy, one turn line per round.
        run = suite / entry["run"]
        run_info = json.loads((run / "run.json").read_text())
        assert run_info["mode"] == "turns" and run_info["app"]["workload"] == w["name"]
        started = []
        for t in run_info["trials"]:
            lines = (run / t["dir"] / "load.jsonl").read_text().splitlines()
            turns = [json.loads(x) for x in lines if '"type":"turn"' in x]
            assert [x["turn"] for x in turns] == [0, 1], t
            started.append(json.loads((run / t["dir"] / "trial.json").read_text())["started"])
        # A throwaway server took the first start: it served its warm-up before any scored
        # server started, and is no trial.
        assert run_info["primer"] is True
        primer = run / "primer-r1"
        assert "primer" not in [t["dir"] for t in run_info["trials"]]
        rows = (primer / "samples.csv").read_text().splitlines()
        first_sample = float(rows[1].split(",")[0])
        assert first_sample < min(started), (first_sample, started)
        assert "default" in rows[1], "the primer ran the default policy"
        assert (run / "README.md").exists()
    readme = (suite / "README.md").read_text()
    assert "## Scoreboard: p99 against the best fixed policy of each workload" in readme
    assert "| seed |" in readme and "| large-heap |" in readme
    assert "## Is one fixed policy best on every workload?" in readme
    assert "## The same policy twice: A/A pairs in this run" in readme
    assert "| seed | again | default |" in readme
    assert "Before them a throwaway server under `default`" in readme
    assert "fixed 30 req/s" in readme
    assert png_decodes(suite / "heatmap.png")[0] > 300
    assert processes_mentioning(str(suite)) == []
    # Scored again from what was recorded, without running anything.
    (suite / "README.md").unlink()
    again = neurogc("suite", "--rescore", str(suite))
    assert again.returncode == 0, again.stderr
    assert (suite / "README.md").read_text() == readme
    missing = neurogc("suite", "--rescore", str(tmp_path / "nope"))
    assert missing.returncode != 0 and "--rescore" in missing.stderr, missing.stderr


def test_a_capacity_found_by_the_explore_run_is_checked_again_before_the_bench(tmp_path):
    """The explore runs all come before the first bench, and the machine's speed drifts: the
    bench probes the capacity the explore run found once more before its load, and says so."""
    out = neurogc(
        "suite", "--quick", "--workloads", "seed", "--policies", "default,neurogc-own",
        "--repeat", "1", "--turn", "1s", "--warmup", "1500ms", "--runs-dir", str(tmp_path),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (suite,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    info = json.loads((suite / "suite.json").read_text())
    (entry,) = info["workloads"]
    explored = json.loads((suite / entry["collect"] / "rate-search.json").read_text())
    assert "recheck" not in explored, "the explore run searched: nothing earlier to check"
    benched = json.loads((suite / entry["run"] / "rate-search.json").read_text())
    check = benched["recheck"]
    assert check["earlier_rps"] == explored["sustainable_rps"], (check, explored)
    assert check["label"] == explored["limited_by"] == "default"
    assert [p["rate"] for p in check["probes"]][:1] == [explored["sustainable_rps"]], check
    held = check["probes"][-1]["sustained"]
    if held:
        # Sustained again: the explore run's search stands, and the bench runs at its share.
        assert benched["sustainable_rps"] == explored["sustainable_rps"]
        assert benched["policies"] == explored["policies"]
        said = "sustained it again"
    else:
        # Not sustained (a slower machine, or a pause inside the one probe): a new search, on
        # the bench's own servers, whose capacity stands whatever it finds.
        assert (suite / entry["run"] / "rate-search" / "default").is_dir()
        assert benched["policies"] != explored["policies"], benched
        assert benched["sustainable_rps"] == min(
            p["sustainable_rps"] for p in benched["policies"]
        ), benched
        said = "no longer sustained it"
    assert 0.55 <= benched["rate"] / benched["sustainable_rps"] <= 0.65, benched
    (trial,) = [t for t in json.loads((suite / entry["run"] / "run.json").read_text())["trials"]
                if t["label"] == "default"]  # fmt: skip
    load = (suite / entry["run"] / trial["dir"] / "load.jsonl").read_text().splitlines()
    assert json.loads(load[-1])["target_rate"] == benched["rate"]
    readme = (suite / "README.md").read_text()
    assert f"found earlier was checked before the load: default {said}" in readme, readme


@pytest.mark.parametrize(
    "args, message",
    [
        (["--workloads", "seed,nope"], 'unknown workload "nope"; known: seed, large-heap'),
        (["--policies", "default,sometimes"], '"sometimes"'),
        (["--policies", "threshold:abc"], "threshold:abc"),
        (["--fraction", "2"], "--fraction 2"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, args, message):
    started = time.monotonic()
    out = neurogc("suite", *args, "--runs-dir", str(tmp_path), timeout=60)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert message in out.stderr, out.stderr
    assert time.monotonic() - started < 15
    assert not any(tmp_path.iterdir()), "nothing started, nothing written"


@pytest.mark.slow
def test_rate_auto_finds_the_same_capacity_with_long_pauses_as_with_gc_off(tmp_path):
    """Capacity is the service's: probed under `periodic:5`, a full collection of the large heap
    every 5 s (a pause of hundreds of ms in about every 5 s probe), it stays near the GC-off
    server's. (Judged by its p99, a probe with one such pause would fail at any rate: 17 req/s
    was "sustained" that way.) Within 20 %, as the issue asks: three bisection steps put two
    searches of one capacity within 9 % of each other (two steps left 19 % to quantisation alone).

    The pauses' own cost is kept small, so that the capacity under test is the same service's:
    a 300 ms pause every 5 s is 6 % of the time, and the queue it leaves near capacity (utilisation
    90 %: 300 ms / 0.1 = 3 s to drain) is gone before the next. Not `default`: its collections cost
    CPU in proportion to the request rate (about 1.5 ms per request on this app, a fifth of the
    GC-off service time), so its capacity really is lower (CI: 100 against 130 req/s). Nor a
    pause every 3 s: its queue does not drain between pauses, which costs more than the pauses'
    9 % (CI: 110 against 140 req/s)."""

    def search(policy: str, attempt: int) -> float:
        runs = tmp_path / f"{policy.replace(':', '-')}-{attempt}"
        out = neurogc(
            "bench", "--workload", "large-heap", "--policy", "default", "--rate", "auto",
            "--rate-policy", policy, "--rate-start", "40", "--probe-time", "5s",
            "--repeat", "1", "--duration", "1s", "--warmup", "3s",
            "--runs-dir", str(runs), "--no-dashboard", "--no-report", timeout=400,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        (run,) = [d for d in runs.iterdir() if d.is_dir()]
        found = json.loads((run / "rate-search.json").read_text())
        if policy != "gc-off":
            # Its probes did see long pauses, and were not judged by them.
            (events,) = (run / "rate-search").glob("periodic*/gc-events.csv")
            gc = events.read_text().splitlines()
            full = [float(r.split(",")[2]) for r in gc[1:] if r.split(",")[1] == "2"]
            long_pauses = [ms for ms in full if ms > 100]
            (probed,) = [p for p in found["policies"] if p["label"] == policy]
            assert len(long_pauses) >= len(probed["probes"]) // 2, (full, probed)
        return found["sustainable_rps"]

    def within(found: dict[str, list[float]]) -> bool:
        gc_off, periodic = max(found["gc-off"]), max(found["periodic:5"])
        return 0.8 * gc_off <= periodic <= 1.2 * gc_off

    found = {policy: [search(policy, 1)] for policy in ("gc-off", "periodic:5")}
    if not within(found):
        # A busy machine only ever lowers what a search finds (CI once found 87 req/s with GC
        # off, then 160 under periodic:5): the lower one searches again, and each policy counts
        # its best search.
        lower = min(found, key=lambda policy: max(found[policy]))
        found[lower].append(search(lower, 2))
    assert within(found), found


@pytest.mark.slow
def test_rate_auto_probes_a_bursty_service_steadily_then_runs_it_in_bursts(tmp_path):
    """The capacity search sends steadily whatever bursts the task file asks for (its idle gaps
    would make every probe miss its target rate), under the collector off and the default alike,
    and every policy runs at a share of the lower capacity; the measured trial has its bursts."""
    out = neurogc(
        "bench", "--workload", "bursty", "--policy", "default", "--rate", "auto",
        "--rate-start", "40", "--probe-time", "1s", "--repeat", "1", "--duration", "8s",
        "--warmup", "1s", "--runs-dir", str(tmp_path), "--no-dashboard", "--no-report",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (run,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    search = json.loads((run / "rate-search.json").read_text())
    found = {p["label"]: p for p in search["policies"]}
    assert set(found) == {"gc-off", "default"}, found
    for p in found.values():
        first = p["probes"][0]
        assert first["sustained"] and first["achieved"] >= 0.95 * first["rate"], first
        # The search went on past its first probe. (Not a fixed capacity: on a slow day this
        # machine sustained 74 req/s under the default, where the test had asked for 80.)
        assert p["sustainable_rps"] > first["rate"], p
    lowest = min(found.values(), key=lambda p: p["sustainable_rps"])
    assert search["limited_by"] == lowest["label"], search
    assert search["sustainable_rps"] == lowest["sustainable_rps"]
    (trial,) = json.loads((run / "run.json").read_text())["trials"]
    summary = json.loads((run / trial["dir"] / "load.jsonl").read_text().splitlines()[-1])
    assert summary["target_rate"] == search["rate"]
    # Idle gaps of 0.2-3 s between bursts of 0.3-2 s: well under the offered rate on average.
    assert 0 < summary["achieved_rate"] < 0.85 * search["rate"], summary
