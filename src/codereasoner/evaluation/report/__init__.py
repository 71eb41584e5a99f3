"""Reports over run stores: read them (``data``), plot (``plots``), write one HTML page (``html``),
optionally led by CodeReasoner's Table 3 layout (``table3``).

from codereasoner.evaluation.report import load_runs, write_report
runs = load_runs([Path("runs/a"), Path("runs/b")], examples=3)
write_report(runs, Path("report.html"))
labels = choose_labels(runs, ["raw", "full"], "table3")  # runs in rows, scores in columns
write_report(runs, Path("table3.html"), labels, table3(runs, labels))
compare(runs, name).common  # the items every model run holds; scores over them: .compared()
"""

from codereasoner.evaluation.report.compare import Comparison, compare
from codereasoner.evaluation.report.data import ReportDataError, Run, load_runs, run_labels
from codereasoner.evaluation.report.html import render, write_report
from codereasoner.evaluation.report.table3 import LAYOUTS, Table3, choose_labels, table3

__all__ = [
    "LAYOUTS",
    "Comparison",
    "ReportDataError",
    "Run",
    "Table3",
    "choose_labels",
    "compare",
    "load_runs",
    "render",
    "run_labels",
    "table3",
    "write_report",
]
