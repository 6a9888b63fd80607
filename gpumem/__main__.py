"""The ``gpumem`` command (and ``python -m gpumem``).

``gpumem`` (or ``gpumem report``) runs every lesson's headline experiment on
this GPU and prints one table: what was measured, what :mod:`gpumem.model`
predicts, and a takeaway (:mod:`gpumem.report`).  Without a GPU it says so
and prints the model's side.  ``gpumem compare A.json B.json`` sets two ``report --json``
runs side by side (``gpumem report --compare A.json``: this run beside a saved one).
``gpumem tour`` is the short device summary
with vec_add and matmul timings.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import shutil
import tempfile
import textwrap
import time

import numpy as np

import gpumem as gm
from gpumem.runtime.table import DEFAULT_WIDTH

DESCRIPTION = """\
Explore and measure the GPU memory hierarchy. With no command, runs 'report': the
memory card (every level's size, latency and bandwidth measured on this GPU beside
the published figures), then every lesson's headline experiment, printed as one
table of what was measured, what gpumem.model predicts, and a one-line takeaway.
Without a GPU, prints the published figures and the model's side of every row."""

REPORT_HELP = """\
Print the memory card (one row per level, from the lessons that measure it), then
run every lesson's headline experiment and print one table; or, with --lesson, that
lesson's full sweeps. --compare A.json then sets this run beside a saved one, as
'gpumem compare' does."""

TOUR_HELP = ("The device summary, vec_add's bandwidth and a few matmuls (the model's numbers "
             "without a GPU).")


# ---- argument types: bad values are argparse errors (exit 2), never tracebacks ------
def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not allowed; give a positive integer")
    return v


def _out_dir(text: str) -> str:
    """A folder the report can be written into: made now (before anything is measured)
    and tried with a file, so a bad path is an argparse error (exit 2), not a traceback
    after the whole report ran."""
    if not text:
        raise argparse.ArgumentTypeError("give a folder name")
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a folder")
    try:
        os.makedirs(text, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".gpumem-", dir=text)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write into {text!r}: "
                                         f"{e.strerror or e}") from None
    from gpumem.report import REPORT_FILES, plot_names

    # every file the report may write there: a folder or a read-only file in its place
    # would stop it only after the whole report ran
    names = list(REPORT_FILES) + plot_names([{"lesson": "matmul"}], [{}])
    for name in names:
        p = os.path.join(text, name)
        if os.path.lexists(p) and not os.path.isfile(p):
            raise argparse.ArgumentTypeError(f"cannot write {p!r}: it exists and is not a file")
        if os.path.isfile(p) and not os.access(p, os.W_OK):
            raise argparse.ArgumentTypeError(f"cannot write {p!r}: permission denied")
    return text


def _error(msg: str) -> int:
    """A one-line error on stderr, as argparse words its own; the exit status 2."""
    print(f"gpumem: error: {msg}", file=sys.stderr)
    return 2


# ---- tour ----------------------------------------------------------------------------------
_TOUR_MATMULS = [("naive", 16), ("tiled", 8), ("tiled", 16), ("tiled", 32)]


def _tour_gpu(size: int) -> None:
    print(gm.device().summary())
    print()
    rng = np.random.default_rng()
    n = 1 << 24
    a = gm.to_device(rng.standard_normal(n).astype(np.float32))
    b = gm.to_device(rng.standard_normal(n).astype(np.float32))
    r = gm.bench(gm.vec_add, a, b, repeat=20)
    peak = gm.device().theoretical_bandwidth_gbps
    print(f"vec_add, n = 2^24 floats: {r.median_ms:.3f} ms, {r.gbps:.0f} GB/s "
          f"({100 * r.gbps / peak:.0f}% of the {peak:.0f} GB/s theoretical)")
    print()
    A = gm.to_device(rng.standard_normal((size, size)).astype(np.float32))
    B = gm.to_device(rng.standard_normal((size, size)).astype(np.float32))
    rows = []
    for variant, tile in _TOUR_MATMULS:
        r = gm.bench(gm.matmul, A, B, tile=tile, variant=variant, repeat=5, warmup=1)
        rows.append({"variant": variant, "tile": tile, "median_ms": r.median_ms,
                     "GFLOP/s": r.gflops})
    print(gm.Table(rows, sources={"median_ms": "measured", "GFLOP/s": "measured"},
                   title=f"matmul {size}x{size}x{size} float32"))


