"""Command line: a thin shell over the public API."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from tuner.errors import Interrupted, TunerError, interrupted_text


def _space(args: argparse.Namespace) -> int:
    from tuner.experiment.schema import load_experiment
    from tuner.tuning.space_command import print_space

    experiment = load_experiment(args.experiment, tuple(args.templates))
    print_space(experiment, compile_=args.compile, arch=args.arch, quiet=args.quiet)
    return 0


def _run(args: argparse.Namespace) -> int:
    from tuner.errors import option_name
    from tuner.experiment.schema import load_experiment
    from tuner.tuning.options import RunOptions
    from tuner.tuning.run import run_with

    experiment = load_experiment(args.experiment, tuple(args.templates))
    options = RunOptions(backend=args.backend, replay=args.replay, trials=args.trials, timeout=args.timeout,
                         strategy=args.strategy, seed=args.seed, transfer=args.transfer, storage=args.storage,
                         out=args.out, quiet=args.quiet, report=not args.no_report, summary=True, gpus=args.gpus,
                         heartbeat=args.heartbeat, replay_pace=args.replay_pace, objective=args.objective,
                         counters=args.counters, remeasure_ceilings=args.remeasure_ceilings)
    run_with(experiment, options, option_name)
    return 0


def _profile(args: argparse.Namespace) -> int:
    from tuner.tuning.profile_command import profile_folder

    setting = "all" if args.all else "best"
    note = profile_folder(args.run_dir, setting, args.best, tuple(args.config), tuple(args.templates),
                          report=not args.no_report, quiet=args.quiet)
    print(f"counters: {note.text()}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from tuner.report import write_report

    try:
        written = write_report(args.run_dir)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise TunerError(f"{args.run_dir}: the report cannot be written in this folder ({reason}); the results "
                         f"there are untouched") from None
    for path in written:
        print(path)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from tuner.compare.command import parse_budgets, run_comparison

    strategies = [name for text in args.strategies for name in text.split(",") if name] if args.strategies else None
    run_comparison(args.spaces, strategies, args.repeats, parse_budgets(args.budgets), args.convention, args.jobs,
                   args.out, args.seed, args.quiet, peers=args.peers, score_repeats=args.score_repeats,
                   peer_repeats=args.peer_repeats)
    return 0


def _export(args: argparse.Namespace) -> int:
    from tuner.tuning.export import export

    for done in export(args.run_dir, args.format, args.out):
        missing = "" if done.unmeasured <= 0 else f"; {done.unmeasured} valid configuration(s) never measured, left out"
        unknown = "; the experiment could not be read again, so only what was measured is written" \
            if done.unmeasured < 0 else ""
        filled = f", {done.filled} rejected by the rules written as invalid" if done.filled else ""
        print(f"{done.path}  ({done.study}, {done.family}: {done.recorded} measured{filled}{missing}{unknown})")
        if done.simulation_warning:
            print(f"warning: {done.simulation_warning}", file=sys.stderr)
    return 0


def _device(args: argparse.Namespace) -> int:
    from tuner.backends.catalog import device

    found = device("cpu" if args.cpu else "pycuda")
    print(found.format_summary(found.summary(remeasure=args.remeasure, progress=True)))
    return 0


class _Renamed(argparse.Action):
    """An option's former name, refused with the name it has now (its ``dest``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is called --{self.dest} now")


def _templates_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--templates", metavar="DIR", action="append", default=[],
                        help="a folder of kernel families (<name>.py beside <name>.cu.j2 or <name>.c.j2); may be "
                             "repeated")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tuner",
        description="Autotuning experiments for tiled matrix multiplication on CUDA GPUs and CPUs.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_space_command, _run_command, _report_command, _profile_command, _compare_command, _export_command,
                _device_command, _table_command):
        add(commands)
    return parser


def _space_command(commands: Any) -> None:
    """``space``: an experiment's search space."""
    space = commands.add_parser("space", help="list an experiment's search space, sizes before/after constraints")
    space.add_argument("experiment", help="experiment YAML file")
    _templates_option(space)
    space.add_argument("--compile", action="store_true", help="compile every configuration; show registers, "
                       "shared memory and spills")
    space.add_argument("--arch", help="GPU architecture for --compile (default: the experiment's, sm_90)")
    space.add_argument("--quiet", action="store_true", help="no progress line while compiling")
    space.set_defaults(handler=_space)


