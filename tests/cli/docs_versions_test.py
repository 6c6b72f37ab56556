#!/usr/bin/env python3
"""Version numbers in the docs are the build's: the ABI the host supports, each bundled plugin's
version and ABI in the outputs the docs show, and paraplan's version. A walkthrough that builds a
plugin against the installed SDK shows the current ABI. Read from the built executable
(`paraplan --version`, `paraplan plugins list --json`), so a release that bumps a number fails
this test until the docs say it; `--update` rewrites them from the build.

Usage: docs_versions_test.py PARAPLAN SOURCE_DIR [--update]
"""
import json
import pathlib
import re
import subprocess
import sys


def build_versions(paraplan):
    version = subprocess.run([paraplan, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.match(r"paraplan (\S+) \(SDK ABI (\d+)\.(\d+)\)", version)
    listing = json.loads(subprocess.run([paraplan, "plugins", "list", "--json"], capture_output=True, text=True,
                                        check=True).stdout)
    plugins = {plugin["name"]: (plugin["version"], plugin["abi"]) for plugin in listing["plugins"]}
    return found.group(1), int(found.group(2)), int(found.group(3)), plugins


def rules(version, major, minor, plugins):
    """(pattern, the text each group must hold given the match) for every kind of statement."""
    current = f"{major}.{minor}"

    def plugin_version(match):
        return plugins.get(match.group("name"), (match.group("version"), None))[0]

    def plugin_abi(match):
        # Bundled plugins are the build's; the docs' own examples are built against the installed SDK.
        return plugins.get(match.group("name"), (None, current))[1]

    return [
        (re.compile(r"this host's ABI (?P<abi>\d+\.\d+)"), {"abi": lambda m: current}),
        (re.compile(r"this host supports ABI (?P<abi>\d+\.\d+)"), {"abi": lambda m: current}),
        # The test plugin built one minor ahead of the host, as the docs show its refusal.
        (re.compile(r"built for SDK ABI (?P<abi>\d+\.\d+), newer than"), {"abi": lambda m: f"{major}.{minor + 1}"}),
        # `plugins describe` headers: "fsdp (strategy plugin, version 1.2.0, SDK ABI 1.7)".
        (re.compile(r"^(?P<name>[\w-]+) \(\w+ plugin, version (?P<version>[\d.]+), SDK ABI (?P<abi>\d+\.\d+)\)", re.M),
         {"version": plugin_version, "abi": plugin_abi}),
        # `plugins check` load lines: "plugin 'cpu_offload', strategy, ABI 1.7".
        (re.compile(r"plugin '(?P<name>[\w-]+)', \w+, ABI (?P<abi>\d+\.\d+)"), {"abi": plugin_abi}),
        (re.compile(r"\(paraplan (?P<version>\d+\.\d+\.\d+)"), {"version": lambda m: version}),
    ]


def main():
    paraplan, source = sys.argv[1], pathlib.Path(sys.argv[2])
    update = "--update" in sys.argv[3:]
    checks = rules(*build_versions(paraplan))
    stale = []
    for doc in [source / "README.md", *sorted((source / "docs").rglob("*.md"))]:
        text = original = doc.read_text()
        for pattern, expected in checks:
            def fix(match):
                out, at = match.group(0), match.start()
                for group, value_of in reversed(sorted(expected.items(), key=lambda item: match.start(item[0]))):
                    want = value_of(match)
                    if match.group(group) != want:
                        line = original.count("\n", 0, match.start()) + 1
                        stale.append(f"{doc.relative_to(source)}:{line}: '{match.group(0)}': {group} should be {want}")
                        out = out[:match.start(group) - at] + want + out[match.end(group) - at:]
                return out
            text = pattern.sub(fix, text)
        if update and text != original:
            doc.write_text(text)
    if stale and not update:
        print("docs_versions: the docs state versions this build does not have (fix: "
              "tests/cli/docs_versions_test.py PARAPLAN . --update):\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    print(f"docs_versions: {'updated ' + str(len(stale)) if update else 'every'} version statement"
          f"{'s' if update else ''} {'' if update else 'matches the build'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
