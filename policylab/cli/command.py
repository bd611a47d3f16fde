"""Commands generated from their request models, and the one way a command ends.

Options are the model's fields, parsed by pydantic alone; the run function is imported only when the command
runs, so `--help` loads no numpy. The last line on stdout is `report: PATH`."""

from __future__ import annotations

import importlib
import inspect
import typing
from pathlib import Path
from typing import Any, Literal, Optional

import typer

from policylab.config import Request, validated
from policylab.report.run_kinds import RunKind, register
from policylab.result import Result, flag_of


def _metavar(annotation: Any) -> str:
    """What one value of an option looks like; a list inside one value (an optional list, which its
    field's validator splits at commas) shows its item and a comma: `--command FLOAT,...`."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is Literal:
        return "[" + "|".join(str(a) for a in args) + "]"
    if typing.get_origin(annotation) is list:
        return f"{_metavar(args[0])},..."
    if args:
        return _metavar(args[0])
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "PATH"
    base = typing.get_origin(annotation) or annotation
    return {int: "INT", float: "FLOAT", str: "TEXT"}.get(base, "VALUE")


def _bounds(info) -> str:
    parts = []
    for m in info.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {v:,}" if isinstance(v, int) else f"{sym} {v}")
    return f" [{', '.join(parts)}]" if parts else ""


def _is_bool(annotation: Any) -> bool:
    return annotation is bool or set(typing.get_args(annotation)) == {bool, type(None)}


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(annotation) is list


def _parameter(name: str, info) -> inspect.Parameter:
    name = info.alias or name  # the name the user sees: flag, error messages, validation key
    extra = info.json_schema_extra or {}
    flags = [flag_of(name), *extra.get("short", [])]
    help_text = (info.description or "") + _bounds(info)
    required = info.is_required()
    default = None if required else info.get_default(call_default_factory=True)
    if _is_bool(info.annotation):
        opt = typer.Option(bool(default), f"{flags[0]}/--no-{name.replace('_', '-')}", help=help_text)
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=bool)
    if extra.get("argument"):  # a positional argument: `policylab runs DIR`
        arg = typer.Argument(..., help=help_text, metavar=name.upper(), show_default=False)
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=arg, annotation=str)
    if isinstance(default, list):
        default = [str(v) for v in default]
    elif default is not None:
        default = str(default)
    repeated = _is_list(info.annotation)  # one value per flag: each shows as the item does
    metavar = _metavar(typing.get_args(info.annotation)[0] if repeated else info.annotation)
    opt = typer.Option(
        ... if required else default, *flags, help=help_text, metavar=metavar, show_default=default is not None
    )
    kind = list[str] if repeated else str
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=kind if required else Optional[kind]
    )


def _load(target: str):
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def run_request(model: type[Request], target: str, data: dict[str, Any]) -> int:
    """Validate `data` into `model`, check the machine can hold the run, run it, print its end."""
    req = validated(model, data)
    req.check_resources()
    result = _load(target)(req)
    if not isinstance(result, Result):
        result = Result(Path(result))
    for line in result.headlines:
        typer.echo(line)
    typer.echo(f"report: {result.report}")
    return result.exit_code


def command(
    group: typer.Typer, name: str, model: type[Request], target: str, *, index: RunKind | str | tuple[str, ...] | None
) -> None:
    """Mount `name` on `group`: options from `model`, behaviour from `target` ("module:function").

    `index` says what the runs index lists for the command's out folder: its `RunKind` (registered
    here), the full name (or names) of the command whose run folder it writes (`policylab demo` makes
    a `breakout train` run; boundary select writes inside a `boundary reduce` folder), or None when
    it makes no run folder (a checkpoint folder, the index itself). Required, so that a new command
    says so and appears in `policylab runs` without an edit to the index.
    """
    if isinstance(index, RunKind):
        register(index)

    def fn(**kwargs: Any) -> None:
        code = run_request(model, target, {k: v for k, v in kwargs.items() if v is not None})
        if code:
            raise typer.Exit(code)

    fn.request_model = model  # type: ignore[attr-defined]  # what the CLI tests enumerate
    fn.run_index = index  # type: ignore[attr-defined]  # what the runs-index test checks, per command
    fn.__signature__ = inspect.Signature([_parameter(n, f) for n, f in model.model_fields.items()])
    fn.__doc__ = inspect.cleandoc(model.__doc__ or "")
    fn.__name__ = name.replace("-", "_")
    group.command(name)(fn)
