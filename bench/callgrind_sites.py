#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Summarises a callgrind profile of redlock-bench per acquire+release cycle.

    callgrind_sites.py CALLGRIND_OUT CYCLES

Prints (1) self instructions per cycle by area (heap, Asio, resp, connection, client, fmt,
the bench's own code), (2) the functions with the most self instructions per cycle, and
(3) heap allocations (calls of operator new) per cycle, each attributed to the nearest
caller in namespace redlock: callgrind keeps caller->callee edges, not whole stacks, so
a count reached through shared Asio code is split in proportion to the calls on each edge.
Reads the profile only with --dump-instr=no (the default): one Ir cost per line.
"""
import collections
import re
import sys

OURS = re.compile(r"^(?:auto |void )?redlock::")


def read_profile(path):
    names = {}

    def name(text):
        m = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not m:
            return text
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "?")

    self_cost = collections.Counter()
    callers = collections.defaultdict(collections.Counter)
    fn = callee = None
    skip_next_cost = False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                fn = name(line[3:])
            elif line.startswith("cfn="):
                callee = name(line[4:])
            elif line.startswith("calls="):
                callers[callee][fn] += int(line[6:].split()[0])
                skip_next_cost = True  # the next cost line is the call's inclusive cost
            elif line and (line[0].isdigit() or line[0] in "+-*") and fn is not None:
                if skip_next_cost:
                    skip_next_cost = False
                else:
                    self_cost[fn] += int(line.split()[-1])
    return self_cost, callers


def area(fn):
    if re.match(r"^operator (new|delete)", fn) or "alloc_counter" in fn:
        return "bench: counting operator new/delete"
    if fn == "malloc_usable_size":
        return "bench: malloc_usable_size (allocation counter)"
    if re.match(r"^(_int_malloc|_int_free|malloc|free|malloc_consolidate|unlink_chunk|tcache)", fn):
        return "libc malloc/free"
    if fn.startswith("redlock::bench::"):
        return "bench driver (workers, samples, names)"
    if "fmt::" in fn:
        return "fmt"
    if "redlock::resp::" in fn:
        return "resp (encode, parse)"
    if "redlock::detail::connection::" in fn:
        return "connection"
    if "redlock::" in fn:
        return "client (operations, lock, tokens)"
    if "boost::asio::" in fn or fn.startswith("_ZN5boost4asio") or fn.startswith("_ZZZN5boost4asio"):
        return "asio (executors, strand, reactor, awaitable)"
    if fn.startswith("__mem") or fn.startswith("__str"):
        return "libc memcpy/memmove"
    return "other"


def attribute(callers, target):
    result = collections.Counter()

    def walk(fn, amount, depth, seen):
        if depth > 0 and OURS.search(fn):
            result[fn] += amount
            return
        edges = callers.get(fn)
        if not edges or depth > 30:
            result["(no redlock caller) " + fn] += amount
            return
        total = sum(edges.values())
        for caller, n in edges.items():
            if caller not in seen:
                walk(caller, amount * n / total, depth + 1, seen | {caller})

    for fn in list(callers):
        if target.search(fn):
            walk(fn, sum(callers[fn].values()), 0, {fn})
    return result


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    self_cost, callers = read_profile(sys.argv[1])
    cycles = float(sys.argv[2])
    total = sum(self_cost.values())
    print(f"total {total:,} instructions, {total / cycles:,.0f} per cycle over {cycles:.0f} cycles\n")
    areas = collections.Counter()
    for fn, n in self_cost.items():
        areas[area(fn)] += n
    print("self instructions per cycle, by area")
    for a, n in areas.most_common():
        print(f"{n / cycles:9,.0f}  {100 * n / total:5.1f}%  {a}")
    print("\nself instructions per cycle, top functions")
    for fn, n in self_cost.most_common(30):
        print(f"{n / cycles:9,.0f}  {100 * n / total:5.1f}%  {fn[:160]}")
    allocs = attribute(callers, re.compile(r"^operator new"))
    n_allocs = sum(allocs.values())
    print(f"\nheap allocations per cycle: {n_allocs / cycles:.2f}, by nearest redlock caller")
    for fn, n in allocs.most_common(20):
        print(f"{n / cycles:7.2f}  {fn[:160]}")


if __name__ == "__main__":
    main()
