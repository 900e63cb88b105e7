#!/usr/bin/env bash
# Fine-tunes ALBERT on every GLUE task with the original per-task hyperparameters
# (google-research/albert run_glue.sh and the README's table), then predicts AX
# with the MNLI model, and prints one Markdown table of dev results.
#
#   GLUE_DIR=glue_data OUTPUT_DIR=glue_out \
#   ALBERT_HUB_MODULE_HANDLE=exports/albert_base ./run_glue.sh
# or
#   GLUE_DIR=glue_data OUTPUT_DIR=glue_out ALBERT_DIR=albert_base \
#   INIT_CHECKPOINT=albert_base/model.ckpt-best ./run_glue.sh
#
# Environment variables (all read here, printed at the start):
#   GLUE_DIR                  the GLUE download (CoLA/, MNLI/, MRPC/, ..., diagnostic/); required
#   OUTPUT_DIR                one subdirectory per task is written here; required
#   ALBERT_HUB_MODULE_HANDLE  an encoder SavedModel from hub_export/export.py, or
#   INIT_CHECKPOINT + ALBERT_DIR  a checkpoint, and the folder with albert_config.json
#                             and 30k-clean.model
#   TASKS                     default "SST-2 MNLI CoLA QNLI QQP RTE STS-B MRPC WNLI"
#   MAX_SEQ_LENGTH            default 512
#   EXTRA_FLAGS               appended to every command (e.g. "--dtype=bfloat16
#                             --distribution_strategy=mirrored")
#   PYTHON                    default .venv/bin/python if present, else python3
# Rerunning resumes unfinished tasks.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-$( [ -x "$HERE/.venv/bin/python" ] && echo "$HERE/.venv/bin/python" || echo python3 )}"
: "${GLUE_DIR:?set GLUE_DIR to the GLUE download (glue_data with CoLA/, MNLI/, MRPC/, ...)}"
: "${OUTPUT_DIR:?set OUTPUT_DIR}"
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-512}"
TASKS="${TASKS:-SST-2 MNLI CoLA QNLI QQP RTE STS-B MRPC WNLI}"
EXTRA_FLAGS="${EXTRA_FLAGS:-}"

if [ -n "${ALBERT_HUB_MODULE_HANDLE:-}" ]; then
  MODEL_FLAGS=(--albert_hub_module_handle="$ALBERT_HUB_MODULE_HANDLE" --spm_model_file=from_tf_hub)
elif [ -n "${INIT_CHECKPOINT:-}" ]; then
  : "${ALBERT_DIR:?set ALBERT_DIR (albert_config.json, 30k-clean.model) with INIT_CHECKPOINT}"
  MODEL_FLAGS=(--albert_config_file="$ALBERT_DIR/albert_config.json"
               --spm_model_file="$ALBERT_DIR/30k-clean.model" --init_checkpoint="$INIT_CHECKPOINT")
else
  echo "set ALBERT_HUB_MODULE_HANDLE, or INIT_CHECKPOINT and ALBERT_DIR" >&2
  exit 2
fi

echo "run_glue.sh: GLUE_DIR=$GLUE_DIR OUTPUT_DIR=$OUTPUT_DIR TASKS=\"$TASKS\"" \
     "MAX_SEQ_LENGTH=$MAX_SEQ_LENGTH EXTRA_FLAGS=\"$EXTRA_FLAGS\" PYTHON=$PYTHON"
echo "model: ${MODEL_FLAGS[*]}"

# task warmup_step learning_rate train_step save_checkpoints_steps train_batch_size
run_task() {
  local task=$1 warmup=$2 lr=$3 steps=$4 save=$5 batch=$6
  local extra=()
  [ "$task" = "QQP" ] && extra+=(--skip_malformed_rows)
  echo "=== $task: lr $lr, $steps steps ($warmup warmup), batch $batch"
  # shellcheck disable=SC2086
  "$PYTHON" "$HERE/run_classifier.py" --task_name="$task" --data_dir="$GLUE_DIR" \
    --output_dir="$OUTPUT_DIR/$task" "${MODEL_FLAGS[@]}" --max_seq_length="$MAX_SEQ_LENGTH" \
    --optimizer=adamw --do_train --do_eval --do_predict --warmup_step="$warmup" \
    --learning_rate="$lr" --train_step="$steps" --save_checkpoints_steps="$save" \
    --train_batch_size="$batch" --eval_batch_size=8 --predict_batch_size=8 \
    "${extra[@]}" $EXTRA_FLAGS
}

for task in $TASKS; do
  case "$task" in
    SST-2) run_task SST-2 1256 1e-5 20935 100 32 ;;
    MNLI)  run_task MNLI 1000 3e-5 10000 100 128 ;;
    CoLA)  run_task CoLA 320 1e-5 5336 100 16 ;;
    QNLI)  run_task QNLI 1986 1e-5 33112 200 32 ;;
    QQP)   run_task QQP 1000 5e-5 14000 100 128 ;;
    RTE)   run_task RTE 200 3e-5 800 100 32 ;;
    STS-B) run_task STS-B 214 2e-5 3598 100 16 ;;
    MRPC)  run_task MRPC 200 2e-5 800 100 32 ;;
    WNLI)  run_task WNLI 200 2e-5 2000 100 16 ;;
    *) echo "unknown task $task" >&2; exit 2 ;;
  esac
done

# AX (the diagnostic set) is predicted with the MNLI model.
if [[ " $TASKS " == *" MNLI "* ]] && [ -e "$GLUE_DIR/diagnostic/diagnostic.tsv" ]; then
  echo "=== AX with the MNLI model"
  # shellcheck disable=SC2086
  "$PYTHON" "$HERE/run_classifier.py" --task_name=AX --data_dir="$GLUE_DIR" \
    --output_dir="$OUTPUT_DIR/AX" "${MODEL_FLAGS[@]}" --max_seq_length="$MAX_SEQ_LENGTH" \
    --init_checkpoint="$OUTPUT_DIR/MNLI/model.ckpt-best" --do_predict $EXTRA_FLAGS
fi

"$PYTHON" - "$OUTPUT_DIR" $TASKS <<'EOF'
"""One Markdown table of the tasks' eval_results.txt."""
import os, sys
out, tasks = sys.argv[1], sys.argv[2:]
columns = ["accuracy", "f1", "matthews_corrcoef", "pearson", "spearman",
           "mismatched_accuracy", "loss", "global_step"]
rows = {}
for task in tasks:
    path = os.path.join(out, task, "eval_results.txt")
    if os.path.exists(path):
        with open(path) as f:
            rows[task] = dict(line.strip().split(" = ") for line in f if " = " in line)
used = [c for c in columns if any(c in r for r in rows.values())]
print("\n| task | " + " | ".join(used) + " |")
print("|---|" + "---|" * len(used))
for task in tasks:
    r = rows.get(task)
    if r is None:
        print(f"| {task} | " + " | ".join("(no results)" if i == 0 else "" for i in range(len(used))) + " |")
        continue
    cells = [(f"{float(r[c]):.4f}" if c != "global_step" else str(int(float(r[c])))) if c in r else ""
             for c in used]
    print(f"| {task} | " + " | ".join(cells) + " |")
EOF
