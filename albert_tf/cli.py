"""Command-line flags generated from options dataclasses, so a flag and its field cannot drift.

A field's name is the flag's name, its default the flag's default, and its
metadata (from `option`) the help text and, for a choice, the allowed values.
A field without a default is a required flag.

  @dataclasses.dataclass(kw_only=True)
  class Options:
    output_dir: str = option(help="Where results go.")            # required
    dtype: str = option("float32", "Compute dtype.", choices=("float32", "bfloat16"))

  define_flags(Options)            # in the entry script, at import time
  run_with_flags(argv, Options, run)
"""

import dataclasses
import gc
import math
import os
import sys
import typing
from typing import Callable, Dict, Optional, Sequence

from absl import flags
from absl import logging

from albert_tf import console

_REQUIRED = dataclasses.MISSING


def option(default=_REQUIRED, help: str = "", choices: Optional[Sequence[str]] = None,  # pylint: disable=redefined-builtin
           training: Optional[str] = None, at_least=None, above=None, at_most=None,
           below=None):
  """A dataclass field that is also a command-line flag (no default: a required flag).

  `training="fixed"` marks a flag that shapes training: a resumed run must keep its
  value; `training="may grow"` one that may only grow (the step count).
  `at_least`/`above`/`at_most`/`below` bound a number; `Checked` options refuse a
  value outside (and NaN or infinity) when they are made, naming the flag.
  """
  if training not in (None, "fixed", "may grow"):
    raise ValueError(f"training={training!r}: None, 'fixed' or 'may grow'")
  bounds = (at_least, above, at_most, below)
  metadata = dict(help=help, choices=tuple(choices) if choices else None, training=training,
                  bounds=bounds if any(b is not None for b in bounds) else None)
  return dataclasses.field(default=default, metadata=metadata)


def describe_bounds(bounds) -> str:
  """(at_least, above, at_most, below) -> "at least 1", "in [0, 1)", "above 0"..."""
  at_least, above, at_most, below = bounds
  low = "[" if at_least is not None else "(" if above is not None else None
  high = "]" if at_most is not None else ")" if below is not None else None
  lo = at_least if at_least is not None else above
  hi = at_most if at_most is not None else below
  if low and high:
    return f"in {low}{lo}, {hi}{high}"
  if low:
    return f"at least {lo}" if low == "[" else f"above {lo}"
  return f"at most {hi}" if high == "]" else f"below {hi}"


class Checked:
  """Mixin for options dataclasses: on construction (from flags or from Python), every
  bounded field is checked, so a bad number stops a run before anything is written
  (all bad numbers in one message)."""

  def __post_init__(self):
    errors = []
    for field in dataclasses.fields(self):
      bounds = field.metadata.get("bounds")
      value = getattr(self, field.name)
      if bounds is None or value is None:
        continue
      at_least, above, at_most, below = bounds
      ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value)
            and (at_least is None or value >= at_least) and (above is None or value > above)
            and (at_most is None or value <= at_most) and (below is None or value < below))
      if not ok:
        errors.append(f"--{field.name}={value}: must be {describe_bounds(bounds)}")
    if errors:
      raise ValueError("; ".join(errors))


def _base_type(annotation):
  """str for Optional[str], and so on."""
  args = [a for a in typing.get_args(annotation) if a is not type(None)]
  return args[0] if typing.get_origin(annotation) is typing.Union and len(args) == 1 \
      else annotation


@dataclasses.dataclass(frozen=True)
class Original:
  """A flag of the original script with no option here: accepted, then mapped to an
  option (`maps_to`), or ignored with a one-line note; `only_default` refuses other
  values (a feature albert_tf does not offer)."""
  kind: type
  default: object
  note: str
  maps_to: Optional[str] = None
  only_default: bool = False


# The original's TPUEstimator flags, on every training script (tpu_zone and gcp_project
# are options of their own).
TPU_FLAGS = {
    "use_tpu": Original(bool, False, "with --tpu_name (or --master): "
                        "--distribution_strategy=tpu", maps_to="distribution_strategy"),
    "tpu_name": Original(str, None, "the TPU address, as --tpu", maps_to="tpu"),
    "master": Original(str, None, "the TPU address when --tpu_name is not given, as --tpu",
                       maps_to="tpu"),
    "num_tpu_cores": Original(int, 8, "ignored: the TPU strategy uses every core of --tpu"),
    "iterations_per_loop": Original(int, 1000, "ignored: the Keras loop runs one step per call "
                                    "(no TPUEstimator host loop)"),
}


def define_flags(options_type, flag_values: flags.FlagValues = flags.FLAGS,
                 original: Optional[Dict[str, Original]] = None) -> None:
  """Defines one absl flag per field of `options_type` (fields already defined are kept),
  and the original script's flags in `original`, which `run_with_flags` maps or notes."""
  hints = typing.get_type_hints(options_type)
  required = []
  for field in dataclasses.fields(options_type):
    if field.name in flag_values:
      continue
    kind = _base_type(hints[field.name])
    default = None if field.default is _REQUIRED else field.default
    help_text = field.metadata.get("help") or field.name
    if field.metadata.get("bounds"):
      help_text += f" ({describe_bounds(field.metadata['bounds'])})"
    _define(field.name, kind, default, help_text, field.metadata.get("choices"), flag_values,
            f"{options_type.__name__}.{field.name}")
    if field.default is _REQUIRED:
      required.append(field.name)
  if required:
    flags.mark_flags_as_required(required, flag_values=flag_values)
  for name, spec in (original or {}).items():
    if name not in flag_values:
      _define(name, spec.kind, spec.default, f"Original flag: {spec.note}.", None, flag_values,
              name)
  _ORIGINAL[id(flag_values)] = dict(original or {})


