"""The `cmbench` command: parse, call, print. A user's mistake exits 2 with one line."""
from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

import click

from .version import __version__
from .errors import UserError


def _terminated(signum, frame) -> None:
    from .runner.guard import interrupt  # at the signal, not at every start

    interrupt(signum, frame)


class _Group(click.Group):
    """Turn the library's user errors into one line on stderr and exit code 2."""

    def invoke(self, ctx):
        import signal

        # SIGTERM stops cmbench as Ctrl-C does (workers ended, the run lock released, finished
        # units kept), instead of ending it with nothing cleaned up
        terminate = signal.signal(signal.SIGTERM, _terminated)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # outside a sweep (which says what it kept): one line, not "Aborted!"
            click.echo("cmbench: interrupted", err=True)
            sys.exit(130)
        except UserError as exc:
            click.echo(f"cmbench: error: {exc}", err=True)
            sys.exit(2)
        except OSError as exc:  # a path the user gave that cannot be read or written as asked
            from .output import USER_ERRNOS, describe

            if exc.errno not in USER_ERRNOS or exc.filename is None:
                raise
            click.echo(f"cmbench: error: {exc.filename}: {describe(exc)}", err=True)
            sys.exit(2)
        finally:
            signal.signal(signal.SIGTERM, terminate)


plugin_option = click.option("--plugin", "plugins", multiple=True, metavar="PATH.py|module",
                             help="Load a plugin file or module (repeatable).")


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="cmbench")
def main() -> None:
    """Benchmark robust mean estimators under coordinate-level corruption."""


@main.command()
@plugin_option
@click.option("--params", "with_params", is_flag=True,
              help="Also list each component's parameters with their defaults (`cmbench info NAME` for more).")
def plugins(plugins, with_params) -> None:
    """List every component: kind, name, plugin and version, description."""
    from .kinds import LISTED
    from .plugins import AUTOLOAD_ENV, describe_params, load_plugins

    registry = load_plugins(plugins)
    last = lambda decl: (" ".join(f"{p['name']}={p['default']}" for p in describe_params(decl)) or "-"  # noqa: E731
                         if with_params else decl.description)
    _table(("kind", "name", "plugin", "parameters (name=default)" if with_params else "description"),
           [(kind.singular, name, str(registry.source(kind.plural, name)), last(decl))
            for kind in LISTED for name, decl in registry.kind(kind.plural).items()])
    if not registry.autoload:
        click.echo(f"note: {AUTOLOAD_ENV} is set: entry-point plugins were not loaded")


@main.command()
@plugin_option
@click.argument("name", metavar="NAME|KIND:NAME")
def info(plugins, name) -> None:
    """Show a component: its plugin, parameters (defaults, choices, ranges) and docstring.

    NAME is looked up in every kind; KIND:NAME (e.g. estimator:mean) picks one
    when several kinds have the name.
    """
    import textwrap

    from .plugins import describe_component, find_components, load_plugins

    registry = load_plugins(plugins)
    hits = find_components(registry, name)
    for i, (kind, decl) in enumerate(hits):
        d = describe_component(registry, kind, decl)
        if i:
            click.echo("")
        click.echo(f"{d['kind']} {d['name']}" + (f": {d['description']}" if d["description"] else ""))
        for label, text in (("plugin", d["plugin"]), *d["fields"].items()):
            click.echo(f"  {label}: {text}")
        if d["params"]:
            click.echo("parameters:")
            _table(("  name", "default", "choices", "range"),
                   [(f"  {p['name']}", p["default"], p["choices"] or "-", p["range"] or "-") for p in d["params"]])
        else:
            click.echo("parameters: none")
        if d["doc"]:
            click.echo("")
            click.echo(textwrap.indent(d["doc"], "  "))
    if len(hits) > 1:
        click.echo(f"\nnote: {len(hits)} kinds have a component {name!r}; "
                   f"`cmbench info KIND:{name}` shows one")


@main.command()
@plugin_option
@click.argument("names", nargs=-1, metavar="[NAME|KIND:NAME]...")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the generated inputs and rngs.")
@click.option("--timeout", default="60", show_default=True, metavar="SECONDS|none",
              help="Fail a check whose plugin call takes longer than this ('none': no limit).")
