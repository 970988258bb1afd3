"""Stage 1 internals: the plan, the engines that carry it out, the recording (see trace_eval.pipeline)."""
