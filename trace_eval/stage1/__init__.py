"""Stage 1: every unique audio file of a benchmark into a blueprint (docs/blueprints.md).

- `pipeline`: the entry point (`run_blueprints`, `BlueprintOptions`), what the `blueprints` command calls;
- `plan`: which sections of which unique audio are stale; `settings`: `--set NAME.FIELD=VALUE` into extractor
  settings; `profiles`: the extractor settings of the `paper` and `cpu` profiles;
- the engines that carry a plan out: `local` (worker processes plus batched models) and `ray_engine` (Ray Data);
- `record`: results into blueprints, the only writer of the store;
- `store`: the content-addressed store every benchmark shares, over `shelf` (a local folder or an fsspec URL);
  `remote`: a benchmark folder behind a URL;
- `clips`: audio handed over from code (paths, bytes, arrays) as clips of a working benchmark folder;
- `standins`: full-size stand-ins of the paper profile's models (random weights, marked).

The package imports nothing here, so reading a blueprint (`stage1.store`) loads no engine or model library.
"""
