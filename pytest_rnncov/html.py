"""The self-contained HTML report (``--rnn-report=html:DIR``): tables, plots of the LSTM's
internal signals, coverage times, TC words, campaign growth and adversarial samples.

Plots are drawn with matplotlib (``pip install 'pytest-rnncov[html]'``) and embedded as
base64 PNG, so the page opens in a browser with no network.
"""

from __future__ import annotations

import base64
import difflib
import html
import io
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .engine import MetricRecord, ModelRecord
from .errors import MissingResource
from .images import side_by_side, to_gray8


def require_matplotlib() -> None:
    """Raise MissingResource with the install command when matplotlib is absent."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingResource(
            "the HTML report draws its plots with matplotlib, which is not installed: "
            "pip install 'pytest-rnncov[html]'"
        ) from None


def _png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _figure_uri(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return _png_uri(buffer.getvalue())


def _img(uri: str, alt: str, cls: str = "plot") -> str:
    return f'<img class="{cls}" alt="{html.escape(alt)}" src="{uri}">'


def _gray_png(gray: np.ndarray) -> bytes:
    import tempfile

    from .images import write_png

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.png"
        write_png(path, gray, scale=4)
        return path.read_bytes()


def _marked_diff(seed: Sequence[str], case: Sequence[str], joiner: str) -> str:
    """The case with insertions and replacements marked against the seed."""
    out = []
    matcher = difflib.SequenceMatcher(a=list(seed), b=list(case), autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            out.append(html.escape(joiner.join(case[b1:b2])))
        if op in ("delete", "replace"):
            out.append(f"<del>{html.escape(joiner.join(seed[a1:a2]))}</del>")
        if op in ("insert", "replace"):
            out.append(f"<ins>{html.escape(joiner.join(case[b1:b2]))}</ins>")
    return joiner.join(p for p in out if p)


class HtmlReport:
    """Writes ``DIR/index.html``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    # -- plots -------------------------------------------------------------------------------
    @staticmethod
    def signals_plot(signals: dict[str, Any]) -> str | None:
        import matplotlib.pyplot as plt

        panels = [(k, t) for k, t in (("h_net_z", r"z-normalised $\xi^h_t$ (h / net)"),
                                       ("f_avg_minmax", r"min-max normalised $\xi^{f,avg}_t$"),
                                       ("h_delta_minmax", r"min-max normalised $\Delta\xi^h_t$"))
                  if k in signals]
        if not panels:
            return None
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3), squeeze=False)
        steps = signals["steps"]
        for ax, (key, title) in zip(axes[0], panels):
            for row, values in enumerate(signals[key]):
                ax.plot(steps, values, marker=".", label=f"input {row}")
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("step")
        axes[0][0].legend(fontsize=7)
        return _figure_uri(fig)

    @staticmethod
    def times_plot(metric: MetricRecord) -> str:
        import matplotlib.pyplot as plt

        labels = metric.detail["labels"]
        fig, ax = plt.subplots(figsize=(max(4.0, 0.25 * len(labels)), 2.8))
        colors = ["tab:green" if c else "tab:red" for c in metric.covered]
        ax.bar(range(len(labels)), metric.times, color=colors)
        missing = np.flatnonzero(~metric.covered)
        ax.scatter(missing, np.zeros(len(missing)), marker="x", color="tab:red", zorder=3)
        ax.set_xticks(range(len(labels)), [label.split()[0][2:] for label in labels],
                      fontsize=7, rotation=90)
        ax.set_xlabel("step (red x: uncovered)")
        ax.set_ylabel("test cases")
        ax.set_title(f"coverage times: {metric.describe}", fontsize=10)
        return _figure_uri(fig)

    @staticmethod
    def words_plot(metric: MetricRecord) -> str:
        import matplotlib.pyplot as plt

        w, a = metric.detail["w"], metric.detail["a"]
        rows = a ** (w // 2)
        grid = np.log1p(metric.times.astype(np.float64)).reshape(rows, -1)
        fig, ax = plt.subplots(figsize=(max(4.0, grid.shape[1] * 0.3), max(2.0, rows * 0.3)))
        ax.imshow(np.where(grid > 0, grid, np.nan), cmap="viridis", aspect="equal")
        ax.set_facecolor("#f2dede")
        ax.set_title(f"{metric.describe}: covered words (colour: log coverage times; pink: "
                     "uncovered)", fontsize=9)
        first = [chr(97 + int(d)) for d in range(a)]
        ax.set_xlabel(f"last {w - w // 2} symbols")
        ax.set_ylabel(f"first {w // 2} symbols ({'/'.join(first)}...)")
        return _figure_uri(fig)

    @staticmethod
    def growth_plot(campaign: dict[str, Any]) -> str | None:
        import matplotlib.pyplot as plt

        growth = campaign.get("growth") or []
        if not growth:
            return None
        fig, ax = plt.subplots(figsize=(6, 3))
        cases = [g["test_cases"] for g in growth]
        for key in [k for k in growth[0] if k not in ("test_cases", "phase")]:
            ax.plot(cases, [g[key] for g in growth], label=key)
        targeted = [g["test_cases"] for g in growth if g["phase"] == "targeted"]
        if targeted:
            ax.axvline(targeted[0], color="grey", linestyle="--", linewidth=1)
            ax.text(targeted[0], 0.02, " GA starts", fontsize=8, color="grey")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("generated test cases")
        ax.set_ylabel("coverage rate")
        ax.legend(fontsize=8)
        ax.set_title(f"coverage growth: {campaign.get('model', '')}", fontsize=10)
        return _figure_uri(fig)

    @staticmethod
    def gallery_item(item: dict[str, Any]) -> str:
        caption = (f"seed {item['seed_index']}: {html.escape(item['seed_decision'])} → "
                   f"{html.escape(item['case_decision'])}, distance {item['distance']:.3g}")
        seed, case = item["seed"], item["case"]
        if isinstance(seed, str):
            joiner = " " if " " in seed else ""
            tokens = (lambda t: t.split(" ")) if joiner else list
            return (f'<div class="sample"><div class="caption">{caption}</div>'
                    f'<div class="seed">{html.escape(seed)}</div>'
                    f'<div class="case">{_marked_diff(tokens(seed), tokens(case), joiner)}</div></div>')
        seed_a, case_a = np.squeeze(np.asarray(seed)), np.squeeze(np.asarray(case))
        if seed_a.ndim == 2:
            clip = item.get("clip") or [float(min(seed_a.min(), case_a.min())),
                                        float(max(seed_a.max(), case_a.max())) + 1e-9]
            uri = _png_uri(_gray_png(side_by_side(seed_a, case_a, tuple(clip))))
            return (f'<div class="sample"><div class="caption">{caption} (seed | case | '
                    f'difference)</div>{_img(uri, caption, "sample-image")}</div>')
        flat = to_gray8(np.abs(case_a - seed_a).reshape(1, -1), (0.0, float(np.abs(case_a - seed_a).max()) or 1.0))
        uri = _png_uri(_gray_png(flat))
        return f'<div class="sample"><div class="caption">{caption} (|case - seed|)</div>{_img(uri, caption, "sample-image")}</div>'

    # -- page --------------------------------------------------------------------------------
    def report(self, records: dict[str, ModelRecord], campaigns: Sequence[dict[str, Any]],
               required: float | None, gate_metrics: Sequence[str]) -> Path:
        require_matplotlib()
        import matplotlib

        matplotlib.use("Agg", force=True)
        from . import __version__
        from .report import percent

        parts = [f"<h1>RNN coverage</h1><p class='meta'>pytest-rnncov {__version__}"
                 + (f"; required {percent(required)} on {', '.join(gate_metrics)}" if required is not None else "")
                 + "</p>"]
        for record in records.values():
            parts.append(f"<section><h2>{html.escape(record.name)}</h2><p class='meta'>layer "
                         f"{html.escape(record.layer)}, window {list(record.window)}, "
                         f"{record.n_inputs} inputs</p>")
            rows = "".join(
                f"<tr class='{'below' if required is not None and key in gate_metrics and m.rate < required else ''}'>"
                f"<td>{html.escape(key)}</td><td>{html.escape(m.describe)}</td><td>{m.n_covered}</td>"
                f"<td>{m.total}</td><td>{percent(m.rate)}</td></tr>"
                for key, m in record.metrics.items()
            )
            parts.append("<table><tr><th>metric</th><th>configuration</th><th>covered</th>"
                         f"<th>total</th><th>rate</th></tr>{rows}</table>")
            plot = self.signals_plot(record.signals) if record.signals else None
            if plot:
                parts.append("<h3>Internal signals of the first inputs</h3>" + _img(plot, "signals"))
            for key, m in record.metrics.items():
                if "labels" in m.detail:
                    parts.append(f"<h3>{html.escape(key)}: coverage times per step</h3>"
                                 + _img(self.times_plot(m), f"{key} coverage times"))
                elif "w" in m.detail:
                    parts.append(f"<h3>{html.escape(key)}: words</h3>" + _img(self.words_plot(m), f"{key} words"))
            parts.append("</section>")
        for campaign in campaigns:
            parts.append(f"<section><h2>Campaign on {html.escape(str(campaign.get('model', '')))}</h2>"
                         f"<p class='meta'>{campaign['test_cases']} test cases, "
                         f"{campaign['adversarial']} adversarial ({percent(campaign['adversary_rate'])}), "
                         f"{campaign['unique']} unique seeds; distance {html.escape(str(campaign.get('distance')))}"
                         + (f"; saved to {html.escape(str(campaign['saved_to']))}" if campaign.get("saved_to") else "")
                         + "</p>")
            growth = self.growth_plot(campaign)
            if growth:
                parts.append(_img(growth, "coverage growth"))
            if campaign.get("gallery"):
                parts.append("<h3>Adversarial samples</h3><div class='gallery'>"
                             + "".join(self.gallery_item(item) for item in campaign["gallery"])
                             + "</div>")
            parts.append("</section>")
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "index.html"
        path.write_text(PAGE.format(body="\n".join(parts)), encoding="utf-8")
        return path


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>RNN coverage report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1em; }}
td, th {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }}
tr.below td {{ background: #fbe3e3; }}
.meta {{ color: #666; }}
img.plot {{ display: block; margin: 0.5em 0 1em; max-width: 100%; }}
.gallery {{ display: flex; flex-wrap: wrap; gap: 1em; }}
.sample {{ border: 1px solid #ddd; padding: 0.5em; max-width: 560px; }}
.caption {{ font-size: 0.85em; color: #555; margin-bottom: 0.3em; }}
.seed {{ color: #666; font-family: monospace; }}
.case {{ font-family: monospace; }}
del {{ background: #f8d0d0; }} ins {{ background: #d0f0d0; text-decoration: none; }}
section {{ border-top: 2px solid #eee; margin-top: 1.5em; }}
</style></head><body>
{body}
</body></html>
"""