def _run_command(commands: Any) -> None:
    """``run``: tune an experiment."""
    from tuner.backends.catalog import NAMES as BACKENDS
    from tuner.experiment.schema import STRATEGIES
    from tuner.settings import COUNTERS_BEST, COUNTERS_CHOICES
    from tuner.strategies.catalog import DEFAULT

    run = commands.add_parser("run", help="tune an experiment: search, measure, record, report")
    run.add_argument("experiment", help="experiment YAML file")
    _templates_option(run)
    run.add_argument("--backend", choices=BACKENDS,
                     help="measure on the GPU (pycuda), measure C kernels on this CPU (cpu; OMP_NUM_THREADS threads, "
                          "else every core) or replay a recorded run (replay); default: replay with --replay, cpu "
                          "when every family of the experiment is C, else pycuda")
    run.add_argument("--replay", metavar="PATH", help="recorded run folder or results.parquet for --backend replay")
    run.add_argument("--trials", type=int, metavar="N", help="distinct configurations per study")
    run.add_argument("--timeout", type=float, metavar="SECONDS", help="wall-time budget per study")
    run.add_argument("--strategy", choices=STRATEGIES, metavar="NAME",
                     help=f"search strategy: {', '.join(STRATEGIES)} (default: the experiment's, else {DEFAULT})")
    run.add_argument("--sampler", dest="strategy", action=_Renamed, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    run.add_argument("--objective", metavar="time|energy|edp|sustained|time,energy",
                     help="what the search pursues: the shortest time, the least energy per launch, the least "
                     "energy-delay product, the shortest time back to back under sustained load, or time and "
                     "energy at once (a Pareto front; NSGA-II unless --strategy names another strategy for several "
                     "objectives); default: the experiment's search.objective, "
                     "else time")
    run.add_argument("--seed", type=int, metavar="N", help="the strategy's seed")
    run.add_argument("--transfer", type=int, metavar="N", help="start each problem with the N fastest configurations "
                     "of the problems of its dtype before it (default: the experiment's search.transfer)")
    run.add_argument("--storage", metavar="URL", help="Optuna storage URL: sqlite:///FILE, postgresql://USER@HOST/DB "
                     "or journal:///PATH/FILE.log (default: the journal file study.log in the output folder)")
    run.add_argument("--gpus", metavar="all|0,1,...", help="measure on several GPUs of this host at once, one "
                     "measuring process each (indices in CUDA_VISIBLE_DEVICES order)")
    run.add_argument("--heartbeat", type=int, metavar="SECONDS", help="heartbeat interval of this worker in a "
                     "shared --storage (default 10; a worker silent for four is dead)")
    run.add_argument("--replay-pace", type=float, metavar="FACTOR", help="with --backend replay: each answer "
                     "takes its recorded device time times FACTOR")
    run.add_argument("--counters", choices=COUNTERS_CHOICES, help="hardware counters read after the search "
                     f"(measure.counters): none, best (the fastest {COUNTERS_BEST} of each study) or all")
    run.add_argument("--remeasure-ceilings", action="store_true", help="measure the device's ceilings again before "
                     "the search (they are measured once per device and reused, with the load they were measured "
                     "under)")
    run.add_argument("--out", metavar="DIR", help="output folder (default: reports/<experiment name>/)")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    run.add_argument("--no-report", action="store_true", help="skip the figures and report.html at the end "
                     "(python -m tuner report DIR writes them later)")
    run.set_defaults(handler=_run)


def _report_command(commands: Any) -> None:
    """``report``: a run folder's report again."""
    report = commands.add_parser("report", help="regenerate the report of a run folder (no GPU needed)")
    report.add_argument("run_dir", help="a run's output folder")
    report.set_defaults(handler=_report)


def _profile_command(commands: Any) -> None:
    """``profile``: hardware counters added to a run folder."""
    from tuner.settings import COUNTERS_BEST

    profile = commands.add_parser("profile", help="add hardware counters (Nsight Compute) to a finished run folder")
    profile.add_argument("run_dir", help="a run's output folder")
    which = profile.add_mutually_exclusive_group()
    which.add_argument("--best", type=int, default=COUNTERS_BEST, metavar="N",
                       help=f"the fastest N successful configurations of each study (default {COUNTERS_BEST})")
    which.add_argument("--all", action="store_true", help="every successful configuration")
    which.add_argument("--config", action="append", default=[], metavar="KEY",
                       help="a configuration by its config_key (may be repeated)")
    _templates_option(profile)
    profile.add_argument("--no-report", action="store_true", help="do not write the report again")
    profile.add_argument("--quiet", action="store_true", help="no progress on stderr")
    profile.set_defaults(handler=_profile)


def _compare_command(commands: Any) -> None:
    """``compare``: strategies scored on recorded spaces."""
    compare = commands.add_parser("compare", help="score search strategies on recorded spaces (no GPU needed)")
    compare.add_argument("spaces", nargs="+", metavar="SPACE", help="a Kernel Tuner cache or T4 file, a run folder, "
                         "or an experiment whose kernels are recordings")
    compare.add_argument("--strategies", action="append", metavar="NAMES",
                         help="strategies to score, comma-separated: ours by name, Optuna's samplers as optuna:NAME, "
                         "'optuna' for all of them (default: all of ours; random search always runs)")
    compare.add_argument("--peers", action="append", metavar="kernel_tuner[:NAMES]",
                         help="Kernel Tuner's strategies too, in its simulation mode (all, or those named; needs "
                         "the kernel_tuner package)")
    compare.add_argument("--repeats", type=int, default=50, metavar="R", help="runs of each strategy (default 50)")
    compare.add_argument("--score-repeats", type=int, metavar="R",
                         help="runs of each strategy for the methodology score (default: --repeats)")
    compare.add_argument("--peer-repeats", type=int, metavar="R",
                         help="runs of each of Kernel Tuner's strategies at each budget (default: --repeats)")
    compare.add_argument("--budgets", default="100,400,1600", metavar="B,B,...",
                         help="evaluations after which to score (default 100,400,1600)")
    compare.add_argument("--convention", choices=("a", "b", "both"), default="both",
                         help="a: the budget counts valid configurations only; b: a failed draw from the full "
                         "product counts too (the published convention); default both")
    compare.add_argument("--jobs", type=int, metavar="N", help="parallel processes (default: one per CPU)")
    compare.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the runs (default 0)")
    compare.add_argument("--out", default="reports/compare", metavar="DIR",
                         help="output folder (default reports/compare)")
    compare.add_argument("--quiet", action="store_true", help="no progress on stderr")
    compare.set_defaults(handler=_compare)


def _export_command(commands: Any) -> None:
    """``export``: a run folder in Kernel Tuner's formats."""
    export = commands.add_parser("export", help="write a run folder's evaluations as Kernel Tuner cache files or T4 "
                                 "results (one file per study and family)")
    export.add_argument("run_dir", help="a run's output folder")
    export.add_argument("--format", required=True, choices=("kernel-tuner-cache", "t4"),
                        help="kernel-tuner-cache: Kernel Tuner's cache file (its simulation mode reads it); t4: the "
                        "T4 results format")
    export.add_argument("--out", metavar="DIR", help="folder of the files (default: RUN_DIR/export)")
    export.set_defaults(handler=_export)


def _device_command(commands: Any) -> None:
    """``device``: the GPU's or the CPU's description and ceilings."""
    device = commands.add_parser("device", help="describe the GPU (or the CPU) and measure its ceilings")
    device.add_argument("--cpu", action="store_true", help="the CPU: cores, caches, vector extensions, compiler; "
                        "STREAM bandwidth and multiply-add rates on one core and on all cores")
    device.add_argument("--remeasure", action="store_true", help="measure the ceilings again, ignoring the cache")
    device.set_defaults(handler=_device)


def _table_command(commands: Any) -> None:
    """``table``: a kernel table over a workload's shapes (tuner.table.command)."""
    from tuner.table.command import add_table_commands

    add_table_commands(commands)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except TunerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Interrupted:  # the command has said what it kept
        return 130
    except KeyboardInterrupt:
        print(interrupted_text(args.command, getattr(args, "run_dir", None)), file=sys.stderr)
        return 130
