"""`baseagent batch` (many tasks in isolated workspaces) and `batch report DIR`, with hermes'
batch_runner names for the same flags.

cli.py adds `commands` to the app (and turns `batch report` into `batch-report`); the work is
batch/'s (docs/BATCH.md).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from baseagent.cli_common import (API_BASE, APPEND_SYSTEM_PROMPT, ATTEMPTS, ATTEMPTS_PARALLEL,
                                  CONFIG, CONTEXT_WINDOW, COST_LIMIT, DISABLE_TOOLS, MAX_TOKENS,
                                  MODEL, NO_VERIFY, OSS, PROFILE, PROMPT_PROFILE,
                                  REASONING_EFFORT, SANDBOX, SANDBOX_NETWORK, SYSTEM_PROMPT_FILE,
                                  TEMPERATURE, TOOL_CHOICE, TOOLS, fail_usage, load_run_settings,
                                  run_flags)

# This module's commands, added to the app by cli.py.
commands = typer.Typer()

@commands.command("batch")
def batch_command(
    ctx: typer.Context,
    tasks_file: Optional[Path] = typer.Argument(None, metavar="TASKS.jsonl", help="One task per line: {\"instruction\", \"id\", \"workspace\", \"setup\", \"check\", \"model\", \"metadata\"} (or hermes' {\"prompt\"})."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory; rerunning with the same one resumes."),
    workers: int = typer.Option(2, "--workers", "-w", "--num_workers", help="Tasks run at once (one process or Ray actor each)."),
    dataset_file: Optional[Path] = typer.Option(None, "--dataset_file", metavar="TASKS.jsonl", help="hermes' batch_runner name for TASKS.jsonl."),
    run_name: Optional[str] = typer.Option(None, "--run_name", metavar="NAME", help="hermes' batch_runner: --out data/NAME."),
    batch_size: Optional[int] = typer.Option(None, "--batch_size", metavar="N", help="hermes' batch_runner: prompts per batch. Here it only numbers the batches (metadata.batch_num = task index // N in trajectories.jsonl): every task is checkpointed on its own."),
    backend: str = typer.Option("local", "--backend", help="local | ray"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Join this Ray cluster [default: start a local one]."),
    task_timeout: Optional[float] = typer.Option(None, "--task-timeout", metavar="S", help="Cancel a task after S seconds (recorded as error)."),
    retries: int = typer.Option(0, "--retries", metavar="K", help="Rerun a task K more times after a worker crash or timeout."),
    json_summary: bool = typer.Option(False, "--json", help="Print the summary as one JSON line on stdout."),
    model: Optional[str] = MODEL,
    api_base: Optional[str] = API_BASE,
    max_iterations: Optional[int] = typer.Option(None, "--max-iterations", "--max_turns", help="Model calls per task [200]; --max_turns is hermes' batch_runner name."),
    attempts: Optional[int] = ATTEMPTS,
    attempts_parallel: Optional[str] = ATTEMPTS_PARALLEL,
    cost_limit: Optional[float] = COST_LIMIT,
    temperature: Optional[float] = TEMPERATURE,
    max_tokens: Optional[int] = MAX_TOKENS,
    context_window: Optional[int] = CONTEXT_WINDOW,
    sandbox: Optional[str] = SANDBOX,
    sandbox_network: bool = SANDBOX_NETWORK,
    reasoning_effort: Optional[str] = REASONING_EFFORT,
    tools: Optional[str] = TOOLS,
    disable_tools: Optional[str] = DISABLE_TOOLS,
    tool_choice: Optional[str] = TOOL_CHOICE,
    system_prompt_file: Optional[Path] = SYSTEM_PROMPT_FILE,
    append_system_prompt: Optional[str] = APPEND_SYSTEM_PROMPT,
    oss: bool = OSS,
    prompt_profile: Optional[str] = PROMPT_PROFILE,
    no_verify: bool = NO_VERIFY,
    config: Optional[Path] = CONFIG,
    profile: Optional[str] = PROFILE,
) -> None:
    """Run every task of TASKS.jsonl in its own workspace copy; results in --out DIR
    (`baseagent batch report DIR`: its HTML report)."""
    # Run flags given before `batch` (`baseagent --model M batch ...`) count too.
    given = {k: v for k, v in ctx.params.items() if v is not None and v is not False}
    params = {**ctx.find_root().params, **given}
    settings = load_run_settings(params.get("config"), params.get("profile"), **run_flags(params))
    from baseagent.batch import BatchError, BatchOptions
    from baseagent.batch.command import run as run_batch
    from baseagent.errors import BaseAgentError

    try:
        tasks_file, out = _batch_paths(tasks_file, dataset_file, out, run_name)
        options = BatchOptions(tasks_file, out, workers=workers, backend=backend,  # type: ignore[arg-type]
                               ray_address=ray_address, task_timeout=task_timeout, retries=retries,
                               batch_size=batch_size)
        code = run_batch(settings, options, json_summary=json_summary)
    except (BatchError, BaseAgentError) as exc:
        raise fail_usage(str(exc)) from None
    raise typer.Exit(code)


@commands.command("batch-report", hidden=True)
def batch_report_command(
    out_dir: Path = typer.Argument(..., metavar="DIR", help="A batch's --out directory."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Where to write the report [DIR/report.html]."),
) -> None:
    """`baseagent batch report DIR`: one self-contained HTML file of the batch (docs/BATCH.md)."""
    from baseagent.batch.report import build_report

    if not (out_dir / "results.jsonl").is_file():
        raise fail_usage(f"{out_dir}: no results.jsonl (not a batch's --out directory?)")
    path = build_report(out_dir, output)
    print(f"baseagent batch: report written to {path}", file=sys.stderr)
    raise typer.Exit(0)


def _batch_paths(tasks_file: Optional[Path], dataset_file: Optional[Path],
                 out: Optional[Path], run_name: Optional[str]) -> tuple[Path, Path]:
    """TASKS.jsonl and --out DIR, from our names or hermes' batch_runner's (--dataset_file,
    --run_name NAME = --out data/NAME, where hermes writes a run)."""
    from baseagent.batch import BatchError

    if tasks_file is not None and dataset_file is not None and tasks_file != dataset_file:
        raise BatchError("give the tasks file once: TASKS.jsonl or --dataset_file")
    tasks = tasks_file or dataset_file
    if tasks is None:
        raise BatchError("no tasks: give TASKS.jsonl (or --dataset_file FILE)")
    if out is not None and run_name is not None:
        raise BatchError("give --out DIR or --run_name NAME (= --out data/NAME), not both")
    if run_name is not None:
        if not run_name.strip() or "/" in run_name or run_name in (".", ".."):
            raise BatchError(f"--run_name {run_name!r}: a plain name, no '/'")
        out = Path("data") / run_name
    if out is None:
        raise BatchError("no output directory: give --out DIR (or --run_name NAME)")
    return tasks, out

