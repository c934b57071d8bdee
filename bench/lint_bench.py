"""How long ``mpijob lint`` takes per job, and where the time goes.

Writes N MPIJobs into one multi-document YAML file: the repository's examples (Open MPI, Intel MPI, MPICH,
GPUs, gang scheduling) renamed per copy, one in 25 changed so lint finds something (``-np`` against the
hostfile, a v1 ``cleanPodPolicy`` at spec level, an old apiVersion, a job without ``cleanPodPolicy``, a
label value over 63 characters) and, from 100 jobs on, the last one with annotations over the apiserver's
256 KiB. For each N it times, best of R:

- **in process**, stage by stage: reading the YAML (``load_documents``), ``lint_manifest`` on every job
  (pydantic, defaults, rules), and the line of every finding (``Document.line_of``);
- **the CLI**: ``mpijob lint --fail-on never -o json FILE`` as a user runs it, next to the same command on a
  one-job file (the interpreter's and imports' start-up);

then a cProfile of the whole in-process command for the largest N, its time by stage and its top entries.
``--big`` also writes a ~50 MB file (30,156 jobs, a size a user measured) and times the CLI on it once.

    .venv/bin/python bench/lint_bench.py [--jobs 1000,4000] [--repeat 3] [--big]
    .venv/bin/python bench/lint_bench.py --quick     # 200 jobs, best of 2
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.api.lint import lint_manifest
from app.cli.program import main as mpijob_main
from app.kube.yamltext import load_documents

ROOT = Path(__file__).resolve().parent.parent

EXAMPLES = (
    "examples/pi/pi.yaml",
    "examples/pi/pi-intel.yaml",
    "examples/pi/pi-mpich.yaml",
    "examples/gpu/tensorflow-benchmarks.yaml",
    "examples/gang/pi-volcano.yaml",
    "examples/gang/pi-scheduler-plugins.yaml",
)
BIG_JOBS = 30_156  # ~50 MB of these jobs


def _with_finding(text: str, which: int) -> str:
    """The example changed so that lint reports something (one change of five, in turn)."""
    if which == 0 and '- "2"' in text:
        return text.replace('- "2"', '- "3"', 1)  # np-mismatch
    if which == 1 and "runPolicy:\n" in text:
        return text.replace("spec:\n", "spec:\n  cleanPodPolicy: Running\n", 1)  # unknown-field
    if which == 2:
        return text.replace("kubeflow.org/v2beta1", "kubeflow.org/v1", 1)  # old-api-version
    if which == 3 and "cleanPodPolicy:" in text:
        return "\n".join(line for line in text.splitlines() if "cleanPodPolicy:" not in line) + "\n"
    long_value = "v" * 64  # a label value over 63 characters
    return text.replace("metadata:\n", f"metadata:\n  labels:\n    team: {long_value}\n", 1)


def manifest(jobs: int) -> str:
    """``jobs`` MPIJobs, one YAML document each."""
    texts = [(ROOT / path).read_text() for path in EXAMPLES]
    documents = []
    for i in range(jobs):
        text = texts[i % len(texts)]
        name = text.split("\n  name: ", 1)[1].split("\n", 1)[0]
        text = text.replace(f"\n  name: {name}\n", f"\n  name: {name}-{i}\n", 1)
        if i % 25 == 24:
            text = _with_finding(text, (i // 25) % 5)
        documents.append(text)
    if jobs >= 100:  # one job whose annotations are over the apiserver's 256 KiB in all
        big = "x" * (257 * 1024)
        documents[-1] = documents[-1].replace(
            "metadata:\n", f"metadata:\n  annotations:\n    notes: {big}\n", 1
        )
    return "---\n".join(documents)


def best(fn: Callable[[], object], repeat: int) -> float:
    """The least CPU time of ``repeat`` runs: on a shared machine it moves far less than the wall clock."""
    times = []
    for _ in range(repeat):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return min(times)


def run_cli_in_process(path: Path) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return mpijob_main(["lint", "--fail-on", "never", "-o", "json", str(path)])


def run_cli(*arguments: str) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """``mpijob lint`` as a user runs it, from this checkout: (wall seconds, CPU seconds, the result)."""
    command = [sys.executable, "-c", "from app.cli.program import main; raise SystemExit(main())"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([*command, "lint", *arguments], capture_output=True, check=False, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done


def cli_cpu(path: Path, repeat: int) -> float:
    cpus = []
    for _ in range(repeat):
        _, cpu, done = run_cli("--fail-on", "never", "-o", "json", str(path))
        if done.returncode not in (0, 1):
            raise SystemExit(f"mpijob lint exited {done.returncode}: {done.stderr.decode()[-300:]}")
        cpus.append(cpu)
    return min(cpus)


def stages(text: str, repeat: int) -> tuple[float, float, float, int]:
    """(reading, linting, line numbers) seconds, and the number of findings."""
    documents = load_documents(text, "bench.yaml")
    results = [(doc, f) for doc in documents for f in lint_manifest(doc.data)]
    read = best(lambda: load_documents(text, "bench.yaml"), repeat)
    lint = best(lambda: [lint_manifest(doc.data) for doc in documents], repeat)
    lines = best(lambda: [doc.line_of(f.path) for doc, f in results], repeat)
    return read, lint, lines, len(results)


# cProfile entries by stage: the first pattern found in "file:function" names the stage.
_STAGES = (
    ("line numbers", ("line_of", "_entry", "_path_keys")),
    ("YAML parse", ("yaml", "yamlio")),
    ("pydantic validation", ("pydantic", "model_validate")),
    ("defaults", ("app/api/defaults",)),
    ("validation + rules", ("app/api/",)),
    ("output (json, print)", ("json", "commands.py")),
)


def _stage(where: str) -> str:
    return next((name for name, patterns in _STAGES if any(p in where for p in patterns)), "other")


def profile(path: Path, top: int) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(run_cli_in_process, path)
    stats = pstats.Stats(profiler)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, object]] = stats.stats  # type: ignore[attr-defined]
    by_stage: dict[str, float] = {}
    for (file, _, function), (_, _, tottime, _, _) in raw.items():
        stage = _stage(f"{file}:{function}")
        by_stage[stage] = by_stage.get(stage, 0.0) + tottime
    total = sum(by_stage.values())
    print(f"\ncProfile of the in-process command ({total:.2f} s under the profiler), own time by stage:")
    for stage, seconds in sorted(by_stage.items(), key=lambda item: -item[1]):
        print(f"  {stage:24} {seconds:6.2f} s  {seconds / total:5.1%}")
    print(f"\ntop {top} entries by own time:")
    rows = sorted(raw.items(), key=lambda item: -item[1][2])[:top]
    for (file, line, function), (_, calls, tottime, cumtime, _) in rows:
        where = f"{file.replace(str(ROOT) + '/', '').replace(sys.prefix, '<venv>')}:{line}({function})"
        print(f"  {tottime:6.3f} s own {cumtime:6.3f} s cum {calls:>9} calls  {where[-80:]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", default="1000,4000", help="comma-separated job counts")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=15, help="profile entries to print")
    parser.add_argument("--big", action="store_true", help=f"also time the CLI on {BIG_JOBS:,} jobs (~50 MB)")
    parser.add_argument("--quick", action="store_true", help="200 jobs, best of 2")
    args = parser.parse_args()
    counts = [200] if args.quick else [int(n) for n in args.jobs.split(",")]
    repeat = 2 if args.quick else args.repeat
    print(
        f"{ROOT}, PyYAML with libyaml: {__import__('yaml').__with_libyaml__}; CPU seconds, best of {repeat}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp, "one.yaml")
        one.write_text(manifest(1))
        startup = cli_cpu(one, repeat)
        print(f"CLI on one job (start-up): {startup * 1e3:.0f} ms\n")
        print(
            "| jobs | file | read YAML | lint_manifest | lines | findings | in process | CLI | CLI per job |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        path = one
        for jobs in counts:
            text = manifest(jobs)
            path = Path(tmp, f"jobs-{jobs}.yaml")
            path.write_text(text)
            read, lint, lines, findings = stages(text, repeat)
            whole = best(lambda: run_cli_in_process(path), repeat)  # noqa: B023 (called at once)
            cli = cli_cpu(path, repeat)
            print(
                f"| {jobs:,} | {len(text) / 1e6:.1f} MB | {read:.2f} s | {lint:.2f} s | {lines * 1e3:.0f} ms"
                f" | {findings} | {whole:.2f} s | {cli:.2f} s | {(cli - startup) / jobs * 1e3:.2f} ms |"
            )
        if args.big:
            big_file(Path(tmp))
        profile(path, args.top)


def big_file(folder: Path) -> None:
    """The CLI on ~50 MB of jobs: in one file, then the same jobs in four files."""
    text = manifest(BIG_JOBS)
    big = folder / "big.yaml"
    big.write_text(text)
    parts = [folder / f"part-{i}.yaml" for i in range(4)]
    documents = text.split("---\n")
    del text
    quarter = -(-len(documents) // 4)
    for i, part in enumerate(parts):
        part.write_text("---\n".join(documents[i * quarter : (i + 1) * quarter]))
    del documents
    for what, paths in ((f"one file of {big.stat().st_size / 1e6:.0f} MB", [big]), ("four files", parts)):
        wall, cpu, done = run_cli("--fail-on", "never", *map(str, paths))
        last = (done.stderr.decode().strip().splitlines() or [""])[-1]
        print(
            f"\n{BIG_JOBS:,} jobs in {what}: exit {done.returncode}, {wall:.2f} s wall, {cpu:.2f} s CPU;"
            f" stderr ends: {last[:140]}"
        )


if __name__ == "__main__":
    main()
