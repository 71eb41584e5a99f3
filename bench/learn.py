"""Learning on CPU: a tiny model trained from scratch through the project's SFT and GRPO path,
scored on program families that training never contains.

  1. data (``learn_data``): programs that apply one to three bijections to a digit; operation
     pairs are split into train, validation and test, so every evaluated program puts two
     operations together that training never did, and most are longer than any trained one;
     held-out families computing a training function, and held-out items the copy rule
     solves, are left out. Ground truth and reasoning chains come from the project's tracer;
  2. model (``learn_model``): a byte-level tokenizer and a random Qwen2-architecture model of a
     few hundred thousand parameters, graded by ``rewards.score_batch`` (the GRPO reward's rule);
  3. arms, per seed: the copy rule, the raw model, TRL ``SFTTrainer`` on direct answers, on
     reasoning chains, and chains then TRL ``GRPOTrainer`` rewarded by ``CodeReasoningReward``
     (``learn_train``); each trained arm's learning rate and number of steps are chosen on the
     validation split and the chosen weights are scored once on the test split (``learn_run``);
  4. report: test accuracy, the mean over seeds with a program-level bootstrap interval
     (``learn_stats``), the per-seed figures, and the differences the run is meant to show.

Progress goes to stderr; stdout gets the tables and, as its last line, ``learn: ...`` (the mean
test accuracies and whether each claim holds). ``--out DIR`` (default: a temporary folder)
receives ``learn.json`` with the figures, settings, seeds and intervals.

    python bench/learn.py [--quick] [--out DIR] [--threads 2]
"""

from __future__ import annotations

import os


def main() -> None:
    # huggingface_hub reads these when it is first imported and OpenMP when it starts, so they
    # are set before anything imports torch or transformers (learn_run does). Spinning OpenMP
    # threads slow training several times over on a machine shared with other work.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from learn_run import run

    run(__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
