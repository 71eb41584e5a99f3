#!/usr/bin/env bash
# CodeReasoner GRPO on verl 0.9.1 (python -m verl.trainer.main_ppo, Hydra overrides).
#
# Paper settings: GRPO (algorithm.adv_estimator=grpo), lr 1e-6, 5 samples per prompt, 4096
# response tokens, 2 epochs; reward 2.0 for a correct <Answer>, else 0.0 (our compute_score).
# The same algorithm as the TRL recipe (recipes/grpo-qwen2.5-coder-7b.yaml; docs/training.md,
# "One GRPO algorithm on TRL and verl"): 128 prompts per batch, 4 PPO updates per batch
# (mini-batches of 32 prompts, one epoch), the per-sequence loss of the paper's Eq. 5
# (loss_agg_mode=seq-mean-token-mean), clip range 0.2 (and the ratio of a negative advantage
# capped at 3: dual clip), constant lr.
# KL: as verl's GRPO examples, a KL loss against the frozen reference (low_var_kl, coefficient
# 0.001, KL_COEF) and no KL term in the reward. Rollout: vLLM; actor: FSDP.
#
# DAPO's dynamic sampling, opt-in (verl 0.9.1's V1 trainer, the default): groups whose 5
# responses all score the same (always or never solved: no advantage) are dropped and replaced
# by new prompts until the batch is full:
#   recipes/verl-grpo.sh algorithm.filter_groups.enable=True algorithm.filter_groups.metric=reward
# (optionally algorithm.filter_groups.max_inflight_gen_batches=2: batches generated at once).
# The TRL route filters the prompts once, before training, by the SFT model's pass rates
# (codereasoner export --pass-rate; docs/training.md), which works for this script's data too.
#
# Data: parquet from `codereasoner export --format verl` (data_source "codereasoner"):
#   codereasoner export --from runs/distill-train --format verl --out runs/verl/train.parquet
#   codereasoner export --from runs/distill-val --format verl --split val --out runs/verl/val.parquet
# TRAIN and VAL may also be Hydra lists: TRAIN="[a.parquet,b.parquet]".
#
# Reward: verl loads src/codereasoner/training/verl_reward.py by path; the path is taken from the
# codereasoner package that $PYTHON imports, so run this with the environment that holds verl,
# vLLM and codereasoner (PYTHON=.venv-verl/bin/python, or an activated venv). The reward manager
# is ours (codereasoner.training.verl_manager, imported by verl): verl's naive manager plus
# whether a response was cut at data.max_response_length, which then scores 0.0.
#
# Single node (8 GPUs):
#   TRAIN=runs/verl/train.parquet VAL=runs/verl/val.parquet recipes/verl-grpo.sh
#
# Multi-node (here 2 x 8 GPUs). Every node needs the same environment at the same path (the reward
# file is loaded by path on whichever node a reward worker lands on) and the parquet files at the
# same path (or on shared storage). Start Ray from that environment:
#   node 0:       ray start --head --port=6379
#   nodes 1..N-1: ray start --address=<node-0 IP>:6379
#   check:        ray status              # 2 nodes, 16 GPUs
#   node 0:       NNODES=2 GPUS_PER_NODE=8 TRAIN=... VAL=... recipes/verl-grpo.sh
# With NNODES>1 the script sets RAY_ADDRESS=auto (unless set), so verl's ray.init() joins the
# running cluster or fails, instead of starting a one-node cluster that would wait for GPUs.
#
# Settings (environment variables, defaults below): MODEL, TRAIN, VAL, NNODES, GPUS_PER_NODE,
# PROJECT, EXPERIMENT, OUT (checkpoint folder), TP (vLLM tensor parallel size), TRAIN_BATCH
# (prompts per step), MINI_BATCH (prompts per PPO update), MAX_TOKENS_PER_GPU (dynamic batch
# size budget), MAX_PROMPT, ROLLOUT_GPU_UTIL, KL_COEF, ACTOR_OFFLOAD, REF_OFFLOAD, SAVE_FREQ,
# TEST_FREQ, LOGGER, SEED, REWARD_WORKERS (verl reward processes), CODEREASONER_REWARD_WORKERS
# (sandbox workers in each reward process; default: the cores shared among them; on a multi-node
# cluster export it before `ray start` on every node), PYTHON, REWARD_FN_PATH. Arguments are appended as further Hydra
# overrides (the last one for a key wins), e.g.  recipes/verl-grpo.sh trainer.total_epochs=1
#
#   recipes/verl-grpo.sh --print-overrides [OVERRIDES...]   (or DRY_RUN=1)
# prints the final override list, one per line, and launches nothing.
set -euo pipefail

