"""Call every gpumem kernel variant once on small, awkward sizes.

tools/gpu-check runs this under compute-sanitizer (memcheck, racecheck,
synccheck, initcheck).  The calls come from the lessons: each declares a
``sanitize`` function (gpumem.tools.lesson.Lesson) that calls every variant of
every family it offers.  The script fails when a family gpumem.variants() lists
belongs to no lesson that declares such calls, so a new kernel cannot skip the
sanitizers.  ``--lesson NAME`` runs one lesson's calls (a sanitizer tool over a
part of the set).
"""
import argparse
import sys

import gpumem as gm


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lesson", action="append", help="only this lesson (repeatable)")
    args = ap.parse_args()
    declared = gm.lessons.declarations()
    covered = {fam for lesson in declared if lesson.sanitize for fam in lesson.families}
    families = {v.family for v in gm.variants()}
    missing = sorted(families - covered)
    if missing:
        print(f"sanitize_calls: no sanitizer calls for families {missing}", file=sys.stderr)
        return 2
    unknown = set(args.lesson or ()) - {lesson.name for lesson in declared}
    if unknown:
        print(f"sanitize_calls: no lesson {sorted(unknown)}", file=sys.stderr)
        return 2
    for lesson in declared:
        if args.lesson and lesson.name not in args.lesson:
            continue
        with gm.record() as launches:
            lesson.sanitize()
        seen = {(r.kernel, r.variant) for r in launches}
        print(f"{lesson.name}: {len(launches)} launches, "
              f"{len(seen)} (family, variant) pairs of {sum(len(gm.variants(f)) for f in lesson.families)}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