def check(plugins, names, seed, timeout) -> None:
    """Check components against the contract on small generated inputs.

    Checks every component the --plugin plugins declare (every loaded one
    without --plugin), or only NAMEs, and the kinds of report page they add
    (built on a hand-made cube and drawn). One line per check; exit 1 if any fails.
    """
    from .check import FAIL, PAGES, PASS, SKIP, run_checks
    from .options import parse_timeout

    timeout = parse_timeout(timeout)
    results = run_checks(plugins, names, seed=seed, on_result=lambda r: click.echo(r.line()), timeout=timeout)
    counts = collections.Counter(r.status for r in results)
    checked = {(r.kind, r.name) for r in results}
    pages = sum(kind == PAGES for kind, _ in checked)
    what = [(len(checked) - pages, "component")] + ([(pages, "report page kind")] if pages else [])
    click.echo(f"{', '.join(f'{n} {word}' + 's' * (n != 1) for n, word in what)}, {len(results)} checks: "
               f"{counts[PASS]} passed, "
               f"{counts[FAIL]} failed" + (f", {counts[SKIP]} skipped" if counts[SKIP] else ""))
    if counts[FAIL]:
        sys.exit(1)


@main.command()
@click.argument("suite")
@click.option("--out", default="reports", show_default=True, type=click.Path(file_okay=False),
              help="Folder for cubes, cache and report.")
@plugin_option
@click.option("--workers", default="auto", show_default=True, metavar="N|auto",
              help="Local worker processes (they also draw a report with many changed pages); auto: one per usable core.")
@click.option("--scheduler", default=None, metavar="ADDRESS|local",
              help="Run on a Dask cluster ('local' starts a LocalCluster on 127.0.0.1).")
@click.option("--timeout", default="600", show_default=True, metavar="SECONDS|none",
              help="Stop a plugin call after this long (at most 1e6; 'none': no limit).")
@click.option("--resume/--no-resume", default=True, show_default=True,
              help="Reuse cached stages (--no-resume clears the suite's cache first).")
@click.option("--cache-size", default=None, metavar="SIZE",
              help="Cap of the stage cache, e.g. 500MB or 4GB (default: the suite's cache_size, else 2GB).")
@click.option("--report/--no-report", default=True, show_default=True,
              help="Write the suite's report: OUT/SUITE.pdf and OUT/SUITE.html.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--experiment", "experiments", multiple=True, metavar="NAME",
              help="Run only this experiment (repeatable).")
@click.option("-k", "select", multiple=True, metavar="PATTERN",
              help="Run only the cells whose dataset/adversary/recoverer/estimator labels match "
                   "(a substring, or a glob on the name or on one label; repeatable).")
@click.option("--dry-run", is_flag=True, help="Check what the run checks and print the plan (cells, how many are "
                                               "cached, largest data sets, the cubes and reports it would write); "
                                               "write nothing.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed cell and print its full traceback.")
@click.option("--pdb", "post_mortem", is_flag=True,
              help="Open the debugger where a plugin raises (in this process: not with --workers/--scheduler).")
