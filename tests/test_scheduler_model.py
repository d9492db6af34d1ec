"""The `neurogc` scheduler's model: trained on recorded runs, loaded by the agent (`neurogc:DIR`),
and refused or fallen back from, clearly, when it cannot be used."""

from __future__ import annotations

import csv
import json
import subprocess
import time
from pathlib import Path

import pytest

import neurogc
from conftest import REPO, wait_for

# A recorded large-heap bench run (default, freeze:3, neurogc; requests.csv in every trial),
# committed for the simulator's tests.
RUN = REPO / "crates" / "neurogc-sim" / "tests" / "fixtures" / "large-heap"


def neurogc_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["neurogc", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def scheduler_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("models") / "scheduler"
    r = neurogc_cli("train", "--model", "scheduler", "--data", str(RUN), "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    assert "held out: Brier" in r.stdout and "the online survival estimate" in r.stdout
    assert "agent inference matches the trained net" in r.stdout
    return out


def full_pauses(trial: Path) -> list[float]:
    with (trial / "gc-events.csv").open() as f:
        return [float(e["pause_ms"]) for e in csv.DictReader(f) if e["generation"] == "2"]


def test_training_on_a_run_learns_the_quiet_net_and_the_service_priors(scheduler_model):
    meta = json.loads((scheduler_model / "model.json").read_text())
    assert meta["format"] == "neurogc-scheduler/1"
    quiet = meta["quiet"]
    m = quiet["metrics"]
    assert (
        quiet["gaps"] == 16 and m["val_examples"] > 100 and m["train_examples"] > m["val_examples"]
    )
    # The net is used only where it did better than the survival estimate on both scores.
    better = (
        m["val_log_loss"] < m["val_log_loss_survival"] and m["val_brier"] < m["val_brier_survival"]
    )
    assert quiet["use_net"] == better, m
    priors = meta["priors"]
    # Only the default trial ran the heap unfrozen: the prior is the median of its full pauses.
    pauses = full_pauses(RUN / "trials" / "01-default-r1")
    assert min(pauses) <= priors["full_pause_ms"] <= max(pauses), (priors, pauses)
    assert priors["collections"] >= 1
    assert meta["data"][0]["service"] == "large-heap" and meta["data"][0]["trials"] == 3


def start_and_first_sample(policy: str, tmp_path: Path) -> tuple[neurogc.Agent, dict]:
    samples = tmp_path / "samples.csv"
    agent = neurogc.start(policy=policy, interval=0.05, csv=samples)
    wait_for(agent.snapshot, 5, "a sample")
    agent.stop()
    with samples.open() as f:
        return agent, next(csv.DictReader(f))


def test_the_agent_runs_the_scheduler_with_its_model(scheduler_model, tmp_path, clean_gc):
    agent, first = start_and_first_sample(f"neurogc:{scheduler_model},warmup=10s", tmp_path)
    assert agent.policy == f"neurogc:{scheduler_model},warmup=10s"
    assert "model trained on 1 run(s)" in first["policy_reason"], first["policy_reason"]
    # What answers the quiet-window question is what the model says was shown better.
    use_net = json.loads((scheduler_model / "model.json").read_text())["quiet"]["use_net"]
    by = "quiet windows by its net" if use_net else "quiet windows by the online estimate"
    assert by in first["policy_reason"], first["policy_reason"]


@pytest.mark.parametrize("how", ["missing", "seed", "broken"])
def test_a_model_it_cannot_use_falls_back_to_the_scheduler_without_it(
    scheduler_model, tmp_path, how, clean_gc, caplog
):
    target = tmp_path / how
    if how == "seed":
        target.mkdir()
        (target / "model.json").write_text(json.dumps({"format": "neurogc-model/1"}))
        message = "not a scheduler model"
    elif how == "broken":
        target.mkdir()
        (target / "model.json").write_text((scheduler_model / "model.json").read_text())
        (target / "model.safetensors").write_bytes(b"\0" * 64)
        message = "not a safetensors file"
    else:
        message = "model directory not found"
    agent, first = start_and_first_sample(f"neurogc:{target},warmup=10s", tmp_path)
    # The scheduler without its model, with the options it was given.
    assert agent.policy == "neurogc,warmup=10s"
    assert agent.requested_policy == f"neurogc:{target},warmup=10s"
    logged = [r.getMessage() for r in caplog.records]
    assert any(message in m and 'falling back to "neurogc,warmup=10s"' in m for m in logged), logged
    assert first["policy_action"] == "fallback to neurogc,warmup=10s"
    assert message in first["policy_reason"]


def test_bench_and_run_refuse_a_model_they_cannot_load_naming_it(tmp_path):
    missing = tmp_path / "nope"
    for args in (
        ["bench", "--policy", f"neurogc:{missing}", "--rate", "10", "--runs-dir", str(tmp_path)],
        ["run", "--policy", f"neurogc:{missing}", "--", "python", "-c", "pass"],
    ):
        r = neurogc_cli(*args, timeout=60)
        assert r.returncode != 0 and str(missing) in r.stderr and "not found" in r.stderr, r.stderr
    r = neurogc_cli(
        "train",
        "--model",
        "scheduler",
        "--data",
        str(RUN / "run.json"),
        "--out",
        str(tmp_path / "m"),
    )
    assert r.returncode != 0 and "run.json" in r.stderr and "not files" in r.stderr, r.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_explore_then_train_then_bench_with_the_model(tmp_path):
    """The whole loop on a small large-heap service: collect --explore, train, bench."""
    small = ["--workload", "large-heap", "--set", "heap_objects=300000"]
    r = neurogc_cli(
        "collect", *small, "--explore", "500ms", "--rate", "40", "--run-time", "12s",
        "--warmup", "3s", "--runs-dir", str(tmp_path), "--name", "explore", "--no-dashboard",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    (run,) = [d for d in tmp_path.iterdir() if d.name.endswith("explore")]
    (trial,) = (run / "trials").iterdir()
    with (trial / "gc-events.csv").open() as f:
        explored = [e for e in csv.DictReader(f) if e["trigger"] == "explore"]
    assert len(explored) >= 5 and {e["generation"] for e in explored} <= {"1", "2"}, explored
    model = tmp_path / "model"
    r = neurogc_cli("train", "--model", "scheduler", "--data", str(run), "--out", str(model))
    assert r.returncode == 0, r.stderr
    priors = json.loads((model / "model.json").read_text())["priors"]
    # The explore collections priced the heap and what each request leaves to free. (The
    # pause's growth per request is left out: on a 300k-object heap a few thousand objects
    # more are within the pause's noise, so its slope is as often fitted as not.)
    assert priors["collections"] >= 5 and priors["full_pause_ms"] > 0, priors
    assert priors["freed_per_request"] > 0, priors
    started = time.monotonic()
    r = neurogc_cli(
        "bench", *small, "--policy", "neurogc", "--policy", f"neurogc:{model}", "--mode", "turns",
        "--rate", "40", "--repeat", "1", "--duration", "8s", "--slice", "4s", "--warmup", "5s",
        "--runs-dir", str(tmp_path), "--name", "bench", "--no-dashboard",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - started < 120
    (bench,) = [d for d in tmp_path.iterdir() if d.name.endswith("bench")]
    info = json.loads((bench / "run.json").read_text())
    assert [p["label"] for p in info["policies"]] == ["neurogc", "neurogc-model"]
    (with_model,) = [t for t in info["trials"] if t["label"] == "neurogc-model"]
    with (bench / with_model["dir"] / "samples.csv").open() as f:
        reasons = [row["policy_reason"] for row in csv.DictReader(f)]
    assert any("model trained on 1 run(s)" in x for x in reasons), reasons[:3]
