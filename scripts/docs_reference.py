"""The reference pages of the documentation site, written from the code: every command's options from its
argparse definition (trace_eval/cli.py and trace_eval/commands/), every record's fields from its JSON Schema
(schemas/). mkdocs.yml names this file as a hook, so `make docs` writes the pages at each build and an option's
help changes its page; run alone it prints one page (`python scripts/docs_reference.py commands|schemas`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"
# Generated pages: path in the site -> the function that writes its markdown.
PAGES = {"reference/commands.md": "commands_page", "reference/schemas.md": "schemas_page"}
# The records in the order a run makes them; any other schema in schemas/ follows, by name.
SCHEMA_ORDER = ("manifest", "label", "blueprint", "verdict", "rubric")


def _cell(text: object) -> str:
    """Text for one cell of a markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


# -- commands ------------------------------------------------------------------------------------------------


def _option_name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    takes = action.nargs != 0
    metavar = action.metavar or (action.dest.upper() if takes else None)
    if action.choices is not None and action.metavar is None and takes:
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    return ", ".join(f"`{o} {metavar}`" if metavar else f"`{o}`" for o in action.option_strings)


def _default(action: argparse.Action) -> str:
    if not action.option_strings or action.nargs == 0 or action.default in (None, argparse.SUPPRESS):
        return ""
    if isinstance(action.default, (list, tuple)) and not action.default:
        return ""
    return f"`{action.default}`"


def command_section(parser: argparse.ArgumentParser, verb: str, example: str, level: int = 2) -> list[str]:
    """One command: what it does, its usage line, an example and a table of its arguments per group."""
    formatter = parser._get_formatter()
    usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
    lines = [f"{'#' * level} {verb}", "", _cell(parser.description or ""), "", "```", usage, "```", ""]
    if level == 2:
        lines += ["Example:", "", "```sh", example, "```", ""]
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if a.help != argparse.SUPPRESS and a.dest != "help"]
        if not actions:
            continue
        title = group.title or "options"
        lines += [f"**{title[:1].upper()}{title[1:]}**", ""]
        if group.description:
            lines += [_cell(group.description), ""]
        lines += ["| argument | default | what it does |", "|---|---|---|"]
        for action in actions:
            text = formatter._expand_help(action) if action.help else ""
            lines.append(f"| {_option_name(action)} | {_default(action)} | {_cell(text)} |")
        lines.append("")
    return lines


def commands_page() -> str:
    from trace_eval import cli

    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = [
        "# Commands",
        "",
        "Every task of `python -m trace_eval` (also installed as `trace-eval`) with all its options, as "
        "`--help` prints them: this page is written from the argparse definitions in `trace_eval/commands/` "
        "when the site is built.",
        "",
        _cell(cli.DESCRIPTION),
        "",
    ]
    for verb in cli.VERBS:
        parser = subparsers.choices[verb]
        lines += command_section(parser, verb, cli.EXAMPLES[verb])
        # A verb with subcommands (prepare): each one's own options, not a bare SOURCE ...
        nested = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        for name, sub in nested.choices.items() if nested else ():
            lines += command_section(sub, f"{verb} {name}", "", level=3)
    return "\n".join(lines)


# -- schemas -------------------------------------------------------------------------------------------------


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "enum" in spec:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    kinds = spec.get("type")
    if kinds is None:
        options = spec.get("anyOf") or spec.get("oneOf")
        return " or ".join(_type(option) for option in options) if options else "any"
    kinds = kinds if isinstance(kinds, list) else [kinds]
    shown = []
    for kind in kinds:
        if kind == "array" and isinstance(spec.get("items"), dict):
            shown.append(f"array of {_type(spec['items'])}")
        else:
            shown.append(kind)
    return " or ".join(shown)


def _fields(spec: dict[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
    """Table rows of an object's properties, nested objects as dotted names (two levels deep)."""
    rows = []
    required = set(spec.get("required", ()))
    for name, field in spec.get("properties", {}).items():
        key = f"{prefix}{name}"
        needed = "yes" if name in required else ""
        rows.append(f"| `{key}` | {_type(field)} | {needed} | {_cell(field.get('description', ''))} |")
        if depth < 2 and "properties" in field:
            rows += _fields(field, f"{key}.", depth + 1)
    return rows


def schema_section(path: Path) -> list[str]:
    schema = json.loads(path.read_text(encoding="utf-8"))
    name = path.name.removesuffix(".schema.json")
    lines = [f"## {schema.get('title', name)}", "", f"`schemas/{path.name}` (`$id`: `{schema.get('$id', '')}`)", ""]
    lines += [_cell(schema.get("description", "")), ""]
    head = ["| field | type | required | meaning |", "|---|---|---|---|"]
    rows = _fields(schema)
    if rows:
        lines += head + rows + [""]
    for def_name, definition in schema.get("$defs", {}).items():
        def_rows = _fields(definition)
        lines += [f"**{def_name}**: {_cell(definition.get('description', ''))}", ""]
        lines += (head + def_rows + [""]) if def_rows else [f"Type: {_type(definition)}", ""]
    return lines


def schemas_page() -> str:
    paths = sorted(SCHEMAS.glob("*.schema.json"))
    rank = {name: i for i, name in enumerate(SCHEMA_ORDER)}
    paths.sort(key=lambda p: (rank.get(p.name.removesuffix(".schema.json"), len(rank)), p.name))
    lines = [
        "# Record schemas",
        "",
        "The JSON Schemas in `schemas/` that every manifest, label record, blueprint, verdict and rubric is checked "
        "against; "
        "this page is written from them when the site is built. A field that can be `null` is `null` when its "
        "value could not be had, and the record says why.",
        "",
    ]
    for path in paths:
        lines += schema_section(path)
    return "\n".join(lines)


# -- the mkdocs hook -----------------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Adds the generated pages to the site (mkdocs >= 1.6: File.generated)."""
    from mkdocs.structure.files import File

    for uri, writer in PAGES.items():
        files.append(File.generated(config, uri, content=globals()[writer]()))
    return files


def main(argv: list[str]) -> int:
    pages = {"commands": commands_page, "schemas": schemas_page}
    if len(argv) != 1 or argv[0] not in pages:
        print(f"usage: python scripts/docs_reference.py {'|'.join(pages)}", file=sys.stderr)
        return 2
    print(pages[argv[0]]())
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