def suite(suite, dry_run, **given) -> None:
    """Run SUITE (a shipped name such as 'paper' or a path to a .toml file)."""
    from .cube import STATUSES, failures
    from .options import RunOptions
    from .runner import Interrupted, Progress, StoppedAtFailure, run_suite

    options = RunOptions(**given)  # each option is named for its field: parsed and checked here, once
    if dry_run:
        _print_plan(suite, options)
        return
    from concurrent.futures.process import BrokenProcessPool

    from .report.suite_step import report_step

    stats = Progress()
    started = time.monotonic()
    try:  # the report step runs under the run lock
        cubes = run_suite(suite, options, stats=stats, then=report_step(options.workers) if options.report else None)
    except BrokenProcessPool as exc:  # a process drawing the report's pages died
        click.echo(f"cmbench: error: a process drawing the report ended abruptly ({exc}); no report was written", err=True)
        click.echo(f"cmbench: the cubes are written in {options.out / Path(stats.outputs.report).name}/; "
                   "`cmbench suite` again draws the report", err=True)
        sys.exit(1)
    except Interrupted as exc:
        click.echo(f"cmbench: {exc}", err=True)
        sys.exit(130)
    except StoppedAtFailure as exc:
        where = ", ".join(f"{k} {v!r}" for k, v in exc.cell.items())
        click.echo(f"cmbench: --fail-fast: stopped at the first {exc.status} cell ({where}); "
                   "the stages finished so far are cached", err=True)
        click.echo(f"{exc.error}", err=True)
        if exc.traceback:
            click.echo(exc.traceback.rstrip(), err=True)
        sys.exit(1)
    for old, n in sorted((stats.other_versions or {}).items()):
        click.echo(f"cmbench: note: {n} cached units written by cmbench {old} were recomputed "
                   f"by cmbench {__version__}", err=True)
    if stats.damaged:
        click.echo(f"cmbench: note: {stats.damaged} damaged cache files were recomputed", err=True)
    if stats.evicted:
        click.echo(f"cmbench: note: {stats.evicted} cache files were evicted to stay under the cache size",
                   err=True)
    counts = collections.Counter()
    failed = []
    for ds in cubes.values():
        counts.update(ds["status"].values.ravel().tolist())
        failed += failures(ds)
    suite_name = next(iter(cubes.values())).attrs["suite"] if cubes else suite
    from .report.content.summary import summary_lines

    for line in summary_lines(cubes, plugins=options.plugins):
        click.echo(line)
    click.echo(f"{sum(counts.values())} cells ({stats.cached_cells} from the cache; {stats.total} units, "
               f"{stats.cached} wholly cached) in {_elapsed(time.monotonic() - started)}: "
               + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]))
    if stats.outputs is not None:  # where the run wrote: a slice's own folder only when it is a slice
        click.echo(f"cubes: {stats.outputs.cubes[0].parent}/")
        if options.report:
            click.echo(f"report: {stats.outputs.report}.pdf, {stats.outputs.report}.html")
    _print_claims(cubes)
    if failed:
        click.echo(f"{len(failed)} cells failed or timed out:", err=True)
        by_error = collections.Counter(row["error"] for row in failed)
        for error, n in by_error.most_common(10):
            click.echo(f"  {n} x {error}", err=True)
        sys.exit(1)


