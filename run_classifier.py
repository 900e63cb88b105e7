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

from absl import app

from albert_tf.commands import table

main = table.main("run_classifier")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