MODEL=${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}
TRAIN=${TRAIN:-runs/verl/train.parquet}
VAL=${VAL:-runs/verl/val.parquet}
NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
PROJECT=${PROJECT:-codereasoner}
EXPERIMENT=${EXPERIMENT:-grpo-qwen2.5-coder-7b}
OUT=${OUT:-checkpoints/$PROJECT/$EXPERIMENT}
TP=${TP:-2}
TRAIN_BATCH=${TRAIN_BATCH:-128}
MINI_BATCH=${MINI_BATCH:-32}
MAX_PROMPT=${MAX_PROMPT:-2048}
MAX_RESPONSE=4096
MAX_TOKENS_PER_GPU=${MAX_TOKENS_PER_GPU:-24576}
ROLLOUT_N=5
LR=1e-6
EPOCHS=2
CLIP=0.2
DUAL_CLIP=3.0 # verl's default, stated: the TRL recipe's delta
KL_COEF=${KL_COEF:-0.001}
ROLLOUT_GPU_UTIL=${ROLLOUT_GPU_UTIL:-0.6}
ACTOR_OFFLOAD=${ACTOR_OFFLOAD:-False}
REF_OFFLOAD=${REF_OFFLOAD:-True}
SAVE_FREQ=${SAVE_FREQ:-50}
TEST_FREQ=${TEST_FREQ:-10}
LOGGER=${LOGGER:-[console]}
SEED=${SEED:-0}
REWARD_WORKERS=${REWARD_WORKERS:-8}
cores=$(nproc 2>/dev/null || echo 8)
export CODEREASONER_REWARD_WORKERS=${CODEREASONER_REWARD_WORKERS:-$(( cores / REWARD_WORKERS > 0 ? cores / REWARD_WORKERS : 1 ))}
PYTHON=${PYTHON:-python3}
DRY_RUN=${DRY_RUN:-0}

extra=()
for argument in "$@"; do
  case "$argument" in
    --print-overrides) DRY_RUN=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *) extra+=("$argument") ;;
  esac
done

# The reward module of the codereasoner that $PYTHON imports (the environment that runs verl).
reward_fn_path() {
  "$PYTHON" -c 'import codereasoner.training.verl_reward as m; print(m.__file__)' || {
    echo "verl-grpo.sh: $PYTHON cannot import codereasoner; set PYTHON or REWARD_FN_PATH" >&2
    return 1
  }
}