@main.command()
@click.argument("cubes", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Report to write: FILE.pdf, or FILE.html (interactive, self-contained).")
@click.option("--baseline", default=None, type=click.Path(), help="A cube to compare every method against.")
@click.option("--png", "png_dir", default=None, type=click.Path(file_okay=False), help="Also write PNG figures here.")
@click.option("--tables", "tables_dir", default=None, type=click.Path(file_okay=False),
              help="Also write the ranking and mean-error tables here, as CSV and LaTeX (booktabs).")
@plugin_option
def report(cubes, output, baseline, png_dir, tables_dir, plugins) -> None:
    """Draw the PDF report of one or more results cubes (no rerun needed)."""
    from .files import KIND_SUFFIXES, check_target
    from .report import write_report

    suffix = Path(output).suffix.lower()
    kind = next((k for k in ("pdf", "html") if suffix in KIND_SUFFIXES[k]), None)
    # writing over an input is the most telling refusal: check_target says it before the suffix
    check_target(output, inputs=[*cubes, *([baseline] if baseline is not None else [])], kind=kind)
    if kind is None:
        raise UserError(f"{output}: a report is written as FILE.pdf or FILE.html (or .htm), "
                        f"not {suffix or '(no suffix)'!r}")
    if kind == "html":
        from .report.render.html import write_html

        if png_dir is not None:
            raise UserError("--png writes the PDF report's figures; give -o FILE.pdf for it")
        path = write_html([Path(c) for c in cubes], Path(output), baseline=baseline, plugins=plugins)
    else:
        path = write_report([Path(c) for c in cubes], Path(output), baseline=baseline, png_dir=png_dir,
                            plugins=plugins)
    click.echo(f"report: {path}")
    if tables_dir is not None:
        from .report.content.paper_tables import write_tables

        written = write_tables([Path(c) for c in cubes], Path(tables_dir))
        why = "" if written else ": no method has a finite value of any metric in these cubes"
        click.echo(f"tables: {Path(tables_dir)}/ ({len(written)} files{why})")


@main.command()
@click.argument("cubes", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Table to write: .parquet or .csv.")
def export(cubes, output) -> None:
    """Write results cubes as one tidy table, one row per cell (Parquet or CSV by extension)."""
    from .export import export as _export

    path, rows = _export([Path(c) for c in cubes], Path(output))
    click.echo(f"table: {path} ({rows} rows)")


@main.group(invoke_without_command=True)
@plugin_option
@click.pass_context
def datasets(ctx, plugins) -> None:
    """List every data set: shape, rank hint, and which copy a run reads (source files or shipped table)."""
    ctx.obj = plugins
    if ctx.invoked_subcommand is not None:
        return
    from .data import status
    from .plugins import load_plugins

    rows = []
    for row in status(load_plugins(plugins)):
        shape = "x".join(map(str, row["shape"])) if row.get("shape") else "?"
        error = row.get("error")  # a damaged copy: what is wrong with it stands where it is
        copy = "generated" if row["present"] is None else "damaged" if error else row.get("copy") or "absent"
        where = error or (row["where"] if isinstance(row["where"], str) else ", ".join(map(str, row["where"] or [])))
        rows.append((row["name"], shape, str(row.get("rank") or ""), copy, where))
    _table(("name", "shape", "rank", "data", "where"), rows)


def _named(registry, name: str) -> list:
    """The declarations NAME stands for ('all': every data set with files)."""
    if name == "all":
        return [d for _, d in sorted(registry.datasets.items()) if d.files]
    return [registry.get("datasets", name)]


@datasets.command()
@click.argument("name")
@click.option("--verify", is_flag=True,
              help="Download the source, derive the table and compare it with the shipped one.")
@click.pass_obj
def fetch(plugins, name, verify) -> None:
    """Download a data set's files (or 'all') into the cache folder, verified by SHA-256.

    With --verify, compare the table derived from the download with the table
    shipped in the package (the values, not the files' bytes) and name the
    first difference; exit 1 when a table differs.
    """
    from . import data
    from .plugins import load_plugins

    differ = 0
    for decl in _named(load_plugins(plugins), name):
        if not decl.files:
            click.echo(f"{decl.name}: generated, nothing to fetch")
            continue
        if not verify:
            found = data.locate(decl)
            click.echo(f"{decl.name}: {found if found is not None else data.fetch(decl)}")
            continue
        result = data.verify(decl)
        if result.difference is None:
            click.echo(f"{decl.name}: the derived table equals the shipped one")
        else:
            differ += 1
            click.echo(f"{decl.name}: the derived table differs from the shipped one: {result.difference}")
        for path in result.bytes_differ:
            want, got = result.digests[path]
            click.echo(f"  {path}: downloaded SHA-256 {got}, declared {want} (bytes differ; not cached)")
        if result.cached is not None:
            click.echo(f"  files cached in {result.cached}")
    if differ:
        sys.exit(1)


@datasets.command()
@click.argument("name")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder to write the table into.")
@click.pass_obj
def derive(plugins, name, out) -> None:
    """Derive a data set's table (or 'all') from its source files and write it (as shipped) into --out."""
    from . import data
    from .plugins import load_plugins

    chosen = _named(load_plugins(plugins), name)  # an unknown name is refused before --out is made
    Path(out).mkdir(parents=True, exist_ok=True)
    for decl in chosen:
        if decl.table is None:
            click.echo(f"{decl.name}: ships no table, skipped")
            continue
        click.echo(f"{decl.name}: {data.derive_table(decl, out)}")


def _print_claims(cubes) -> None:
    """The verdicts of the suite's claims, as the report's claims page gives them: per
    claim its experiment and id, verdict and place in the paper, then the statement and
    the measured numbers."""
    import textwrap

    from . import verdicts as claims

    verdicts = [v for ds in cubes.values() for v in claims.evaluate_cube(ds)]
    if not verdicts:
        return
    click.echo(f"\n{claims.title(verdicts)}:")
    width = max(len(f"{v.experiment} ({v.claim['id']})") for v in verdicts)
    vwidth = max(len(v.verdict) for v in verdicts)
    for v in verdicts:
        head = f"{v.experiment} ({v.claim['id']})".ljust(width)
        click.echo(f"{head}  {v.verdict.ljust(vwidth)}  {v.claim.get('paper', '') or '-'}")
        for label, text in (("claim", v.claim.get("text") or claims.describe(v.claim)),
                            ("measured", v.numbers)):
            click.echo(textwrap.fill(text, 110, initial_indent=f"    {label}: ",
                                     subsequent_indent=" " * (6 + len(label))))


@main.group()
def cache() -> None:
    """See and free the stage caches of suite runs (``<out>/<suite>/.cache``)."""


def _caches(out: str, suite_name):
    """The stage caches under ``out``: one suite's (by name or suite file) or every one found."""
    from .plugins import is_file_spec
    from .runner.store import MARKER, Store

    root = Path(out)
    if suite_name:
        name = suite_name
        if is_file_spec(name, ".toml"):
            from .suite import load_suite

            name = load_suite(name).name
        if name in ("", ".", "..") or "/" in name or "\\" in name:
            raise UserError(f"{suite_name!r} is not a suite name")
        folders = [root / name]
    else:
        folders = sorted(p.parent.parent for p in root.glob(f"*/.cache/{MARKER}"))
    return [Store(folder, out=root) for folder in folders if (folder / ".cache" / MARKER).is_file()]


def _cache_command(name: str):
    """Declare ``cmbench cache NAME [SUITE] [--out OUT]``."""
    def declare(fn):
        fn = click.option("--out", default="reports", show_default=True, type=click.Path(file_okay=False),
                          help="The output folder of the runs.")(fn)
        return cache.command(name)(click.argument("suite", required=False)(fn))
    return declare


def _no_cache(out: str, suite) -> str:
    return f"no stage cache under {out}" + (f" for suite {suite}" if suite else "")


@_cache_command("info")
def cache_info(suite, out) -> None:
    """Size of each suite's stage cache in OUT (or of SUITE's)."""
    from .sizes import format_size

    stores = _caches(out, suite)
    if not stores:
        click.echo(_no_cache(out, suite))
        return
    rows = []
    for store in stores:
        s = store.summary()
        k = s["kinds"]
        rows.append((store.root.name, str(k["units"]["files"]), f"{k['matrices']['files']} "
                     f"({format_size(k['matrices']['bytes'])})", format_size(s["bytes"]), s["folder"]))
    _table(("suite", "units", "matrices", "total", "folder"), rows)


@_cache_command("clear")
def cache_clear(suite, out) -> None:
    """Delete the stage cache of SUITE (or of every suite) in OUT; cubes and reports stay."""
    stores = _caches(out, suite)
    for store in stores:
        store.lock()
        try:
            n = store.clear()
        finally:
            store.unlock()
        click.echo(f"{store.root.name}: {n} cache files deleted from {store.cache}")
    if not stores:
        click.echo(_no_cache(out, suite))


def _print_plan(suite, options) -> None:
    from .runner.dryrun import dry_run
    from .sizes import format_size

    report = options.report
    plan = dry_run(suite, options)
    what = " (a slice)" if plan.sliced else ""
    click.echo(f"dry run of suite {plan.suite!r}{what}: nothing is computed or written")
    _table(("experiment", "cells", "cached", "units", "cached", "grid"),
           [(e.name, e.cells, e.cached_cells, e.units, e.cached_units,
             " x ".join(f"{n} {k}" for k, n in e.sizes.items())) for e in plan.experiments])
    total, cached = sum(e.cells for e in plan.experiments), sum(e.cached_cells for e in plan.experiments)
    click.echo(f"{total} cells, {cached} cached, {total - cached} to compute")
    click.echo("largest data sets:")
    for label, shape, where in plan.datasets[:5]:
        size = f"{shape[0]:,} x {shape[1]:,} ({format_size(shape[0] * shape[1] * 8)} per array)" if shape else "?"
        click.echo(f"  {label}: {size}, {where}")
    click.echo(f"would write: cubes in {plan.cubes}" + (f", report {plan.report}.pdf and {plan.report}.html"
                                                        if report else ""))


def _elapsed(seconds: float) -> str:
    """A run's wall time as people read it: 4.2 s, 3 min 07 s, 2 h 05 min."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _table(header, rows) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    widths[-1] = 0  # the last column runs free
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    click.echo(line(header))
    for row in rows:
        click.echo(line(row))


def run() -> None:
    """The console script: `main`."""
    main()  # standalone: ends with SystemExit


if __name__ == "__main__":  # pragma: no cover
    run()
