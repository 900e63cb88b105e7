"""Fine-tunes ALBERT on a GLUE task; evaluates, predicts and exports, with the original flags.

  python run_classifier.py --task_name=MRPC --data_dir=glue_data/MRPC --output_dir=out/mrpc \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \
      --do_train --do_eval --do_predict --max_seq_length=512 --optimizer=adamw \
      --learning_rate=2e-5 --train_step=800 --warmup_step=200 --train_batch_size=32 \
      --save_checkpoints_steps=100

or, from an exported TF-Hub SavedModel:
  --albert_hub_module_handle=exports/albert_base --spm_model_file=from_tf_hub

Rerunning the same command after a crash resumes. Outputs in --output_dir:
model.ckpt-best (best dev checkpoint), best_trial.txt, eval_results.txt,
eval_log.csv, train_log.csv, learning_curve.png, <TASK>.tsv (GLUE
submission), TensorBoard summaries (train/, eval/).
"""

from absl import app, flags

from albert_tf import cli, classifier

flags.DEFINE_string("data_dir", None, "The task's GLUE directory (or the GLUE root).")
flags.DEFINE_string("output_dir", None, "Checkpoints, results and predictions go here.")
flags.DEFINE_string("task_name", None, "CoLA, MNLI, MRPC, QNLI, QQP, RTE, SST-2, STS-B, WNLI "
                    "or AX (case-insensitive).")
flags.DEFINE_string("albert_config_file", None, "albert_config.json of the model.")
flags.DEFINE_string("init_checkpoint", None, "Original TF1 or albert_tf checkpoint to start from.")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "An encoder SavedModel written by hub_export/export.py.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model, or from_tf_hub.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (every released model does).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length after tokenization and packing.")
flags.DEFINE_bool("do_train", False, "Fine-tune on train.tsv.")
flags.DEFINE_bool("do_eval", False, "Evaluate the best checkpoint on dev.")
flags.DEFINE_bool("do_predict", False, "Write GLUE submission files for the test split.")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", 8, "Evaluation batch size.")
flags.DEFINE_integer("predict_batch_size", 8, "Prediction batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_integer("train_step", 1000, "Training steps.")
flags.DEFINE_integer("warmup_step", 0, "Linear warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Steps between checkpoints (each is "
                     "evaluated on dev).")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Recent checkpoints to keep (model.ckpt-best "
                     "is kept apart).")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the pooled output.")
flags.DEFINE_string("cached_dir", None, "Where tokenized features are cached (default "
                    "--output_dir).")
flags.DEFINE_string("export_dir", None, "Write an end-to-end SavedModel (raw text in, "
                    "probabilities out) of the best checkpoint here.")
flags.DEFINE_bool("skip_malformed_rows", False, "Skip rows with the wrong number of fields, with "
                  "a warning (the original did so for QQP), instead of failing.")
flags.DEFINE_enum("distribution_strategy", "one_device",
                  ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "tf.distribute strategy.")
flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16", "float16"],
                  "Compute dtype (variables stay float32).")
flags.DEFINE_integer("seed", 12345, "Seed of the head's initialization and the data order.")
flags.DEFINE_integer("log_steps", 10, "Steps between training summaries.")
flags.mark_flags_as_required(["data_dir", "output_dir", "task_name"])
FLAGS = flags.FLAGS


def main(argv):
  cli.run_with_flags(argv, classifier.ClassifierOptions, classifier.run)


if __name__ == "__main__":
  app.run(main)
