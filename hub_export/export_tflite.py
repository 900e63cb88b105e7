"""Converts a fine-tuned classifier or tagger to a TFLite (LiteRT) file that takes raw text.

  python hub_export/export_tflite.py --model=out/MRPC \
      --output_file=mrpc.tflite --quantization=dynamic_int8

a run_ner.py run (the sentence in; a tag id per packed piece out, `tag_ids` [1, S],
with the packed `input_word_ids`):

  python hub_export/export_tflite.py --model=out/conll2003 --output_file=ner.tflite

or a bare encoder (sequence and pooled outputs) for a head of one's own:

  python hub_export/export_tflite.py --model=albert_base \
      --output_file=albert_base.tflite --segments=2

The file tokenizes in the model (tensorflow-text's TFLite ops): its
`serving_default` signature takes `sentence1` and `sentence2` (pair tasks) or
`sentence`, string [1], and returns `probabilities` [1, C] (STS-B: `score`).
Run it with the TF Text ops registered:

  from ai_edge_litert.interpreter import InterpreterWithCustomOps
  import tensorflow_text
  interpreter = InterpreterWithCustomOps(
      custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
      model_path="mrpc.tflite")
"""

from absl import app

from albert_tf.commands import table

main = table.main("export_tflite")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