# A relative local path made absolute: verl reads files in Ray workers, whose working directory is
# not ours. Absolute paths, Hydra lists, URLs and ~ paths are kept as they are.
absolute() {
  case "$1" in
    /* | \[* | *://* | "~"*) printf '%s' "$1" ;;
    *) printf '%s/%s' "$PWD" "$1" ;;
  esac
}

REWARD_FN_PATH=${REWARD_FN_PATH:-$(reward_fn_path)}
TRAIN=$(absolute "$TRAIN")
VAL=$(absolute "$VAL")
OUT=$(absolute "$OUT")
if [[ -e "$MODEL" ]]; then
  MODEL=$(absolute "$MODEL") # a local checkpoint; otherwise a Hugging Face model id
fi

overrides=(
  algorithm.adv_estimator=grpo
  algorithm.norm_adv_by_std_in_grpo=True
  algorithm.use_kl_in_reward=False
  "data.train_files=$TRAIN"
  "data.val_files=$VAL"
  data.prompt_key=prompt
  data.reward_fn_key=data_source
  "data.train_batch_size=$TRAIN_BATCH"
  "data.max_prompt_length=$MAX_PROMPT"
  "data.max_response_length=$MAX_RESPONSE"
  data.filter_overlong_prompts=True
  data.truncation=error
  "data.seed=$SEED"
  "actor_rollout_ref.model.path=$MODEL"
  actor_rollout_ref.model.use_remove_padding=True
  actor_rollout_ref.model.enable_gradient_checkpointing=True
  actor_rollout_ref.actor.strategy=fsdp
  "actor_rollout_ref.actor.optim.lr=$LR"
  actor_rollout_ref.actor.optim.lr_scheduler_type=constant
  actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0.0
  actor_rollout_ref.actor.optim.weight_decay=0.01
  actor_rollout_ref.actor.optim.clip_grad=1.0
  "actor_rollout_ref.actor.ppo_mini_batch_size=$MINI_BATCH"
  actor_rollout_ref.actor.ppo_epochs=1
  actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean
  "actor_rollout_ref.actor.clip_ratio_low=$CLIP"
  "actor_rollout_ref.actor.clip_ratio_high=$CLIP"
  "actor_rollout_ref.actor.clip_ratio_c=$DUAL_CLIP"
  actor_rollout_ref.actor.use_dynamic_bsz=True
  "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$MAX_TOKENS_PER_GPU"
  actor_rollout_ref.actor.use_kl_loss=True
  "actor_rollout_ref.actor.kl_loss_coef=$KL_COEF"
  actor_rollout_ref.actor.kl_loss_type=low_var_kl
  actor_rollout_ref.actor.entropy_coeff=0
  "actor_rollout_ref.actor.fsdp_config.param_offload=$ACTOR_OFFLOAD"
  "actor_rollout_ref.actor.fsdp_config.optimizer_offload=$ACTOR_OFFLOAD"
  "actor_rollout_ref.ref.fsdp_config.param_offload=$REF_OFFLOAD"
  actor_rollout_ref.rollout.name=vllm
  "actor_rollout_ref.rollout.n=$ROLLOUT_N"
  actor_rollout_ref.rollout.temperature=1.0
  actor_rollout_ref.rollout.top_p=1.0
  "actor_rollout_ref.rollout.tensor_model_parallel_size=$TP"
  "actor_rollout_ref.rollout.gpu_memory_utilization=$ROLLOUT_GPU_UTIL"
  reward.reward_manager.source=importlib
  reward.reward_manager.module.path=pkg://codereasoner.training.verl_manager
  reward.reward_manager.name=CodeReasonerRewardManager
  "reward.num_workers=$REWARD_WORKERS"
  "reward.custom_reward_function.path=$REWARD_FN_PATH"
  reward.custom_reward_function.name=compute_score
  trainer.critic_warmup=0
  "trainer.logger=$LOGGER"
  "trainer.project_name=$PROJECT"
  "trainer.experiment_name=$EXPERIMENT"
  "trainer.default_local_dir=$OUT"
  "trainer.nnodes=$NNODES"
  "trainer.n_gpus_per_node=$GPUS_PER_NODE"
  "trainer.total_epochs=$EPOCHS"
  "trainer.save_freq=$SAVE_FREQ"
  "trainer.test_freq=$TEST_FREQ"
  "${extra[@]}"
)

if [[ "$DRY_RUN" == 1 ]]; then
  printf '%s\n' "${overrides[@]}"
  exit 0
fi

for file in "$TRAIN" "$VAL"; do
  if [[ "$file" == /* && ! -e "$file" ]]; then
    echo "verl-grpo.sh: $file does not exist (codereasoner export --format verl --out $file ...)" >&2
    exit 1
  fi
done
if [[ "$NNODES" -gt 1 ]]; then
  export RAY_ADDRESS=${RAY_ADDRESS:-auto}
fi
exec "$PYTHON" -m verl.trainer.main_ppo "${overrides[@]}"
