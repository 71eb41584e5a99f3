"""The module verl loads by path for its custom reward (``custom_reward_function.path``).

    reward:
      reward_manager:                  # ours: tells compute_score which responses were truncated
        source: importlib
        module: {path: pkg://codereasoner.training.verl_manager}
        name: CodeReasonerRewardManager
      custom_reward_function:
        path: <site-packages or checkout>/codereasoner/training/verl_reward.py
        name: compute_score            # our manager (or naive / dapo)
        # name: compute_score_batch    # with reward_manager.name=batch
        reward_kwargs: {}              # optional: correct, max_chars, process_weight

verl executes this file as a fresh module; the functions themselves live in
:mod:`codereasoner.training.rewards` (one sandbox pool per process, shared by both). Only our
reward manager (:mod:`codereasoner.training.verl_manager`) tells them that a response was cut at
the response limit, which then scores 0.0; under any other manager a truncated response is
scored as if complete, with a warning.
"""

from codereasoner.training.rewards import compute_score, compute_score_batch

__all__ = ["compute_score", "compute_score_batch"]
