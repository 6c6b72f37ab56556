#!/usr/bin/env python3
"""The shipped measured-runs CSVs are what their column scripts make of them: every
recipes/validation/*_column.py, run on a copy of the folder, leaves each file byte for byte as
shipped. A column edited by hand, or a script changed without re-running it, fails here.

usage: validation_columns_test.py SOURCE_DIR
"""
import filecmp
import pathlib
import shutil
import subprocess
import sys
import tempfile


def main():
    source = pathlib.Path(sys.argv[1])
    shipped = source / "recipes" / "validation"
    scripts = sorted(shipped.glob("*_column.py"))
    if not scripts:
        sys.exit(f"no *_column.py in {shipped}")
    with tempfile.TemporaryDirectory() as scratch:
        copy = pathlib.Path(scratch) / "recipes" / "validation"
        shutil.copytree(shipped, copy, ignore=shutil.ignore_patterns("__pycache__"))
        for script in scripts:
            # The scripts address the CSVs from the repository root.
            subprocess.run([sys.executable, str(copy / script.name)], cwd=scratch, check=True)
        changed = [path.name for path in sorted(shipped.glob("*.csv"))
                   if not filecmp.cmp(path, copy / path.name, shallow=False)]
    if changed:
        sys.exit("not what the column scripts make: " + ", ".join(changed) +
                 " (run recipes/validation/*_column.py from the repository root)")
    print(f"{len(scripts)} column scripts reproduce every CSV")


if __name__ == "__main__":
    main()