def _tour_model(size: int) -> None:
    from gpumem import model

    rows = []
    for variant, tile in _TOUR_MATMULS:
        t = model.matmul_traffic(size, size, size, variant, tile)
        rows.append({"variant": variant, "tile": tile,
                     "global load MB": t["load_bytes"] / 1e6,
                     "FLOPs per loaded float": t["cgma"]})
    print(gm.Table(rows, sources={"global load MB": "model", "FLOPs per loaded float": "model"},
                   title=f"matmul {size}x{size}x{size}: global-memory traffic the kernels request"))


def _no_gpu_line(reason: str) -> str:
    return f"No GPU here ({reason})."


def _tour(args: argparse.Namespace) -> int:
    print(_banner())
    if gm.is_available():
        _tour_gpu(args.size)
        return 0
    from gpumem import report

    print(_no_gpu_line(report.no_gpu_reason()))
    print("Without a GPU, gpumem validates arguments, lists its kernels and predicts their "
          "memory traffic with gpumem.model:\n")
    for v in gm.variants():
        print(f"  {v.family}/{v.name}: {v.idea}")
    print()
    _tour_model(args.size)
    return 0


# ---- report -------------------------------------------------------------------------------
def _banner() -> str:
    return f"gpumem {gm.__version__}, built with CUDA runtime %d.%d" % gm._core.runtime_version()


def _report(args: argparse.Namespace) -> int:
    from gpumem import report

    start = time.perf_counter()
    reason = report.no_gpu_reason()
    measure = reason is None
    progress = not args.no_progress
    lines = []
    if not measure:
        lines.append(_no_gpu_line(reason) + " Every row shows gpumem.model's side and what it "
                     "would measure.")
    lines.append(_banner())
    if measure:
        dev = gm.device()
        counters = "hardware counters readable" if gm.profiler_available() else \
            "hardware counters not readable here (the model's side stands alone)"
        lines.append(f"{dev.name}, {dev.multiprocessors} SMs; {counters}")
    if args.json:
        for line in lines:                      # stdout is the JSON alone
            print(line, file=sys.stderr)
    else:
        width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
        print("\n".join(textwrap.fill(line, width) for line in lines) + "\n", flush=True)
    meta = {"gpumem": gm.__version__, "gpu": measure, "no_gpu_reason": reason,
            "device": gm.device().name if measure else None,
            "profiler": bool(measure and gm.profiler_available()), "quick": args.quick}
    if args.lesson:
        tables = report.sweeps(args.lesson, measure=measure, quick=args.quick, progress=progress)
        rows: list = []
        card: list = []
        doc = report.to_json(tables=tables, lesson=args.lesson, **meta)
        if args.json:
            print(doc)
        else:
            print("\n\n".join(str(t) for t in tables))
    else:
        card = report.card(measure=measure, quick=args.quick, progress=progress)
        cond = report.conditions(measure)
        ctitle = report.card_title(measure, cond)
        gaps = report.ceiling_table(card)
        # each latency as the papers measure it, and the levels none is published for (with
        # the sources searched): only where the card measured them
        methods = [t for t in (report.methods_table(card),
                               report.unpublished_table(card, report.card_reference(measure)[0]))
                   if len(t)]
        if not args.json:
            print(report.card_table(card, ctitle), end="\n\n", flush=True)
            for t in [gaps, *methods]:
                print(t, end="\n\n", flush=True)
        rows = report.headlines(measure=measure, quick=args.quick, progress=progress)
        tables = [report.card_table(card, ctitle), gaps, *methods, report.as_table(rows)]
        elapsed = time.perf_counter() - start
        doc = report.to_json(rows=rows, card=card, card_title=ctitle, conditions=cond,
                             elapsed_s=round(elapsed, 2), **meta)
        if args.json:
            print(doc)
        else:
            print(report.as_text(rows))
        if args.compare is not None:
            from gpumem import compare

            this = dict(json.loads(doc), _path="this run")
            print("\n" + compare.as_text(args.compare, this),
                  file=sys.stderr if args.json else sys.stdout)
    if args.out:
        card_rows = [] if args.lesson else card
        try:
            paths = report.write(args.out, tables, header=lines, rows=rows,
                                 measure=measure, quick=args.quick, card=card_rows, doc=doc)
        except OSError as e:       # the folder changed while the report ran
            where = e.filename if e.filename is not None else args.out
            return _error(f"cannot write {os.fspath(where)!r}: {e.strerror or e}")
        where = sys.stderr if args.json else sys.stdout
        print("wrote " + ", ".join(paths), file=where)
        written = {os.path.basename(p) for p in paths}
        skipped = [n for n in report.plot_names(rows, card_rows) if n not in written] \
            if rows else []
        if skipped:
            print("no plots: matplotlib is not installed (pip install 'gpumem-lab[report]'); "
                  "skipped " + ", ".join(skipped), file=where)
    print(f"gpumem report took {time.perf_counter() - start:.1f} s"
          + (" (--quick)" if args.quick else ""), file=sys.stderr if args.json else sys.stdout)
    return 0