_ORIGINAL: Dict[int, Dict[str, Original]] = {}


def _define(name, kind, default, help_text, choices, flag_values, where):
  if choices:
    flags.DEFINE_enum(name, default, list(choices), help_text, flag_values=flag_values)
  elif kind is bool:
    flags.DEFINE_bool(name, default, help_text, flag_values=flag_values)
  elif kind is int:
    flags.DEFINE_integer(name, default, help_text, flag_values=flag_values)
  elif kind is float:
    flags.DEFINE_float(name, default, help_text, flag_values=flag_values)
  elif kind is str:
    flags.DEFINE_string(name, default, help_text, flag_values=flag_values)
  else:
    raise TypeError(f"{where}: no flag type for {kind}")


def original_flag_overrides(flag_values: flags.FlagValues = flags.FLAGS) -> Dict[str, object]:
  """Option values the original flags given on the command line stand for; prints one
  line per original flag saying what became of it. Refused values raise ValueError."""
  specs = _ORIGINAL.get(id(flag_values), {})
  given = {n: flag_values[n].value for n in specs if flag_values[n].present}
  overrides = {}
  for name, value in given.items():
    spec = specs[name]
    if spec.only_default and value != spec.default:
      raise ValueError(f"--{name}={value} is not supported: {spec.note}")
    if spec.maps_to is None:
      print(f"--{name}: {spec.note}")
  if given.get("use_tpu"):
    address = given.get("tpu_name") or given.get("master")
    overrides = dict(distribution_strategy="tpu", tpu=address)
    print(f"--use_tpu: --distribution_strategy=tpu --tpu={address or '(local TPU)'}")
  elif given.get("tpu_name") or given.get("master"):
    print("--tpu_name/--master: ignored without --use_tpu (as in the original)")
  return overrides


def options_from_flags(options_type, flag_values: flags.FlagValues = flags.FLAGS,
                       overrides: Optional[Dict[str, object]] = None):
  """An `options_type` holding the flags' values (and `overrides`)."""
  values = {f.name: flag_values[f.name].value for f in dataclasses.fields(options_type)}
  values.update(overrides or {})
  return options_type(**values)


# The cyclic garbage collector's first-generation threshold in a command's process (Python's
# default is 700 allocations). Building and tracing TensorFlow graphs allocates millions of
# small objects; at the default every few hundred of them start a collection that walks
# the young objects, and the older generations' collections walk everything imported.
GC_THRESHOLD = (50_000, 20, 100)
_gc_tuned = []


def tune_gc() -> None:
  """Once per process, after the imports: moves the objects alive now (the imported
  modules: TensorFlow's are millions) out of the garbage collector's sight, and collects
  less often. Tracing and exporting take 5-17% less CPU (docs/testing.md); reference
  counting still frees everything as before, and cycles are still collected."""
  if _gc_tuned:
    return
  _gc_tuned.append(True)
  gc.collect()
  gc.freeze()
  gc.set_threshold(*GC_THRESHOLD)


def run_with_flags(argv: Sequence[str], options_type,
                   run: Callable[..., Dict[str, Dict[str, float]]]):
  """Builds `options_type` from the flags, calls `run(options)` and prints the results.

  An input error (a bad value, a missing or malformed file, an output that exists)
  ends the program with its message and one line of help on stderr, exit status 1,
  no traceback and no flag listing. An exception with an `exit_code` (a stop by
  SIGTERM, a full disk) ends it with its one-line message and that status.
  """
  if len(argv) > 1:
    _usage_error(f"unexpected arguments: {' '.join(argv[1:])}")
  tune_gc()
  console.keep_logs()   # (absl's lines into log.txt, unless the user asked for them)
  try:
    results = run(options_from_flags(options_type, overrides=original_flag_overrides()))
  except (FileNotFoundError, FileExistsError, ValueError) as e:
    _usage_error(str(e))
  except Exception as e:  # pylint: disable=broad-except
    # Ends that are not usage errors and say their own exit status: training stopped by
    # SIGTERM/SIGINT after saving (75), a write that found no space or permission (1).
    if getattr(e, "exit_code", None) is not None:
      sys.stdout.flush()
      sys.stderr.write(f"{_program()}: {e}\n")
      sys.exit(e.exit_code)
    # Any other error: in one line with its cause where the console is quiet, its
    # traceback in log.txt (a bug's traceback stays on the console where there is none).
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if not console.quiet() or not (console.log_path() or isinstance(e, tf.errors.OpError)):
      raise
    logging.exception("%s stopped", _program())
    sys.stdout.flush()
    sys.stderr.write(f"{_program()}: error: {console.error_line(e)}\n")
    sys.exit(1)
  print_results(results)
  return results


def print_results(results: Optional[Dict[str, Dict[str, object]]]) -> None:
  """A command's closing lines: `kind: key = value, ...` for each kind of results, then
  the line of a run that did not learn (`albert_tf.tasks.base.not_learned`), last."""
  last = []
  for kind, metrics in (results or {}).items():
    if isinstance(metrics, dict):
      last += [v for k, v in metrics.items() if k == "did_not_learn"]
      print(f"{kind}: " + ", ".join(f"{k} = {v:.4g}" if isinstance(v, (int, float)) else
                                    f"{k} = {v}" for k, v in metrics.items()
                                    if k != "did_not_learn"))
  for line in last:
    print(line)


def _program() -> str:
  return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "albert_tf"


def _usage_error(message: str) -> None:
  sys.stdout.flush()
  sys.stderr.write(f"{_program()}: error: {message}\n"
                   f"(--helpfull lists every flag)\n")
  sys.exit(1)
