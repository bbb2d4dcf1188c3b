"""The artifact store from the command line.

    python -m kernelevolve.export add RUN_DIR [RUN_DIR ...] [--store PATH] [--force]
    python -m kernelevolve.export list [--spec SPEC] [--platform NAME] [--store PATH] [--json]
    python -m kernelevolve.export show SPEC [--platform NAME] [--shape NAME] [--store PATH]
    python -m kernelevolve.export get SPEC --platform NAME [--shape NAME] [-o kernel.py] [--store PATH]
    python -m kernelevolve.export kernelbench RUN_OR_SWEEP_DIR [...] --out DIR   # KernelBench's result files

SPEC is a spec key (16 hex digits) or a spec name; a name stored with several keys (different
shapes) means the newest. Without --shape, `show` and `get` use the overall best ("*"). The default
store is artifacts.sqlite in the kernelevolve cache folder. Exit codes: 0 done, 1 nothing found,
2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kernelevolve.export.store import ALL_SHAPES, Artifact, ArtifactStore, StoreError


def _x(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def _table(artifacts: list[Artifact]) -> str:
    header = f"{'spec':<22} {'key':<16} {'platform':<8} {'backend':<7} {'shape':<16} {'vs eager':>9} {'vs compile':>10}  {'candidate':<16} created"
    lines = [header, "-" * len(header)]
    for a in artifacts:
        lines.append(
            f"{a.spec_name[:22]:<22} {a.spec_key:<16} {a.platform:<8} {a.backend:<7} {a.shape[:16]:<16} "
            f"{_x(a.speedup_vs_eager):>9} {_x(a.speedup_vs_compile):>10}  {a.candidate_id:<16} {a.created}"
        )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kernelevolve.export", description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=None, help="SQLite file (default: in the cache folder)")
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="add the winners of finished run directories")
    add.add_argument("run_dirs", nargs="+", type=Path)
    add.add_argument("--force", action="store_true", help="replace stored kernels even if they are faster")
    listing = commands.add_parser("list", help="list stored kernels")
    listing.add_argument("--spec", default=None)
    listing.add_argument("--platform", default=None)
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    kb = commands.add_parser(
        "kernelbench", help="write runs' / sweeps' results in KernelBench's result format"
    )
    kb.add_argument("sources", nargs="+", type=Path, help="run directories and sweep folders")
    kb.add_argument(
        "--out", type=Path, required=True, help="folder for level<L>/eval_results.json, kernels, baselines"
    )
    for name, text in (("show", "details and source of one kernel"), ("get", "write one kernel's source")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("spec")
        sub.add_argument("--platform", required=name == "get", default=None)
        sub.add_argument(
            "--shape", default=None, help=f"a shape name (default: {ALL_SHAPES!r}, the overall best)"
        )
        sub.add_argument("--backend", default=None)
        if name == "get":
            sub.add_argument(
                "-o", "--output", type=Path, default=None, help="file to write (default: stdout)"
            )
    for sub in commands.choices.values():  # --store is accepted after the command too
        sub.add_argument("--store", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def _find(store: ArtifactStore, args: argparse.Namespace) -> Artifact | None:
    if args.platform is not None:
        return store.lookup(args.spec, args.platform, args.shape, args.backend)
    shape = args.shape or ALL_SHAPES
    rows = [a for a in store.find(args.spec, None, shape) if args.backend in (None, a.backend)]
    return max(rows, key=lambda a: (a.speedup_vs_eager or 0.0, a.created)) if rows else None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "kernelbench":
        from kernelevolve.export.kernelbench_format import export_kernelbench

        try:
            written = export_kernelbench(args.sources, args.out)
        except (ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}")
        return 0
    store = ArtifactStore(args.store)
    if args.command == "add":
        for run_dir in args.run_dirs:
            try:
                added = store.add_run(run_dir, force=args.force)
            except StoreError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            shapes = ", ".join(a.shape for a in added) or "nothing new (stored kernels are as fast or faster)"
            print(f"{run_dir}: added {shapes}")
        print(f"store: {store.path}")
        return 0
    if args.command == "list":
        rows = store.find(args.spec, args.platform)
        if args.json:
            for row in rows:
                print(json.dumps(row.summary()))
        else:
            print(_table(rows) if rows else f"no kernels stored in {store.path}")
        return 0
    artifact = _find(store, args)
    if artifact is None:
        where = f" on {args.platform}" if args.platform else ""
        print(
            f"no stored kernel for {args.spec!r}{where} at shape {args.shape or ALL_SHAPES!r}",
            file=sys.stderr,
        )
        return 1
    if args.command == "show":
        for key, value in artifact.summary().items():
            print(f"{key:<20} {value}")
        print(f"\n{artifact.source}")
        return 0
    if args.output is None:
        sys.stdout.write(artifact.source)
    else:
        args.output.write_text(artifact.source)
        print(
            f"wrote {args.output} ({artifact.spec_name} on {artifact.platform}, candidate {artifact.candidate_id})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
