"""The module verl loads by path for its custom reward (``custom_reward_function.path``).

    reward:
      custom_reward_function:
        path: <site-packages or checkout>/codereasoner/training/verl_reward.py
        name: compute_score            # naive / dapo reward managers
        # name: compute_score_batch    # with reward_manager.name=batch
        reward_kwargs: {}              # optional: correct, max_chars, process_weight

verl executes this file as a fresh module; the functions themselves live in
:mod:`codereasoner.training.rewards` (one sandbox pool per process, shared by both).
"""

from codereasoner.training.rewards import compute_score, compute_score_batch

__all__ = ["compute_score", "compute_score_batch"]
