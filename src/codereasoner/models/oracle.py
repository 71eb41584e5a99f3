"""The oracle backend: answers from the ground truth, a SELF-CHECK of the whole pipeline.

It is not a model. Each request's completion states ``request.item``'s truth in the format the
request's task kind and style expect (:func:`oracle_completion`), cut
at the request's stop sequences as a server would, so prompt -> completion -> extraction ->
grading -> metrics must come out at 100%; anything less is a grading bug or a truth that cannot be
stated (those completions carry ``finish_reason`` :data:`NO_TRUTH` and say why).
"""

from __future__ import annotations

from collections.abc import Sequence

from codereasoner.models.base import (
    BackendError,
    Completion,
    OnResult,
    Request,
    check_completions,
    cut_at_stop,
)
from codereasoner.tasks.base import Item, Style
from codereasoner.tasks.oracle import NoOracleAnswer
from codereasoner.tasks.registry import get as task_kind

__all__ = ["NO_TRUTH", "OracleBackend", "answer", "oracle_completion"]

NO_TRUTH = "oracle_no_truth"  # finish_reason of a truth the oracle cannot state


def oracle_completion(item: Item, style: Style | str = Style.DIRECT) -> str:
    """The completion a perfect model would produce for ``item`` prompted in ``style``: its task
    kind's ``oracle``; NoOracleAnswer when no kind of that name is registered."""
    try:
        kind = task_kind(item.task)
    except ValueError:
        raise NoOracleAnswer(f"{item.id}: no oracle for task kind {item.task!r}") from None
    return kind.oracle(item, style)


def answer(request: Request) -> Completion:
    """One completion for ``request`` (sample index 0; the oracle is deterministic)."""
    if request.item is None:
        raise BackendError("the oracle self-check needs each request's item (its ground truth)")
    try:
        text = oracle_completion(request.item, request.style or "direct")
    except NoOracleAnswer as exc:
        return Completion(0, f"[self-check oracle: no answer: {exc}]", NO_TRUTH)
    text, _ = cut_at_stop(text, request.sampling.stop)
    return Completion(0, text, "stop")


class OracleBackend:
    """The self-check "model": ``model_id`` is ``oracle``; counts the requests it answered."""

    model_id = "oracle"

    def __init__(self) -> None:
        self.requests = 0
        self.completions = 0

    def preflight(self) -> None:
        """Nothing to check: the oracle reads the items it is given."""

    def generate(self, requests: Sequence[Request], on_result: OnResult) -> None:
        for index, request in enumerate(requests):
            single = answer(request)
            completions = [
                Completion(sample, single.text, single.finish_reason) for sample in request.samples
            ]
            check_completions(request, completions)
            self.requests += 1
            self.completions += len(completions)
            on_result(index, completions)

    def close(self) -> None:
        """Nothing to release."""
