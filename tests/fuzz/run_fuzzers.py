#!/usr/bin/env python3
"""Runs the libFuzzer targets of the input readers (tests/fuzz/README.md).

    tests/fuzz/run_fuzzers.py BUILD_DIR [--seconds S | --runs N | --replay] [--only NAME ...] [--corpus DIR]

Each target starts from seeds made from the repository's own files (scenarios, plans, hardware profiles,
nccl-tests logs, profiler traces, sweep lines, and the invalid-input cases), in BUILD_DIR/fuzz/corpus/NAME,
which keeps what the fuzzer adds between runs. Targets run one after another; to use several cores, run
the script once per core with different --only targets. A crash, a sanitizer report, a timeout or an
input that runs out of memory stops the target with its reproducer in BUILD_DIR/fuzz/findings/; the
script then exits 1. It prints, per target, the executions run and their rate (libFuzzer's "Done N runs" line).
--replay runs every input of the corpus once and stops: a corpus grown by a long campaign in the fast
`fuzz` build (no AddressSanitizer) is replayed in the `sanitize` build with --corpus pointing at it.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROFILE_KINDS = ["gpus", "nodes", "fabrics", "software", "ps_transports"]  # fuzz_profile.cpp's order


def files(*patterns):
    out = []
    for pattern in patterns:
        out.extend(sorted(ROOT.glob(pattern)))
    return out


def profile_seeds():
    """Each profile with its id set to "fuzz", after the byte that selects its kind."""
    seeds = []
    for kind, folder in enumerate(PROFILE_KINDS):
        for path in files(f"hardware_profiles/{folder}/*.json"):
            doc = json.loads(path.read_text())
            if isinstance(doc, dict) and "id" in doc:
                doc["id"] = "fuzz"
            seeds.append((f"{folder}-{path.name}", bytes([kind]) + json.dumps(doc, indent=1).encode()))
    return seeds


SEEDS = {
    "scenario": lambda: [(p.name, p.read_bytes())
                         for p in files("scenarios/*.json", "scenarios/*/*.json", "tests/invalid/cases/*.json")
                         if "plans" not in p.parts],
    "plan": lambda: [(p.name, p.read_bytes()) for p in files("scenarios/plans/*.json", "tests/invalid/plan_cases/*.json")],
    "profile": profile_seeds,
    "nccl_log": lambda: [(p.name, p.read_bytes())
                         for p in files("tests/validation/nccl_logs/*.log", "tests/invalid/nccl_logs/*.log")],
    "kineto": lambda: [(p.name, p.read_bytes()) for p in files("tests/data/kineto/*.json", "tests/invalid/kineto/*.json")],
    # fuzz_sweep_lines.cpp: the first byte splits the rest into two shard files.
    "sweep_lines": lambda: [(p.name, p.read_bytes()) for p in files("tests/fuzz/seeds/sweep_lines/*")] +
                           [(p.name, b"\x01" + p.read_bytes()) for p in files("tests/invalid/cli_cases/*.jsonl")],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path)
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--seconds", type=int, default=10, help="time per target (default 10)")
    limit.add_argument("--runs", type=int, help="executions per target instead of a time")
    limit.add_argument("--replay", action="store_true", help="run each corpus input once")
    parser.add_argument("--corpus", type=pathlib.Path, help="corpus folder (default BUILD_DIR/fuzz/corpus)")
    parser.add_argument("--only", nargs="*", help="targets to run (default: all built)")
    args = parser.parse_args()

    args.build_dir = args.build_dir.resolve()
    work = args.build_dir / "fuzz"
    findings = work / "findings"
    findings.mkdir(parents=True, exist_ok=True)
    failed = []
    for name, make_seeds in SEEDS.items():
        if args.only and name not in args.only:
            continue
        exe = args.build_dir / "tests" / "fuzz" / f"fuzz_{name}"
        if not exe.exists():
            print(f"{name}: {exe} not built, skipped")
            continue
        corpus = (args.corpus.resolve() if args.corpus else work / "corpus") / name
        corpus.mkdir(parents=True, exist_ok=True)
        for seed_name, content in make_seeds():
            (corpus / f"seed-{seed_name}").write_bytes(content)
        command = [str(exe), str(corpus), f"-artifact_prefix={findings}/{name}-", "-timeout=20",
                   "-rss_limit_mb=2560", "-max_len=65536", "-print_final_stats=1"]
        if args.replay:
            command.append("-runs=0")
        else:
            command.append(f"-runs={args.runs}" if args.runs else f"-max_total_time={args.seconds}")
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", cwd=work)
        runs = sum(int(m) for m in re.findall(r"stat::number_of_executed_units:\s*(\d+)", result.stdout))
        seconds = sum(int(m) for m in re.findall(r"Done \d+ runs in (\d+) second", result.stdout))
        rate = f", {runs / seconds:,.0f}/s" if seconds else ""
        status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
        print(f"{name}: {runs:,} executions{rate}: {status}", flush=True)
        if result.returncode != 0:
            failed.append(name)
            (work / f"{name}.log").write_text(result.stdout)
            print("\n".join(result.stdout.splitlines()[-60:]))
    if failed:
        print(f"findings in {findings} (logs in {work}): {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
