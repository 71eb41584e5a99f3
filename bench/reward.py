"""RL reward throughput: one GRPO batch scored by our core against one fresh sandbox per completion.

The batch: 128 prompts x 8 completions = 1,024 (half the prompts backward), each prompt with its
own program. Per prompt the 8 completions are 3 right (one answer, once spaced differently: sampling
repeats itself), 3 wrong, 1 unparsable and 1 with no answer, each behind ~1,500 characters of
reasoning.

  * ours: ``score_batch`` on a warm ``Pool`` (what a trainer keeps between steps): extraction
    and strict grading in the parent, each prompt's backward calls as one sandbox batch;
  * baseline: one fresh sandboxed interpreter per completion (a pool that replaces its worker
    after every job, no preloads: the cheapest honest form of the project's sandbox). Backward
    completions run their answer's call, forward ones the case's call, whose value the parsed
    answer is compared with, as a per-completion grader does. It is timed on a subset and
    extrapolated to the batch (said so in the output).

Both verdict lists are checked against the truth. Prints seconds per batch and the ratio.

    python bench/reward.py [--runs 5] [--prompts 128] [--group 8] [--baseline 64] [--workers 2]
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import time

from codereasoner import values
from codereasoner.execution import CallSyntaxError, Limits, Pool, Program, Status, parse_call
from codereasoner.families.cases.reasoning import last_answer
from codereasoner.training.rewards import REWARD_LIMITS, RewardConfig, Sample, score_batch

# {j}: the prompt's index, so that every prompt has a program of its own
TEMPLATES = [
    "def f(nums):\n    return sorted(set(n * {k} + {j} for n in nums))",
    "def f(text):\n    return text.replace('a', '{k}')[::-1] + '{j}'",
    "def f(n):\n    total = {j}\n    for i in range(n):\n        total += i % {k}\n    return total",
    "def f(d):\n    return {{v + {j}: k for k, v in d.items() if v > {k}}}",
]
REASONING = "Let me trace the call line by line. " * 42  # ~1,500 characters


def _argument(template: int, rng: random.Random) -> object:
    if template == 0:
        return [rng.randint(-9, 9) for _ in range(rng.randint(1, 8))]
    if template == 1:
        return "".join(
            rng.choice("abc" + string.ascii_lowercase) for _ in range(rng.randint(3, 12))
        )
    if template == 2:
        return rng.randint(0, 60)
    return {c: rng.randint(0, 9) for c in rng.sample(string.ascii_lowercase, 5)}


def _run(source: str, argument: object) -> object:
    namespace: dict = {}
    exec(source, namespace)  # our own templates, to compute the truth
    return namespace["f"](argument)


def _completion(answer: str | None) -> str:
    tail = "" if answer is None else f"\n<Answer>{answer}</Answer>"
    return f"<Reasoning>{REASONING}</Reasoning>{tail}"


def make_batch(prompts: int, group: int, seed: int = 0) -> tuple[list[Sample], list[bool]]:
    """The samples and whether each is right."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    right: list[bool] = []
    for index in range(prompts):
        template = index % len(TEMPLATES)
        source = TEMPLATES[template].format(k=2 + index % 5, j=index)
        argument = _argument(template, rng)
        output = _run(source, argument)
        call = f"f({values.render(argument)})"
        backward = index % 2 == 1
        wrong = []
        while len(wrong) < 3:
            other = _argument(template, rng)
            other_output = _run(source, other)
            if other_output != output:
                wrong.append(
                    f"f({values.render(other)})" if backward else values.render(other_output)
                )
        good = call if backward else values.render(output)
        answers = [good, good, f" {good}", *wrong, "f(" if backward else "[1, 2", None]
        answers = (answers * ((group + len(answers) - 1) // len(answers)))[:group]
        for answer in answers:
            samples.append(
                Sample(
                    "backward" if backward else "forward",
                    source,
                    "f",
                    call,
                    values.render(output),
                    f"case-{index}",
                    _completion(answer),
                )
            )
            right.append(answer is not None and answer.strip() == good)
    return samples, right


def time_ours(pool: Pool, samples: list[Sample]) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    batch = score_batch(samples, pool, RewardConfig())
    elapsed = time.perf_counter() - start
    return elapsed, [reward == 2.0 for reward in batch.rewards]


def _baseline_one(pool: Pool, sample: Sample) -> bool:
    found = last_answer(sample.completion)
    text = getattr(found, "text", None)
    call_text = sample.call
    if sample.direction == "backward" and text is not None:
        try:
            parse_call(text)
            call_text = text
        except CallSyntaxError:
            text = None
    result = pool.run(Program(sample.code, "f"), parse_call(call_text), REWARD_LIMITS)
    if text is None or result.status is not Status.OK:
        return False
    truth = values.parse(sample.target)
    if sample.direction == "backward":
        return values.equal(truth, result.parsed_value(), "strict")
    try:
        return values.equal(result.parsed_value(), values.parse(text), "strict")
    except values.ValueParseError:
        return False


def time_baseline(samples: list[Sample], workers: int) -> tuple[float, list[bool]]:
    limits = Limits(timeout_s=1.0, wall_timeout_s=2.0, memory_mb=512)
    with Pool(workers, preload=(), recycle_after=1, limits=limits) as pool:
        start = time.perf_counter()
        verdicts = [_baseline_one(pool, sample) for sample in samples]
        elapsed = time.perf_counter() - start
    return elapsed, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=128)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--baseline", type=int, default=64, help="completions the baseline runs")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    samples, right = make_batch(args.prompts, args.group)
    backward = sum(s.direction == "backward" for s in samples)
    print(f"batch: {len(samples)} completions ({backward} backward), {sum(right)} right")
    start = time.perf_counter()
    pool = Pool(args.workers)
    started = time.perf_counter() - start
    ours, baseline = [], []
    # a subset spread over the batch: every direction and answer kind
    step = max(len(samples) // args.baseline, 1)
    subset = samples[::step][: args.baseline]
    subset_right = right[::step][: args.baseline]
    try:
        for _ in range(args.runs):
            seconds, verdicts = time_ours(pool, samples)
            assert verdicts == right, "our verdicts differ from the truth"
            ours.append(seconds)
            seconds, verdicts = time_baseline(subset, args.workers)
            assert verdicts == subset_right, "baseline verdicts differ from the truth"
            baseline.append(seconds * len(samples) / len(subset))
    finally:
        pool.close()
    ours_s, base_s = statistics.median(ours), statistics.median(baseline)
    print(f"sandbox: {pool.isolation}; pool start (once per trainer process): {started:.2f} s")
    print(f"ours: {ours_s:.3f} s per batch (median of {args.runs}; runs {_list(ours)})")
    print(
        f"baseline, one fresh sandbox per completion: {base_s:.1f} s per batch (median of "
        f"{args.runs}; measured on {len(subset)} completions and extrapolated x"
        f"{len(samples) / len(subset):.0f})"
    )
    print(
        f"ratio: {base_s / ours_s:.0f}x; target at most 1 s per batch: {'met' if ours_s <= 1 else 'MISSED'}"
    )


def _list(seconds: list[float]) -> str:
    return ", ".join(f"{s:.3f}" for s in seconds)


if __name__ == "__main__":
    main()
