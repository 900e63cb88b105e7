"""Pretraining, GLUE, SQuAD and RACE: what is each task's own, on one run sequence."""
