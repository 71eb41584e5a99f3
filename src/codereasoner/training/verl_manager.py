"""verl's reward manager for our ``compute_score`` (verl 0.9.1's reward loop; verl env only).

verl's naive manager hands ``compute_score`` the decoded text of a response and nothing else, so
a response cut at the response length limit whose text holds a right ``<Answer>`` would be paid
in full. This manager is the naive one plus that fact: it sets ``extra_info.response_truncated``
(a copy of the row's ``extra_info``, never the row's own, which verl shares among the row's
samples) when the response reached ``actor_rollout_ref.rollout.response_length`` tokens without
ending in the tokenizer's EOS or pad token, and ``compute_score`` scores it 0.0 and flags it
``truncated``, as in CodeReasoner.

    reward:
      reward_manager:
        source: importlib              # loaded by verl in every process that needs it
        module: {path: pkg://codereasoner.training.verl_manager}
        name: CodeReasonerRewardManager
      custom_reward_function:
        path: <site-packages or checkout>/codereasoner/training/verl_reward.py
        name: compute_score

``source: register`` does not suit a manager outside verl: verl checks the name against its
registry when the driver builds its config, before anything of ours is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

from codereasoner.training.rewards import RESPONSE_TRUNCATED

__all__ = ["CodeReasonerRewardManager"]

RESPONSE_LENGTH_KEYS = ("actor_rollout_ref.rollout.response_length", "data.max_response_length")


class CodeReasonerRewardManager(NaiveRewardManager):
    """verl's naive reward manager, telling ``compute_score`` which responses were truncated."""

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        compute_score: Any,
        reward_router_address: str | None = None,
        reward_model_tokenizer: Any = None,
    ) -> None:
        super().__init__(
            config, tokenizer, compute_score, reward_router_address, reward_model_tokenizer
        )
        self.response_limit = response_limit(config)
        ends = (tokenizer.eos_token_id, tokenizer.pad_token_id)
        self.end_ids = frozenset(int(token) for token in ends if token is not None)

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        last = data[-1:]  # the naive manager scores a multi-sequence output by its last one
        info = dict(last.non_tensor_batch.get("extra_info", [None])[0] or {})
        info[RESPONSE_TRUNCATED] = self.truncated(last)
        last.non_tensor_batch["extra_info"] = np.array([info], dtype=object)
        return dict(await super().run_single(last))

    def truncated(self, data: DataProto) -> bool:
        """Whether the (one) response reached the limit without ending."""
        responses = data.batch["responses"][0]
        valid = int(data.batch["attention_mask"][0][-responses.shape[-1] :].sum())
        return valid >= self.response_limit and int(responses[valid - 1]) not in self.end_ids


def response_limit(config: Any) -> int:
    """The response length the rollout generates up to (verl's own setting)."""
    for key in RESPONSE_LENGTH_KEYS:
        value = OmegaConf.select(config, key)
        if value is not None:
            return int(value)
    raise ValueError(f"the verl config sets none of {', '.join(RESPONSE_LENGTH_KEYS)}")
