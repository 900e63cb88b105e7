"""Converts an encoder or a fine-tuned run to ONNX (tf2onnx), float32 or dynamic int8.

  python hub_export/export_onnx.py --model=out/MRPC --output_file=onnx/mrpc.onnx
  python hub_export/export_onnx.py --model=albert_base \
      --output_file=onnx/albert_base.onnx --quantization=dynamic_int8

Inputs `input_word_ids`, `input_mask`, `input_type_ids` (int32, dynamic batch and
sequence), outputs named as the SavedModels' (`logits`; `start_logits`, `end_logits`;
`pooled_output`, `sequence_output`). Beside the file: the vocabulary (`spiece.model` or
`vocab.txt`) and `<file>.json` (do_lower_case, special ids, labels).
"""

from absl import app

from albert_tf.commands import table

main = table.main("export_onnx")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
