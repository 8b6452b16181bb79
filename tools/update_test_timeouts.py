#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes tests/test_timeouts.cmake: a ctest timeout for every test, from its measured time.

    tools/update_test_timeouts.py LABEL COST_DATA [LABEL COST_DATA ...]

LABEL is host or gpu; COST_DATA is the Testing/Temporary/CTestCostData.txt of a ctest run of that
label (host: on a 2-core machine like CI's; gpu: on the GPU machine). Each test gets
max(FLOOR, MARGIN x its average time), rounded up to 10 s; the tests of a label that are not in
its files keep the label's default from tests/CMakeLists.txt; a label given several files takes
each test's longest time. The other label's entries already in
tests/test_timeouts.cmake are kept, so the two can be measured on different machines.
"""
import math
import pathlib
import re
import sys

MARGIN = 5.0  # a loaded CI machine or a shared, power-capped GPU runs several times slower
FLOOR = {"host": 30, "gpu": 60}
# The tests tests/CMakeLists.txt adds itself (not discovered from GoogleTest) set TIMEOUT there:
# this file is read before they exist.
ADDED_IN_CMAKE = ("SolveExample.", "CompareDgemmExample.", "InstalledPackage.", "SourceFiles.")
TARGET = pathlib.Path(__file__).resolve().parent.parent / "tests" / "test_timeouts.cmake"


def read_cost_data(path):
    times = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if line.startswith("---"):
            break  # the failed tests' list follows
        parts = line.rsplit(" ", 2)
        if len(parts) == 3:
            times[parts[0]] = float(parts[2])
    return times


def read_existing():
    entries = {}
    if TARGET.exists():
        for m in re.finditer(r'^  (host|gpu) "([^"]+)" (\d+)$', TARGET.read_text(), re.M):
            entries[m.group(2)] = (m.group(1), int(m.group(3)))
    return entries


def main(argv):
    if len(argv) < 3 or len(argv) % 2 == 0:
        sys.exit(__doc__)
    entries = read_existing()
    times = {}  # label -> name -> the longest time measured (a label may be given several files)
    for label, path in zip(argv[1::2], argv[2::2]):
        if label not in FLOOR:
            sys.exit(f"unknown label {label!r}: host or gpu")
        for name, seconds in read_cost_data(path).items():
            times.setdefault(label, {})[name] = max(seconds, times.get(label, {}).get(name, 0.0))
    for label, measured in times.items():
        entries = {name: e for name, e in entries.items() if e[0] != label}
        for name, seconds in measured.items():
            if name.startswith(ADDED_IN_CMAKE):
                continue
            if label == "gpu" and not name.startswith("Gpu"):
                continue  # a host test that ran on the GPU machine too
            if label == "host" and name.startswith("Gpu"):
                continue
            timeout = max(FLOOR[label], int(math.ceil(MARGIN * seconds / 10.0)) * 10)
            entries[name] = (label, timeout)
    lines = [
        "# SPDX-License-Identifier: BSD-3-Clause",
        "# Per-test timeouts (seconds), written by tools/update_test_timeouts.py from measured times:",
        f"# max({FLOOR['host']} s host / {FLOOR['gpu']} s gpu, {MARGIN:g} x the test's time), host tests timed on a",
        "# 2-core machine like CI's, GPU tests on the GPU machine. ctest reads this file after the",
        "# discovered tests (tests/CMakeLists.txt); tests missing here keep their label's default.",
        "set(mixsolve_test_timeouts",
    ]
    for name in sorted(entries, key=lambda n: (entries[n][0], n)):
        label, timeout = entries[name]
        lines.append(f'  {label} "{name}" {timeout}')
    lines += [
        ")",
        "list(LENGTH mixsolve_test_timeouts mixsolve_entries)",
        "math(EXPR mixsolve_last \"${mixsolve_entries} - 1\")",
        "foreach(mixsolve_i RANGE 0 ${mixsolve_last} 3)",
        "  math(EXPR mixsolve_name_at \"${mixsolve_i} + 1\")",
        "  math(EXPR mixsolve_timeout_at \"${mixsolve_i} + 2\")",
        "  list(GET mixsolve_test_timeouts ${mixsolve_name_at} mixsolve_name)",
        "  list(GET mixsolve_test_timeouts ${mixsolve_timeout_at} mixsolve_timeout)",
        "  set_tests_properties(\"${mixsolve_name}\" PROPERTIES TIMEOUT ${mixsolve_timeout})",
        "endforeach()",
        "",
    ]
    TARGET.write_text("\n".join(lines))
    print(f"{TARGET}: {len(entries)} timeouts")


if __name__ == "__main__":
    main(sys.argv)
