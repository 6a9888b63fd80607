"""Run every benchmarks/bench_*.py and print their Markdown tables last.

Each module defines ``run(out_dir: str, quick: bool) -> bool``: it measures,
writes ``bench_<name>.json`` and ``bench_<name>.md`` into ``out_dir`` (the
anchor measured in the same run beside gpumem's numbers) and returns whether
its targets were met.  Exit status 0 only when every module ran and met them.
"""
import argparse
import glob
import importlib.util
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # benchmarks import _common


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("names", nargs="*", help="only these (e.g. matmul access)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ok = True
    for path in sorted(glob.glob(os.path.join(HERE, "bench_*.py"))):
        name = os.path.basename(path)[6:-3]
        if args.names and name not in args.names:
            continue
        spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
            met = mod.run(args.out, args.quick)
            print(f"{name}: targets {'met' if met else 'MISSED'}", flush=True)
            ok &= bool(met)
        except Exception:
            traceback.print_exc()
            print(f"{name}: FAILED", flush=True)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
