"""`neurogc sweep`, end to end: the real binary runs a real training loop (or a plain script)
under every configuration, interleaved, and writes the report. Tiny sizes: seconds, not minutes."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO, processes_mentioning, wait_for

NEUROGC = REPO / "target" / "release" / "neurogc"
DEFAULT_CONFIGS = [
    "default",
    "disable",
    "every:50,gen=1",
    "every:100,gen=2",
    "freeze:10",
    "learned",
]
AA = "default (A/A)"  # --aa: default once more each round, under its own name
SWEPT = [*DEFAULT_CONFIGS, AA]


def sweep(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(NEUROGC), "sweep", *args], capture_output=True, text=True, timeout=timeout
    )


def test_sweep_of_the_micrograd_loop_writes_a_complete_report(tmp_path):
    out = tmp_path / "sweep"
    r = sweep("--repeats", "2", "--aa", "--out", str(out), "--",
              sys.executable, "-m", "neurogc.loops", "micrograd", "--steps", "20",
              "--set", "batch=4", "--set", "hidden=8")  # fmt: skip
    assert r.returncode == 0, r.stderr
    record = json.loads((out / "sweep.json").read_text())
    assert record["status"] == "complete"
    assert record["configs"] == SWEPT and record["aa"] == AA
    assert len(record["runs"]) == 14
    # Interleaved: round 1 runs every configuration before round 2 starts, the order rotated.
    assert [run["round"] for run in record["runs"]] == [1] * 7 + [2] * 7
    assert [run["config"] for run in record["runs"][:7]] == SWEPT
    assert [run["config"] for run in record["runs"][7:]] == SWEPT[1:] + ["default"]
    for run in record["runs"]:
        assert run["exit_code"] == 0 and run["steps"] == 20, run
        assert run["peak_rss_bytes"] > 1 << 20
        rows = list(csv.DictReader((out / run["dir"] / "steps.csv").open()))
        # The A/A copy runs default's policy.
        policy = "default" if run["config"] == AA else run["config"]
        assert {row["policy"] for row in rows} == {policy}
    readme = (out / "README.md").read_text()
    for config in SWEPT:
        assert f"| `{config}` |" in readme, config
    for section in ("## Configurations", "## Against `default`", "## Against the recommendation",
                    "## Collections", "## Runs", "## Method"):  # fmt: skip
        assert section in readme, section
    assert "![step time](step-time.png)" in readme
    assert (out / "step-time.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The terminal: every configuration's times, hyperfine's sentences, the recommendation.
    lines = r.stdout.splitlines()
    for config in DEFAULT_CONFIGS:
        assert any(line.startswith(f"{config} ") and " p99 " in line for line in lines), config
    speed = [line for line in lines if " times " in line and line.endswith(
        ("than default", "than default (not significant)"))]  # fmt: skip
    assert len(speed) == 6, r.stdout
    (aa_line,) = [line for line in lines if line.startswith("A/A: ")]
    assert aa_line.startswith(f"A/A: {AA} against default, the same configuration"), aa_line
    assert aa_line in readme
    recommendation = [line for line in lines if line.startswith("recommendation: ")]
    assert len(recommendation) == 1, r.stdout
    best = recommendation[0].removeprefix("recommendation: ").split(" (")[0]
    assert best in DEFAULT_CONFIGS  # never the A/A copy
    assert f"**{recommendation[0]}**" in readme
    # learned's standing is said: the recommendation, or what it loses by.
    assert any(line.startswith("learned: ") for line in lines), r.stdout
    # The medians for scripts: every configuration, every metric, the same recommendation.
    summary = json.loads((out / "summary.json").read_text())
    assert summary["baseline"] == "default" and summary["best"] == best
    assert [c["name"] for c in summary["configs"]] == SWEPT
    for c in summary["configs"]:
        assert c["runs"] == 2
        assert set(c["medians"]) == {"mean_ms", "p50_ms", "p99_ms", "max_ms", "gc_share",
                                     "peak_rss_bytes"}, c  # fmt: skip
        p99 = c["medians"]["p99_ms"]
        assert 0 < p99["lower"] <= p99["estimate"] <= p99["upper"], c
    # The A/A pair, and learned against every other configuration but the copy, round by round:
    # what the bar's check reads.
    assert summary["aa"]["name"] == AA and summary["aa"]["against"] == "default"
    assert set(summary["aa"]["metrics"]) >= {"mean_ms", "p99_ms", "peak_rss_bytes"}
    pairs = summary["learned_against"]
    assert [p["against"] for p in pairs] == DEFAULT_CONFIGS[:-1]
    for pair in pairs:
        assert pair["learned"] == "learned"
        p99 = pair["metrics"]["p99_ms"]
        assert 0 < p99["ratio"]["lower"] <= p99["ratio"]["estimate"] <= p99["ratio"]["upper"]
        assert isinstance(p99["significant"], bool)
    # The bench's table of the bar reads it (bench/sweep/summarize.py, over a folder of loops).
    table = subprocess.run([sys.executable, str(REPO / "bench/sweep/summarize.py"), str(tmp_path)],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    bars = [line for line in table.splitlines() if line.startswith("| p99 vs best fixed |")]
    assert len(bars) == 1, table
    assert bars[0].rstrip(" |").endswith(("n.s.", "significant")), bars[0]
    (aa_row,) = [line for line in table.splitlines() if line.startswith("A/A, ")]
    assert aa_row.count(" [") == 3, aa_row  # p99, mean and peak RSS, each with its interval


def test_step_function_makes_an_unchanged_script_a_training_loop(tmp_path):
    script = tmp_path / "plain_train.py"
    script.write_text(
        "import sys\n"
        "class Node:\n"
        "    def __init__(self, parent=None):\n"
        "        self.parent, self.kids = parent, []\n"
        "        if parent is not None:\n"
        "            parent.kids.append(self)\n"
        "def train_step(n):\n"
        "    root = Node()\n"
        "    for _ in range(n):\n"
        "        Node(root)\n"
        "for _ in range(int(sys.argv[1])):\n"
        "    train_step(2000)\n"
    )
    assert "neurogc" not in script.read_text()  # never imports it
    out = tmp_path / "sweep"
    r = sweep("--configs", "default,every:1,gen=1", "--repeats", "2", "--out", str(out),
              "--step-function", "plain_train:train_step", "--",
              sys.executable, str(script), "12")  # fmt: skip
    assert r.returncode == 0, r.stderr
    record = json.loads((out / "sweep.json").read_text())
    assert [run["steps"] for run in record["runs"]] == [12] * 4
    rows = list(csv.DictReader((out / record["runs"][1]["dir"] / "steps.csv").open()))
    assert rows[0]["policy"] == "every:1,gen=1"
    # every step ends with the policy's young collection, which frees that step's tree
    assert all(row["action"] == "collect" and row["boundary_gen"] == "1" for row in rows)
    assert all(int(row["boundary_collected"]) >= 2000 for row in rows)
    assert "recommendation: " in r.stdout
    assert "Steps: each call of `plain_train:train_step`" in (out / "README.md").read_text()


def test_bad_input_is_named(tmp_path):
    out = tmp_path / "never"
    r = sweep("--configs", "default,evry:5", "--out", str(out), "--",
              sys.executable, "-m", "neurogc.loops", "micrograd", "--steps", "2")  # fmt: skip
    assert r.returncode == 2
    assert "unknown configuration" in r.stderr and "'evry:5'" in r.stderr, r.stderr
    assert not out.exists(), "nothing runs before the configurations are checked"

    r = sweep("--configs", "gen=2,default", "--", sys.executable, "-c", "1")
    assert r.returncode == 2 and '"gen=2"' in r.stderr, r.stderr

    r = sweep("--step-function", "train_step", "--", sys.executable, "-c", "1")
    assert r.returncode == 2 and '"train_step" is not MODULE:QUALNAME' in r.stderr, r.stderr

    # A script that records no steps: the error names it and says what to do.
    script = tmp_path / "no_steps.py"
    script.write_text("print('trained')\n")
    r = sweep("--configs", "default", "--repeats", "1", "--out", str(tmp_path / "s"), "--",
              sys.executable, str(script))  # fmt: skip
    assert r.returncode == 2
    assert str(script) in r.stderr and "recorded no steps" in r.stderr, r.stderr
    assert "--step-function MODULE:QUALNAME" in r.stderr and "gc_steps.step()" in r.stderr
    record = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert record["status"] == "failed" and "recorded no steps" in record["error"]

    # A script that fails: its exit code and the end of its output.
    script.write_text("import sys\nprint('out of data', file=sys.stderr)\nsys.exit(3)\n")
    r = sweep("--configs", "default", "--repeats", "1", "--out", str(tmp_path / "f"), "--",
              sys.executable, str(script))  # fmt: skip
    assert r.returncode == 2
    assert "exited with 3" in r.stderr and "out of data" in r.stderr, r.stderr
    assert Path(tmp_path / "f" / "runs" / "01-default-r1" / "output.log").exists()


def test_kill_9_of_the_sweep_leaves_no_process_behind(tmp_path):
    """`kill -9` of `neurogc sweep` (no chance to clean up): the training script it runs, and a
    process the script started, die with it."""
    token = f"neurogc-sweep-kill-{tmp_path.name}"
    script = tmp_path / "train.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', sys.argv[1]])\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [str(NEUROGC), "sweep", "--repeats", "1", "--out", str(tmp_path / "sweep"), "--",
         sys.executable, str(script), token],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(lambda: len(processes_mentioning(token)) >= 2, 30, "the script and its child")
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    wait_for(lambda: not processes_mentioning(token), 10, "the script to die with the sweep")
