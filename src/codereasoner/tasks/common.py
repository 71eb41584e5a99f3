"""What the task kinds share beyond the types of :mod:`codereasoner.tasks.base`.

- :class:`PlannedTask`: ``plan`` (one ``grade(sample, text)`` per item, built by the kind's
  :meth:`~PlannedTask.grader`) and ``score`` (the plan of one answer, run);
- :func:`found_or_failure`, :func:`robust_answer` and :func:`anti_copy_grader`: the extraction
  and grading steps the CRUXEval-style kinds repeat (:func:`robust_answer`: the robust rules on
  the whole text, or on the last ``<Answer>`` block under ``Extraction.ANSWER_TAG``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from codereasoner.tasks import extraction
from codereasoner.tasks.base import (
    Answer,
    Extracted,
    Extraction,
    Grading,
    Item,
    ParseFailure,
    Reason,
    Score,
)
from codereasoner.tasks.grading import official_assertion
from codereasoner.tasks.plans import GradingPlan, Job, build_plan, run_plans, verdict

if TYPE_CHECKING:
    from codereasoner.execution import Executor

Grade = Callable[[int, str], Score | Job]
ROBUST_MODES = frozenset({Extraction.ROBUST, Extraction.ANSWER_TAG})  # read by the robust rules
NO_ANSWER_TAG = "no <Answer>…</Answer> block"


def found_or_failure(
    found: str | None, reason: str, text: str, *, empty_ok: bool = True
) -> Extracted:
    """``Answer(found)``, or ``ParseFailure(reason, text)`` when nothing was found (None, or
    also an empty string unless ``empty_ok``)."""
    missing = found is None if empty_ok else not found
    return ParseFailure(reason, text) if missing else Answer(found)  # type: ignore[arg-type]


def robust_answer(
    text: str,
    mode: Extraction,
    read: Callable[[str], str | None],
    missing: str,
    *,
    empty_ok: bool = True,
) -> Extracted:
    """A kind's robust rule ``read`` on the completion (``ROBUST``) or on its last ``<Answer>``
    block (``ANSWER_TAG``: a failure when there is none); ``missing`` as in
    :func:`found_or_failure`."""
    if mode is not Extraction.ANSWER_TAG:
        return found_or_failure(read(text), missing, text, empty_ok=empty_ok)
    block = extraction.answer_tag_block(text)
    if block is None:
        return ParseFailure(NO_ANSWER_TAG, text)
    return found_or_failure(read(block), missing, text, empty_ok=empty_ok)


def anti_copy_grader(
    item: Item,
    official: bool,
    strict: Callable[[Item, int, str], Score | Job],
    copied: Callable[[str], bool],
    call_entry: bool,
) -> Grade:
    """CRUXEval grading: ``strict`` unless official; officially, a copy of the question is
    skipped (upstream's anti-copy rule), anything else is judged by the official assertion."""

    def grade(sample: int, text: str) -> Score | Job:
        if not official:
            return strict(item, sample, text)
        if copied(text):  # upstream's anti-copy rule: the sample is skipped
            return verdict(item, sample, text, Reason.COPIED, skipped=True)
        return official_assertion(item, sample, text, call_entry=call_entry)

    return grade


class PlannedTask:
    """``plan`` and ``score`` for a task kind that grades each distinct answer text alone."""

    def grader(self, item: Item, grading: Grading) -> Grade:
        """The item's ``grade(sample, text)``; ``grading`` is already validated."""
        raise NotImplementedError

    def plan(
        self, item: Item, answers: Sequence[Extracted], grading: Grading | str = Grading.OFFICIAL
    ) -> GradingPlan:
        return build_plan(item, answers, self.grader(item, Grading(grading)))

    def score(
        self,
        item: Item,
        answer: Extracted,
        pool: Executor | None = None,
        grading: Grading | str = Grading.OFFICIAL,
    ) -> Score:
        """One verdict: the plan for this one answer, run through ``pool``."""
        return run_plans(pool, [self.plan(item, [answer], grading)])[0][0]
