"""`neurogc train` from the command line, and the `neurogc-seed` policy in a live agent."""

from __future__ import annotations

import csv
import json
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

import neurogc
from conftest import REPO, wait_for

# The seed's published datasets, committed in the repository.
SEED_DATA = REPO / "data" / "seed-neurogc"


def neurogc_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["neurogc", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def lstm_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("models") / "lstm"
    r = neurogc_cli(
        "train", "--data", str(SEED_DATA / "training_data.csv"),
        "--data", str(SEED_DATA / "more_training_data.csv"),
        "--model", "lstm", "--epochs", "20", "--threshold", "0.55", "--out", str(out), "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "agent inference matches the trained model" in r.stdout
    assert "precision" in r.stdout and "recall" in r.stdout
    return out


def test_train_saves_weights_and_description(lstm_model):
    meta = json.loads((lstm_model / "model.json").read_text())
    assert meta["architecture"] == {"kind": "lstm", "hidden": 64, "layers": 2, "dropout": 0.2}
    assert meta["window"] == 10 and meta["threshold"] == 0.55 and meta["target"] == "seed"
    assert meta["features"][:2] == ["cpu", "mem"] and len(meta["normalization"]["mean"]) == 10
    assert [Path(d["path"]).name for d in meta["data"]] == [
        "training_data.csv",
        "more_training_data.csv",
    ]
    assert meta["metrics"]["val_loss"] < 0.05
    # safetensors header: PyTorch's parameter names.
    raw = (lstm_model / "model.safetensors").read_bytes()
    header = json.loads(raw[8 : 8 + struct.unpack("<Q", raw[:8])[0]])
    assert {"lstm.weight_ih_l0", "lstm.weight_hh_l1", "lstm.bias_ih_l0", "fc.weight"} <= set(header)


def test_train_rejects_bad_data_naming_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.csv"
    lines = (SEED_DATA / "training_data.csv").read_text().splitlines()
    lines[5] = lines[5].replace(lines[5].split(",")[1], "lots", 1)
    bad.write_text("\n".join(lines) + "\n")
    r = neurogc_cli("train", "--data", str(bad), "--out", str(tmp_path / "m"), "--epochs", "1")
    assert r.returncode == 2
    assert f'{bad}:6: column "cpu": "lots" is not a number' in r.stderr
    assert not (tmp_path / "m").exists()
    r = neurogc_cli("train", "--data", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "m"))
    assert r.returncode == 2 and "nope.csv: cannot read" in r.stderr


def test_truncated_last_line_is_skipped_with_a_warning(tmp_path):
    cut = tmp_path / "cut.csv"
    text = (SEED_DATA / "training_data.csv").read_text()
    cut.write_text(text.rstrip("\n")[:-20])  # a crash mid-write
    r = neurogc_cli(
        "train", "--data", str(cut), "--out", str(tmp_path / "m"), "--epochs", "1", "-q"
    )
    assert r.returncode == 0, r.stderr
    assert "cut.csv:58: incomplete last line" in r.stderr


def run_agent(spec: str, seconds: float) -> tuple[neurogc.Agent, list[dict]]:
    agent = neurogc.start(policy=spec, interval=0.05)
    samples: list[dict] = []
    deadline = time.monotonic() + seconds
    last_time = None
    while time.monotonic() < deadline:
        s = agent.snapshot()
        if s is not None and s["time"] != last_time:
            samples.append(s)
            last_time = s["time"]
        time.sleep(0.01)
    return agent, samples


def test_seed_policy_feeds_the_model_and_collects_above_the_threshold(lstm_model, clean_gc):
    # Threshold 0: every decision fires once the window (10 samples) is full.
    agent, samples = run_agent(f"neurogc-seed:{lstm_model},threshold=0", 1.2)
    assert agent.policy == f"neurogc-seed:{lstm_model},threshold=0"
    decided = [s for s in samples if s["model_output"] is not None]
    assert decided, "the model never produced an output"
    assert all(0.0 <= s["model_output"] <= 1.0 for s in decided)
    assert all(s["model_fired"] for s in decided)
    assert samples[0]["model_output"] is None, "no output before the window is full"
    fired = [s for s in samples if "model output" in s["policy_reason"]]
    assert fired and fired[0]["policy_action"].startswith("collect(2)")
    assert agent.totals()["policy_collections"] >= len(decided) - 1
    assert gc_enabled_throughout(samples), "the seed's policy leaves automatic GC on"
    agent.stop()
    # Threshold 1: the model speaks, nothing fires.
    agent, samples = run_agent(f"neurogc-seed:{lstm_model},threshold=1", 0.9)
    decided = [s for s in samples if s["model_output"] is not None]
    assert decided and not any(s["model_fired"] for s in decided)
    assert agent.totals()["policy_collections"] == 0


def gc_enabled_throughout(samples: list[dict]) -> bool:
    return all(s["gc_enabled"] for s in samples)


def corrupt(model: Path, dest: Path, how: str) -> Path:
    shutil.copytree(model, dest)
    weights = dest / "model.safetensors"
    if how == "truncated":
        weights.write_bytes(weights.read_bytes()[:1000])
    elif how == "nan":
        raw = bytearray(weights.read_bytes())
        n = struct.unpack("<Q", raw[:8])[0]
        raw[8 + n : 8 + n + 4] = struct.pack("<f", float("nan"))
        weights.write_bytes(bytes(raw))
    elif how == "shape":
        meta = json.loads((dest / "model.json").read_text())
        meta["architecture"]["hidden"] = 32
        (dest / "model.json").write_text(json.dumps(meta))
    elif how == "json":
        (dest / "model.json").write_text("{not json")
    return dest


@pytest.mark.parametrize(
    "how, message",
    [
        ("truncated", "not a safetensors file"),
        ("nan", "non-finite value"),
        ("shape", "has shape [256, 10], expected [128, 10]"),
        ("json", "not a valid model description"),
        ("missing", "model directory not found"),
    ],
)
def test_a_bad_model_falls_back_to_default_and_says_why(
    lstm_model, tmp_path, how, message, clean_gc, caplog
):
    target = tmp_path / "missing" if how == "missing" else corrupt(lstm_model, tmp_path / how, how)
    samples_csv = tmp_path / "samples.csv"
    agent = neurogc.start(policy=f"neurogc-seed:{target}", interval=0.05, csv=samples_csv)
    assert agent.running
    assert agent.policy == "default" and agent.requested_policy == f"neurogc-seed:{target}"
    assert any(
        message in r.getMessage() and "falling back" in r.getMessage() for r in caplog.records
    ), [r.getMessage() for r in caplog.records]
    wait_for(agent.snapshot, 5, "a sample")
    agent.stop()
    with samples_csv.open() as f:
        first = next(csv.DictReader(f))
    assert first["policy"] == "default"
    assert first["policy_action"] == "fallback to default" and message in first["policy_reason"]
