"""Pass rates of RL prompts, from a sampling run of the model GRPO starts from.

GRPO learns nothing from a prompt whose samples all score the same: a prompt the policy always
solves, or never, gives every sample of its group the advantage 0, and only dilutes the batch.
verl can drop such groups while it trains (DAPO's dynamic sampling, ``algorithm.filter_groups``);
TRL cannot, so the TRL route drops those prompts once, before training:

1. the starting model (the SFT model) answers every prompt ``k`` times through ``codereasoner
   distill`` (the evaluation runner: resumable, every sample verified by its task kind, an
   answer cut at the token limit counted wrong, as the reward scores it);
2. ``codereasoner export --pass-rate DIR`` keeps the records whose pass rate there (verified
   samples over samples) lies strictly between two bounds, 0 and 1 by default.

A record is matched by its id, and its prompt must be the one that was sampled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codereasoner.files import parse_json
from codereasoner.training.export import DISTILLED, DistilledRecord, ExportError

__all__ = ["PassRate", "PassRateFilter", "read_pass_rates"]

FLAG = "--pass-rate"


@dataclass(frozen=True)
class PassRate:
    """How often the sampled model solved one prompt."""

    prompt: str
    passed: int
    tried: int
    model: str

    @property
    def rate(self) -> float:
        return self.passed / self.tried


def _pass_rate(obj: object, where: str) -> tuple[str, PassRate]:
    """One line of a sampling run's ``distilled.jsonl``: its id and pass rate."""
    if not isinstance(obj, dict):
        raise ExportError(f"{where}: expected a JSON object (a distilled record)")
    record_id, prompt = obj.get("id"), obj.get("prompt")
    if not isinstance(record_id, str) or not isinstance(prompt, str):
        raise ExportError(f"{where}: fields 'id' and 'prompt' expected strings")
    tried, rejected = obj.get("n_tried"), obj.get("rejected")
    if isinstance(tried, bool) or not isinstance(tried, int) or tried < 1:
        raise ExportError(
            f"{where}: field 'n_tried' expected a count of samples, got {tried!r:.40}"
        )
    if not isinstance(rejected, list) or len(rejected) > tried:
        raise ExportError(f"{where}: field 'rejected' expected a list of at most {tried} samples")
    model = obj.get("teacher")
    rate = PassRate(prompt, tried - len(rejected), tried, model if isinstance(model, str) else "")
    return record_id, rate


def read_pass_rates(source: Path) -> dict[str, PassRate]:
    """Each record's pass rate in a ``codereasoner distill`` folder (or its ``distilled.jsonl``)."""
    path = source if source.is_file() else source / DISTILLED
    if not path.is_file():
        raise ExportError(
            f"{FLAG} {source}: no {DISTILLED} there (expected the folder of `codereasoner "
            "distill --teacher STARTING_MODEL --k K ...`)"
        )
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"{FLAG} {path}: cannot read it ({exc})") from None
    rates: dict[str, PassRate] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = parse_json(line)
        except ValueError as exc:
            raise ExportError(f"{where}: not valid JSON ({getattr(exc, 'msg', exc)})") from None
        record_id, rate = _pass_rate(obj, where)
        rates[record_id] = rate
    if not rates:
        raise ExportError(f"{FLAG} {path}: no records (the file is empty)")
    return rates


def check_bounds(above: float, below: float) -> None:
    """Rates lie in [0, 1]: a bound beyond that (``--pass-below 2``) leaves nothing out there."""
    if not above < below:
        raise ExportError(f"--pass-above {above:g} --pass-below {below:g}: expected above < below")


@dataclass(frozen=True)
class PassRateFilter:
    """Keeps the records whose pass rate is strictly between ``above`` and ``below``."""

    source: Path
    rates: Mapping[str, PassRate]
    above: float = 0.0
    below: float = 1.0

    def __post_init__(self) -> None:
        check_bounds(self.above, self.below)

    @classmethod
    def read(cls, source: Path, above: float = 0.0, below: float = 1.0) -> PassRateFilter:
        check_bounds(above, below)
        return cls(source, read_pass_rates(source), above, below)

    def _sampled(self, record: DistilledRecord) -> PassRate | None:
        rate = self.rates.get(record.id)
        if rate is not None and rate.prompt != record.prompt:
            raise ExportError(
                f"{FLAG} {self.source}: {record.id} was sampled with another prompt than the "
                "exported one (another --style or --hint?)"
            )
        return rate

    def __call__(self, records: Sequence[DistilledRecord]) -> tuple[list[DistilledRecord], str]:
        """The records kept, in order, and the summary's clause on what was left out."""
        kept: list[DistilledRecord] = []
        easy = hard = unsampled = 0
        used: list[PassRate] = []
        for record in records:
            rate = self._sampled(record)
            if rate is None:
                unsampled += 1
                continue
            used.append(rate)
            if rate.rate >= self.below:
                easy += 1
            elif rate.rate <= self.above:
                hard += 1
            else:
                kept.append(record)
        if not used:
            raise ExportError(
                f"{FLAG} {self.source}: none of the {len(records)} records to export was sampled "
                "there (the same --cases and --directions?)"
            )
        return kept, self._clause(used, len(kept), easy, hard, unsampled)

    def _clause(self, used: list[PassRate], kept: int, easy: int, hard: int, other: int) -> str:
        models = ", ".join(sorted({rate.model for rate in used if rate.model})) or "the model"
        tries = sorted({rate.tried for rate in used})
        samples = str(tries[0]) if len(tries) == 1 else f"{tries[0]}-{tries[-1]}"
        samples += " sample" if tries == [1] else " samples"
        text = (
            f"pass rates of {models} ({samples} each, {self.source}): kept {kept} in "
            f"({self.above:g}, {self.below:g}), left out {easy} at or above {self.below:g}, "
            f"{hard} at or below {self.above:g}"
        )
        if other:
            text += f", {other} never sampled"
        return text
