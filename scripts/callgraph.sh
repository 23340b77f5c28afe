#!/usr/bin/env bash
# File-level call graph of one source folder, from the compiled objects, and a cycle check.
#
#   bash scripts/callgraph.sh BUILD_DIR SRC_DIR      e.g. bash scripts/callgraph.sh build src/raid
#
# For every object BUILD_DIR/CMakeFiles/raidkit_lib.dir/SRC_DIR/*.o, `nm` gives the functions it
# defines (T) and the symbols it needs (U). An edge a -> b means a.o needs a function that b.o
# defines (a call, or a function address a stores, e.g. in a level table). Data symbols (the
# level tables themselves) are not edges: reaching a level through the registry's table is the
# intended indirection. Prints the edges, then "no cycle" (exit 0) or one cycle (exit 1).
set -euo pipefail
export LC_ALL=C # sort and join must agree on the order

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SRC_DIR" >&2
    exit 2
fi
build=$1 src=${2%/}
objdir="$build/CMakeFiles/raidkit_lib.dir/$src"
shopt -s nullglob
objs=("$objdir"/*.o)
if [ ${#objs[@]} -eq 0 ]; then
    echo "callgraph: no objects in $objdir (build first)" >&2
    exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# defs: "symbol file" for every function defined in the folder.
for o in "${objs[@]}"; do
    f=$(basename "$o" .o)
    nm --defined-only "$o" | awk -v f="$f" '$2 == "T" { print $3, f }'
done | sort -u >"$tmp/defs"

# edges: "from to" for every needed symbol another object of the folder defines.
for o in "${objs[@]}"; do
    f=$(basename "$o" .o)
    nm --undefined-only "$o" | awk '{ print $NF }' | sort -u |
        join - "$tmp/defs" | awk -v f="$f" '$2 != f { print f, $2 }'
done | sort -u >"$tmp/edges"

echo "edges of $src (caller -> callee):"
awk '{ printf "  %s -> %s\n", $1, $2 }' "$tmp/edges"

# Depth-first search for a cycle; prints the first one found.
awk '
{ adj[$1] = adj[$1] " " $2; nodes[$1] = 1; nodes[$2] = 1 }
function dfs(n,    i, k, m, parts) {
    state[n] = 1; stack[++depth] = n
    k = split(adj[n], parts, " ")
    for (i = 1; i <= k; i++) {
        m = parts[i]
        if (state[m] == 1) {
            for (j = depth; stack[j] != m; j--)
                ;
            line = "cycle:"
            for (; j <= depth; j++) line = line " " stack[j] " ->"
            print line " " m
            return 1
        }
        if (!state[m] && dfs(m)) return 1
    }
    state[n] = 2; depth--
    return 0
}
END {
    for (n in nodes) if (!state[n] && dfs(n)) exit 1
    print "no cycle"
}' "$tmp/edges"
