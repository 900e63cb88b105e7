"""Fine-tunes ALBERT on RACE; evaluates on dev and predicts test, with the original flags.

  python run_race.py --data_dir=race_data --output_dir=out/race \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \
      --do_train --do_eval --do_predict --max_seq_length=512 --max_qa_length=128 \
      --train_batch_size=32 --learning_rate=1e-5 --train_step=12000 --warmup_step=1000 \
      --save_checkpoints_steps=1000

--data_dir holds RACE/{train,dev,test}/{middle,high}/*.txt as downloaded (or
is the RACE folder itself). Rerunning the same command after a crash
resumes. Outputs in --output_dir: model.ckpt-best, eval_results.txt (dev
accuracy overall, middle, high), predictions.json (test: id -> letter),
test_results.txt, eval_log.csv, train_log.csv, learning_curve.png,
TensorBoard summaries.
"""

from absl import app, flags

from albert_tf import cli, multiple_choice

flags.DEFINE_string("data_dir", None, "Folder holding RACE/ (or the RACE folder itself).")
flags.DEFINE_string("output_dir", None, "Checkpoints, results and predictions go here.")
flags.DEFINE_string("albert_config_file", None, "albert_config.json of the model.")
flags.DEFINE_string("init_checkpoint", None, "Original TF1 or albert_tf checkpoint to start from.")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "An encoder SavedModel written by hub_export/export.py.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model, or from_tf_hub.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (every released model does).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of each packed choice.")
flags.DEFINE_integer("max_qa_length", 128, "Question+option pieces kept (the last ones).")
flags.DEFINE_bool("do_train", False, "Fine-tune on train.")
flags.DEFINE_bool("do_eval", False, "Evaluate the best checkpoint on dev.")
flags.DEFINE_bool("do_predict", False, "Predict test (and score it: RACE's answers are public).")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch size (questions).")
flags.DEFINE_integer("eval_batch_size", 8, "Evaluation batch size.")
flags.DEFINE_integer("predict_batch_size", 8, "Prediction batch size.")
flags.DEFINE_float("learning_rate", 1e-5, "Peak learning rate.")
flags.DEFINE_integer("train_step", 12000, "Training steps.")
flags.DEFINE_integer("warmup_step", 1000, "Linear warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Steps between checkpoints (each is "
                     "evaluated on dev).")
flags.DEFINE_integer("num_keep_checkpoint", 5, "Recent checkpoints to keep.")
flags.DEFINE_bool("high_only", False, "Only the high-school part.")
flags.DEFINE_bool("middle_only", False, "Only the middle-school part.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the pooled output.")
flags.DEFINE_string("cached_dir", None, "Where tokenized features are cached (default "
                    "--output_dir; keyed by the questions, vocabulary and lengths).")
flags.DEFINE_enum("distribution_strategy", "one_device",
                  ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "tf.distribute strategy.")
flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16", "float16"],
                  "Compute dtype (variables stay float32).")
flags.DEFINE_integer("seed", 12345, "Seed of the head's initialization and the data order.")
flags.DEFINE_integer("log_steps", 10, "Steps between training summaries.")
flags.mark_flags_as_required(["data_dir", "output_dir"])
FLAGS = flags.FLAGS


def main(argv):
  cli.run_with_flags(argv, multiple_choice.RaceOptions, multiple_choice.run)


if __name__ == "__main__":
  app.run(main)