# ---- compare -------------------------------------------------------------------------------
COMPARE_HELP = """\
Two GPUs side by side: the memory card and the headlines of two 'gpumem report --json'
runs (e.g. 'gpumem report --json > h100.json' on each machine), with B over A."""


def _report_file(text: str) -> dict:
    from gpumem import compare

    try:
        return compare.load(text)
    except compare.ReportFileError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _compare(args: argparse.Namespace) -> int:
    from gpumem import compare

    print(compare.as_text(args.a, args.b))
    return 0


# ---- the parser ----------------------------------------------------------------------------
def _add_report_options(p: argparse.ArgumentParser) -> None:
    from gpumem.report import SWEEPS

    which = p.add_mutually_exclusive_group()
    which.add_argument("--lesson", choices=list(SWEEPS), metavar="NAME",
                       help="run this lesson's full sweep(s) instead and print their tables; "
                            "one of: " + ", ".join(SWEEPS))
    which.add_argument("--compare", type=_report_file, metavar="A.json",
                       help="then set this run beside the 'gpumem report --json' run in A.json "
                            "(as 'gpumem compare A.json B.json', this run as B; on stderr "
                            "with --json)")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    p.add_argument("--json", action="store_true",
                   help="print the rows (or the lesson's tables) as JSON on stdout")
    p.add_argument("--out", type=_out_dir, metavar="DIR",
                   help="also write report.md, report.html, report.json (for 'gpumem "
                        "compare') and PNG plots (with matplotlib) into DIR")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (tqdm, else one line per step, on stderr)")


def build_parser() -> argparse.ArgumentParser:
    """The ``gpumem`` argument parser: subcommands ``report`` (the default), ``tour`` and
    ``compare``."""
    ap = argparse.ArgumentParser(prog="gpumem", description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="'gpumem COMMAND --help' describes each command. "
                                        "'gpumem --size N' is 'gpumem tour --size N', as "
                                        "before.")
    ap.add_argument("--version", action="version",
                    version=_banner())
    sub = ap.add_subparsers(dest="command", metavar="COMMAND",
                            title="commands (default: report)")
    rep = sub.add_parser("report", help="the memory card and every lesson's headline experiment",
                         description=REPORT_HELP)
    _add_report_options(rep)
    rep.set_defaults(run=_report)
    tour = sub.add_parser("tour", help="device summary, vec_add and matmul timings",
                          description=TOUR_HELP)
    tour.add_argument("--size", type=_positive_int, default=2048, metavar="N",
                      help="matmul size N (N x N x N), a positive integer (default 2048)")
    tour.set_defaults(run=_tour)
    cmp = sub.add_parser("compare", help="two report --json runs side by side, B over A",
                         description=COMPARE_HELP)
    cmp.add_argument("a", type=_report_file, metavar="A.json", help="the first run")
    cmp.add_argument("b", type=_report_file, metavar="B.json", help="the second run")
    cmp.set_defaults(run=_compare)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the ``gpumem`` command line; returns the exit status (argparse exits 2 on bad
    arguments)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # No command: 'report', with any report options given ('gpumem --quick --json');
    # the old main job's one option, --size, still means the tour.
    first = next((a for a in argv if a != "--"), None)
    if first is None or (first.startswith("-") and first not in ("-h", "--help", "--version")):
        old = any(a == "--size" or a.startswith("--size=") for a in argv)
        argv.insert(0, "tour" if old else "report")
    args = build_parser().parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()               # a closed pipe shows here, not at the exit
    except BrokenPipeError:
        # The reader closed the pipe ('gpumem | head -1'): a normal end, not an error.
        # Later writes (and the exit's flush) go nowhere; exit 0, quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
