"""Reports over run stores: read them (``data``), plot (``plots``), write one HTML page (``html``).

from codereasoner.evaluation.report import load_runs, write_report
runs = load_runs([Path("runs/a"), Path("runs/b")], examples=3)
write_report(runs, Path("report.html"))
"""

from codereasoner.evaluation.report.data import ReportDataError, Run, load_runs, run_labels
from codereasoner.evaluation.report.html import render, write_report

__all__ = ["ReportDataError", "Run", "load_runs", "render", "run_labels", "write_report"]
