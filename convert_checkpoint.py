"""Converts an ALBERT model between the layouts: Hugging Face <-> released TF1, heads included.

  python convert_checkpoint.py --model=albert-base-v2 --output_format=tf1 \
      --output_dir=albert_base_tf1
  python convert_checkpoint.py --model=out/MRPC --output_format=hf --output_dir=hf/albert-mrpc

--input is a Hugging Face directory, a released TF1 one (albert_config.json,
model.ckpt-best), an output directory of run_classifier.py / run_race.py /
run_squad.py / run_pretraining.py, or an encoder SavedModel of
hub_export/export.py. TF-Hub SavedModels are written by hub_export/export.py
(which takes any of these directories as --albert_directory).
"""

from absl import app

from albert_tf.commands import table

main = table.main("convert_checkpoint")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
