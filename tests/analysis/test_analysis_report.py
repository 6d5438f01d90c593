"""`kernelseek report RUN`: the HTML page and its PNGs, opened and checked for what they show."""

from __future__ import annotations

import base64
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
from typer.testing import CliRunner

from kernelseek.analysis.report import KIND_COLOURS, PLOT_FILES
from kernelseek.cli import app

SESSIONS = Path(__file__).parents[1] / "fixtures" / "sessions"
A = SESSIONS / "session-a"


class Page(HTMLParser):
    """Collects the img sources and every table's cells, by table class."""

    def __init__(self):
        super().__init__()
        self.images: list[str] = []
        self.sources: dict[str, str] = {}  # img id -> src
        self.tables: dict[str, list[list[str]]] = {}
        self.facts: dict[str, str] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._fact: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["id"])
            self.sources[attrs["id"]] = attrs["src"]
        elif tag == "table":
            self._table = attrs.get("class", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag == "td":
            self._cell = []
            self._fact = attrs.get("data-fact")

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            text = "".join(self._cell)
            self.tables[self._table][-1].append(text)
            if self._fact:
                self.facts[self._fact] = text
            self._cell = None
        elif tag == "table":
            self._table = None


def rows(page: Page, name: str) -> list[list[str]]:
    return [r for r in page.tables[name] if r]


def colour_pixels(image: np.ndarray, hex_colour: str, tolerance: float = 0.02) -> int:
    rgb = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((np.abs(image[..., :3] - rgb).max(axis=-1) < tolerance).sum())


@pytest.mark.slow
def test_report_writes_html_and_plots_with_the_right_content(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(A), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = Page()
    page.feed((out / "report.html").read_text())
    assert page.images == ["best_speedup", "scenarios", "cost"]
    for name in page.images:  # inlined: the page alone shows its plots
        assert page.sources[name] == "data:image/png;base64," + base64.b64encode((out / f"{name}.png").read_bytes()).decode()
    assert page.facts["run"] == "session-a" and page.facts["best speedup"] == "1.06"
    assert page.facts["best candidate"] == "c12" and page.facts["evaluations"] == "14"
    assert page.facts["wrong candidates"] == "2" and page.facts["model tool calls"] == "29"
    assert rows(page, "kinds") == [["layer_shift", "2", "2", "1.146"], ["reject_limit", "2", "2", "1.37"],
                                   ["inform", "2", "0", "1.014"], ["other", "3", "0", "1"]]
    assert len(rows(page, "questions")) == 9 and len(rows(page, "gains")) == 4
    assert rows(page, "scenarios") == [["small", "0.848"], ["medium", "1.06"], ["large", "1.325"]]

    for name in PLOT_FILES:
        image = mpimg.imread(out / name)
        assert image.shape[:2] == (450, 900), name  # 9 x 4.5 inches at 100 dpi
        assert image[..., :3].std() > 0.05, name  # not blank
        assert len(np.unique((image[..., :3] * 255).astype(int).reshape(-1, 3), axis=0)) > 20, name
    speed = mpimg.imread(out / "best_speedup.png")
    for kind in ("layer_shift", "reject_limit", "inform", "other"):  # question markers coloured by kind
        assert colour_pixels(speed, KIND_COLOURS[kind]) > 50, kind
    assert colour_pixels(speed, "#ffbf00") > 50  # the large-gain stars
    bars = mpimg.imread(out / "scenarios.png")
    assert colour_pixels(bars, "#2ca02c") > 5000 and colour_pixels(bars, "#d62728") > 5000  # two wins, one loss
    cost = mpimg.imread(out / "cost.png")
    assert colour_pixels(cost, "#ff7f0e") > 200


@pytest.mark.slow
def test_report_without_a_report_json_says_so(tmp_path):
    run = tmp_path / "session-a"
    shutil.copytree(A, run)
    shutil.rmtree(run / "candidates")
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    html = (run / "report" / "report.html").read_text()
    assert "no report JSON found for the best candidate c12" in html
    assert re.search(r'<img id="scenarios" alt="[^"]*" src="data:image/png;base64,', html)
    image = mpimg.imread(run / "report" / "scenarios.png")
    assert image[..., :3].std() > 0.01  # the note is drawn


def with_holdout(tmp_path: Path) -> Path:
    """session-a, its best candidate's full judgement carrying a hold-out (trace event and report JSON)."""
    run = tmp_path / "session-a"
    shutil.copytree(A, run)
    trace = run / "trace.jsonl"
    lines = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("key") == "12:eval-c12-full":
            event["holdout"] = {"n": 3, "seed": 77, "correct": 3, "speedup": 0.954}
        lines.append(json.dumps(event))
    trace.write_text("\n".join(lines) + "\n")
    report = json.loads((run / "candidates" / "c12.json").read_text())
    report["scenarios"] += [{"scenario": f"holdout_s77_0{i}_rows{i}", "group": "holdout_rows", "correct": True,
                             "speedup": v, "holdout": True} for i, v in enumerate((1.2, 0.7, 1.04))]
    report["holdout"] = {"n": 3, "seed": 77, "correct": 3, "speedup": 0.954, "groups": {}}
    (run / "candidates" / "c12.json").write_text(json.dumps(report))
    return run


@pytest.mark.slow
def test_report_shows_the_gap_between_suite_and_holdout_for_the_best(tmp_path):
    run = with_holdout(tmp_path)
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert "best kernel's hold-out: 3/3 correct, geomean 0.954x vs the suite's 1.060x: 0.900x the suite's (seed 77)" \
        in " ".join(result.output.split())
    page = Page()
    page.feed((run / "report" / "report.html").read_text())
    assert page.facts["best hold-out"].startswith("3/3 correct, geomean 0.954x")
    assert page.facts["hold-out gap"] == "-10.0%"
    # the suite's per-scenario table stays the suite's; the hold-out has its own, slowest first
    assert rows(page, "scenarios") == [["small", "0.848"], ["medium", "1.06"], ["large", "1.325"]]
    assert [r[0] for r in rows(page, "holdout")] == ["holdout_s77_01_rows1", "holdout_s77_02_rows2",
                                                     "holdout_s77_00_rows0"]


@pytest.mark.slow
def test_a_run_without_holdout_says_none_was_drawn(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(A), "--out", str(out)])
    assert result.exit_code == 0 and "hold-out:" not in result.output
    page = Page()
    page.feed((out / "report.html").read_text())
    assert page.facts["best hold-out"] == "no hold-out drawn" and page.facts["hold-out gap"] == "-"


@pytest.mark.slow
def test_report_json_prints_the_page_totals_and_verdict_for_scripts(tmp_path):
    import json

    result = CliRunner().invoke(app, ["report", str(A), "--out", str(tmp_path / "r"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["page"].endswith("report.html") and (tmp_path / "r" / "report.html").is_file()
    assert data["totals"]["evaluations"] == 14 and data["totals"]["wrong_candidates"] == 2
    assert data["verdict"].startswith("every large gain followed") and "plateau_step" in data


@pytest.mark.slow
def test_plots_count_whole_steps_name_the_baseline_and_start_their_axes_at_zero(tmp_path, monkeypatch):
    from kernelseek.analysis import report

    run = tmp_path / "session-a"
    shutil.copytree(A, run)
    first = json.loads((run / "candidates" / "c0.json").read_text())
    (run / "candidates" / "c0.json").write_text(json.dumps({**first, "baseline": "torch"}))
    events = [json.loads(line) for line in (run / "trace.jsonl").read_text().splitlines()]
    for event in events:  # a scripted run: no call has a price
        if event["type"] == "model_call":
            event["cost_usd"] = None
    (run / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    kept = []
    monkeypatch.setattr(report.plt, "close", kept.append)  # keep the figures to read their axes
    page = Page()
    page.feed(report.write_report(run, tmp_path / "r").read_text())
    speed, scenarios, cost = (figure.axes for figure in kept)
    low, high = speed[0].get_xlim()
    shown = [t for t in speed[0].get_xticks() if low <= t <= high]
    assert len(shown) >= 3 and all(float(t).is_integer() for t in shown)
    assert speed[0].get_ylabel() == "speedup over torch" and scenarios[0].get_ylabel() == "speedup over torch"
    assert page.facts["baseline"] == "torch"
    assert scenarios[0].get_ylim()[0] == 0
    assert cost[0].get_ylim() == (0, 0.01) and cost[1].get_ylim()[0] == 0
    assert "no call had a price" in cost[0].get_legend_handles_labels()[1][0]
