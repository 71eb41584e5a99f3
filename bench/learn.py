"""Learning on CPU: a tiny model built from scratch learns a narrow family of execution cases
through the project's SFT then GRPO path, graded on held-out programs by the project's reward.

  1. data: the offline synthesizer restricted to a few string and list methods with no control
     flow, no extras and no nested calls; split by program into train and held-out; held-out
     programs sharing a token 10-gram (or a short exact string) with a training program are
     dropped (``codereasoner.synth.decontam.BenchmarkIndex`` built from the training programs);
  2. model: a byte-level tokenizer (the 256 bytes, no merges, ``<Answer>`` and ``</Answer>`` as
     single tokens) and a random Qwen2-architecture model of a few hundred thousand parameters;
  3. raw: held-out exact-answer accuracy, greedy, graded by ``rewards.score_batch`` (the
     reward's rule: a right ``<Answer>`` counts; a backward answer runs in the sandbox);
  4. sft: TRL ``SFTTrainer`` on direct answers, both directions, compact prompts;
  5. grpo: TRL ``GRPOTrainer`` rewarded by ``rewards.CodeReasoningReward``.

Progress goes to stderr; stdout gets the table and, as its last line,
``learn: raw X sft Y grpo Z`` (overall held-out accuracies). ``--out DIR`` (default: a
temporary folder) receives ``learn.json`` with the figures and settings.

    python bench/learn.py [--quick] [--seed 0] [--out DIR]
"""

from __future__ import annotations

import os


def main() -> None:
    # huggingface_hub reads these when it is first imported, so they are set before anything
    # imports transformers (learn_support does)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from learn_support import run

    run(__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
