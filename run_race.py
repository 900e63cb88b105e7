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

from absl import app

from albert_tf.commands import table

main = table.main("run_race")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
