"""Fine-tunes ALBERT on SQuAD v1.1 or v2.0 and writes predictions, with the original flags.

  python run_squad.py --train_file=squad/train-v2.0.json --predict_file=squad/dev-v2.0.json \
      --version_2_with_negative --output_dir=out/squad2 \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \
      --do_train --do_predict --max_seq_length=384 --doc_stride=128 --max_query_length=64 \
      --train_batch_size=48 --learning_rate=3e-5 --num_train_epochs=2 --warmup_proportion=0.1 \
      --save_checkpoints_steps=1000

or, from an exported TF-Hub SavedModel:
  --albert_hub_module_handle=exports/albert_base --spm_model_file=from_tf_hub

Rerunning the same command after a crash resumes. Outputs in --output_dir:
predictions.json, nbest_predictions.json, null_odds.json (v2.0),
eval_results.txt (official EM/F1 when --predict_file has answers; for v2.0
also best_f1 and best_f1_thresh, the threshold to use on another set via
--null_score_diff_threshold), model.ckpt-best, eval_log.csv, train_log.csv,
learning_curve.png, TensorBoard summaries, and the cached features.
"""

from absl import app, flags

from albert_tf import cli, question_answering

flags.DEFINE_string("output_dir", None, "Checkpoints, predictions and results go here.")
flags.DEFINE_string("albert_config_file", None, "albert_config.json of the model.")
flags.DEFINE_string("init_checkpoint", None, "Original TF1 or albert_tf checkpoint to start from.")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "An encoder SavedModel written by hub_export/export.py.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model, or from_tf_hub.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (every released model does).")
flags.DEFINE_string("train_file", None, "SQuAD JSON for training, e.g. train-v1.1.json.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict, e.g. dev-v1.1.json; "
                    "evaluated when it has answers.")
flags.DEFINE_string("train_feature_file", None, "Cached training features (TFRecord; built "
                    "if missing, reused if built from the same inputs and settings).")
flags.DEFINE_string("predict_feature_file", None, "Cached prediction features (TFRecord).")
flags.DEFINE_string("predict_feature_left_file", None, "What prediction needs besides the "
                    "features (JSON lines; default: --predict_feature_file + .meta.jsonl).")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no answer "
                  "(the answer-verification head).")
flags.DEFINE_integer("max_seq_length", 384, "Sequence length of a window.")
flags.DEFINE_integer("doc_stride", 128, "Pieces between the starts of consecutive windows.")
flags.DEFINE_integer("max_query_length", 64, "Question pieces kept.")
flags.DEFINE_bool("do_train", False, "Fine-tune on --train_file.")
flags.DEFINE_bool("do_predict", False, "Predict (and evaluate) --predict_file.")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
flags.DEFINE_integer("predict_batch_size", 8, "Prediction batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_float("num_train_epochs", 3.0, "Epochs over the training features.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warmup.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Steps between checkpoints (each is "
                     "evaluated when --predict_file has answers).")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Recent checkpoints to keep.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_integer("n_best_size", 20, "Answers kept per question in nbest_predictions.json.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in pieces.")
flags.DEFINE_integer("start_n_top", 5, "v2.0: starts considered at inference.")
flags.DEFINE_integer("end_n_top", 5, "v2.0: ends considered per start.")
flags.DEFINE_float("dropout_prob", 0.1, "v2.0: dropout in the answer-class layer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "v2.0: answer \"\" when the null score "
                   "(null_odds.json) is above this; choose it on another set (best_f1_thresh).")
flags.DEFINE_enum("distribution_strategy", "one_device",
                  ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "tf.distribute strategy.")
flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16", "float16"],
                  "Compute dtype (variables stay float32).")
flags.DEFINE_integer("seed", 12345, "Seed of the head's initialization and the data order.")
flags.DEFINE_integer("log_steps", 10, "Steps between training summaries.")
flags.mark_flags_as_required(["output_dir"])
FLAGS = flags.FLAGS


def main(argv):
  cli.run_with_flags(argv, question_answering.SquadOptions, question_answering.run)


if __name__ == "__main__":
  app.run(main)
