"""The CPU demo experiment as the experiment tests run it (tests/experiment/, tests/engine/)."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "evals" / "experiments" / "cpu_demo.yaml"


def demo_config(tmp_path: Path) -> Path:
    """The demo's config with one repeat, its relative paths made absolute."""
    data = yaml.safe_load(DEMO.read_text())
    base = DEMO.parent
    for spec in data["graphs"].values():
        spec["model"] = "scripted/" + str(base / spec["model"].removeprefix("scripted/"))
    data["docs"] = [str(base / d) for d in data["docs"]]
    data["repeats"], data["seeds"] = 1, [0]
    path = tmp_path / "cpu_demo.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
