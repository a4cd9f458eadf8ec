"""python3 -m paraproof_torch SCRIPT.py -o PLAN.json: exit 0 written, 2 an error naming SCRIPT.py:LINE."""
import argparse
import sys


def _as_given(message, script):
    """Names SCRIPT.py (and the modules beside it) as the user typed it, not as an absolute path."""
    import os
    absdir = os.path.dirname(os.path.abspath(script)) + os.sep
    given = os.path.dirname(script)
    return message.replace(absdir, given + os.sep if given else "")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="paraproof import-torch",
                                 description="Trace SCRIPT.py's logical and parallel steps into a ParaProof plan.")
    ap.add_argument("script", metavar="SCRIPT.py")
    ap.add_argument("-o", "--output", metavar="PLAN.json", required=True)
    ap.add_argument("--check-numerics", action="store_true",
                    help="also run logical and every rank (simulated) on random inputs and compare")
    ap.add_argument("--quiet", action="store_true", help="the check-numerics result only in the plan's metadata")
    ns = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the machine
        print(f"error: PyTorch is not importable by {sys.executable} ({e}); install python3-torch",
              file=sys.stderr)
        return 2
    from . import ImportTorchError
    from .importer import import_script
    try:
        plan = import_script(ns.script)
    except ImportTorchError as e:
        print(f"error: {_as_given(str(e), ns.script)}", file=sys.stderr)
        return 2
    except Exception:  # a bug of the importer, not of SCRIPT.py: say so, with the traceback
        import traceback
        traceback.print_exc()
        print(f"error: {ns.script}: internal error of paraproof_torch (please report it with SCRIPT.py)",
              file=sys.stderr)
        return 2
    if ns.check_numerics:
        # SCRIPT.py's functions run eagerly (every rank a thread with real storage and collectives), not the
        # importer's reading of them (_eager.py).
        from ._eager import check_numerics
        try:
            record = check_numerics(ns.script, plan)
        except Exception:  # a bug of the check itself: say so, never claim agreement
            import traceback
            traceback.print_exc()
            detail = "internal error of paraproof_torch's eager check (please report it with SCRIPT.py)"
            record = {"agree": False, "ran": False, "eager": True, "detail": detail,
                      "note": f"check-numerics: not run, no verdict: {detail}"}
        for k in ("detail", "note"):
            record[k] = _as_given(record[k], ns.script)
        plan["metadata"]["check_numerics"] = record
        if not ns.quiet:
            print(record["note"])
        sys.stdout.flush()
    from .importer import write_plan
    try:
        write_plan(plan, ns.output)
    except OSError as e:
        print(f"error: cannot write {ns.output}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
