#!/usr/bin/env bash
# Checks the layer rule of DESIGN.md §1 on Sources/Strata.
#
#   scripts/check-layers.sh [ROOT]      ROOT defaults to the repository root
#
# The folders of Sources/Strata are layers, lowest first:
#   Storage → Encoding → Schema → Engine → Objects → Migration → Database
#   → Observation → Sync
# A folder inside a layer's folder is a room of that layer (Engine/Capture,
# Objects/Queries, Sync/Merge): its files belong to the layer. No file of
# a layer may name a type declared in a higher one. Sources/Strata/Errors
# (StrataError and its factories) is shared by every layer: it is neither
# checked nor a source of names. Only Sources/Strata/Storage/ may import
# CLMDB or call an mdb_ function; that is checked across every target in
# Sources.
#
# How a layer's names are found, from the text alone (no type checker):
#   - Every type declared at the top level of a file of the folder
#     (`class|struct|enum|protocol|actor|typealias NAME` at column 0,
#     after any attributes and modifiers), unless it is private or
#     fileprivate, since no other file can name it then. A type nested in
#     another type or in `extension Database { ... }` can only be named
#     from another file through its outer type (`Database.Mode`), so the
#     outer name catches it; the report then prints the qualified name
#     (`Database.Mode`, `Database.catalogKey`) so it says what is used.
#   - Every type and static member declared in an extension of a type of
#     ANOTHER folder (`extension Schema { struct X }` in Migration gives
#     Migration the name `Schema.X`): those are reached as `Schema.X`, a
#     name that looks like it belongs to the lower layer but does not.
# Instance members that a higher layer adds to a lower type through an
# extension (`schema.changes(from:)`) cannot be told apart without types;
# keep such extensions out of the way of lower layers by review.
#
# What counts as a mention: an identifier in code. Comment lines (`//`,
# `///`), trailing `//` comments, `/* */` comments and the contents of
# string literals are skipped: a doc comment may explain how a higher
# layer uses this one, and an error message may name `Database` for the
# user. Whole words only, case-sensitive.
set -euo pipefail

root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
root=${root%/}
src="$root/Sources/Strata"
if [[ ! -d "$src" ]]; then
    echo "check-layers: no folder $src" >&2
    exit 2
fi

layers=(Storage Encoding Schema Engine Objects Migration Database Observation Sync)

# Every Swift file of a layer, as "LAYER_INDEX<TAB>PATH", lowest layer first.
files=$(
    for i in "${!layers[@]}"; do
        dir="$src/${layers[$i]}"
        [[ -d "$dir" ]] || continue
        find "$dir" -name '*.swift' -type f | LC_ALL=C sort | sed "s|^|$i	|"
    done
)
# Every other Swift file in Sources (other targets, shared files), for the
# CLMDB rule only, as layer -1.
layer_dirs=$(printf '%s|' "${layers[@]}")
others=$(find "$root/Sources" -name '*.swift' -type f | LC_ALL=C sort |
    grep -vE "^$src/(${layer_dirs%|})/" | sed 's|^|-1	|' || true)

if [[ -z "$files" ]]; then
    echo "check-layers: no Swift files under $src/{${layers[*]}}" >&2
    exit 2
fi

layer_names=$(IFS=,; echo "${layers[*]}")

# shellcheck disable=SC2016 # awk program, not shell
printf '%s\n%s\n' "$files" "$others" | grep -v '^$' | awk -F'\t' -v root="$root/" -v layerNames="$layer_names" '
# Removes comments and string contents from one line, keeping state
# across lines for /* */ comments and """ strings.
function code(line,    out, i, c, n, rest) {
    out = ""; n = length(line); i = 1
    while (i <= n) {
        c = substr(line, i, 1)
        rest = substr(line, i)
        if (inBlock) {
            if (substr(rest, 1, 2) == "*/") { inBlock = 0; i += 2 } else i++
            continue
        }
        if (inMulti) {
            if (substr(rest, 1, 3) == "\"\"\"") { inMulti = 0; out = out "\"\"\""; i += 3 } else i++
            continue
        }
        if (inString) {
            if (c == "\\") { i += 2; continue }
            if (c == "\"") { inString = 0; out = out "\"" }
            i++
            continue
        }
        if (substr(rest, 1, 2) == "//") break
        if (substr(rest, 1, 2) == "/*") { inBlock = 1; i += 2; continue }
        if (substr(rest, 1, 3) == "\"\"\"") { inMulti = 1; out = out "\"\"\""; i += 3; continue }
        if (c == "\"") { inString = 1; out = out "\""; i++; continue }
        out = out c; i++
    }
    inString = 0   # a single-line string never spans lines
    return out
}

BEGIN {
    nLayers = split(layerNames, layerName, ",")
    declRE = "^(@[A-Za-z_][A-Za-z0-9_.]*(\\([^)]*\\))?[ \t]+)*((public|internal|private|fileprivate|package|open|final|indirect|nonisolated(\\(unsafe\\))?)[ \t]+)*(class|struct|enum|protocol|actor|typealias)[ \t]+[A-Za-z_][A-Za-z0-9_]*"
    extRE = "^(@[A-Za-z_][A-Za-z0-9_.]*(\\([^)]*\\))?[ \t]+)*((public|internal|private|fileprivate|package)[ \t]+)*extension[ \t]+[A-Za-z_][A-Za-z0-9_.]*"
    nestedRE = "^    (@[A-Za-z_][A-Za-z0-9_.]*(\\([^)]*\\))?[ \t]+)*((public|internal|private|fileprivate|package|open|final|indirect|nonisolated(\\(unsafe\\))?|static|class)[ \t]+)*(class|struct|enum|protocol|actor|typealias|func|let|var)[ \t]+[A-Za-z_][A-Za-z0-9_]*"
}

# Pass 1 reads every file once and keeps its code lines; then the names.
{
    layer = $1 + 0; path = $2
    nFiles++; fileLayer[nFiles] = layer; filePath[nFiles] = path
    inBlock = 0; inMulti = 0; inString = 0; nLines = 0; extOf = ""
    while ((getline raw < path) > 0) {
        nLines++
        line = code(raw)
        text[nFiles, nLines] = line
        if (layer < 0) continue
        # Top-level declarations and extensions start at column 0.
        if (match(line, declRE)) {
            extOf = ""
            decl = substr(line, RSTART, RLENGTH)
            if (decl ~ /(^|[ \t])(private|fileprivate)[ \t]/) continue
            n = split(decl, w, /[ \t]+/); name = w[n]
            declared[name] = layer; declaredIn[layer, name] = 1
        } else if (match(line, extRE)) {
            decl = substr(line, RSTART, RLENGTH)
            n = split(decl, w, /[ \t]+/); extOf = w[n]
        } else if (line ~ /^[^ \t#]/) {
            extOf = ""
        } else if (extOf != "" && match(line, nestedRE)) {
            decl = substr(line, RSTART, RLENGTH)
            if (decl ~ /(^|[ \t])(private|fileprivate)[ \t]/) continue
            if (decl ~ /[ \t](func|let|var)[ \t]/ && decl !~ /(^|[ \t])(static|class)[ \t]/) continue
            n = split(decl, w, /[ \t]+/)
            extMember[nFiles, nLines] = extOf "." w[n]
        }
    }
    close(path)
    lineCount[nFiles] = nLines
}

END {
    # Members added in extensions of a type of another layer: only those
    # whose outer type is not declared in the same layer.
    for (key in extMember) {
        split(key, k, SUBSEP); f = k[1]
        q = extMember[key]; split(q, parts, ".")
        if (!((fileLayer[f], parts[1]) in declaredIn)) qualified[q] = fileLayer[f]
    }
    violations = 0
    for (f = 1; f <= nFiles; f++) {
        layer = fileLayer[f]; path = filePath[f]; rel = substr(path, length(root) + 1)
        inStorage = (rel ~ /^Sources\/Strata\/Storage\//)
        if (layer >= 0) who = layerName[layer + 1]
        else { split(rel, p, "/"); who = p[2] }
        for (l = 1; l <= lineCount[f]; l++) {
            line = text[f, l]
            if (!inStorage) {
                if (line ~ /^[ \t]*(@[A-Za-z_]+[ \t]+)*import[ \t]+(class[ \t]+|struct[ \t]+|enum[ \t]+|func[ \t]+|var[ \t]+|let[ \t]+)?CLMDB([ \t.]|$)/) {
                    printf "%s:%d: %s imports CLMDB; only Storage may\n", rel, l, who; violations++
                }
                rest = line
                while (match(rest, /(^|[^A-Za-z0-9_])mdb_[A-Za-z0-9_]+[ \t]*\(/)) {
                    call = substr(rest, RSTART, RLENGTH); sub(/^[^m]*/, "", call); sub(/[ \t]*\($/, "", call)
                    printf "%s:%d: %s calls %s; only Storage may\n", rel, l, who, call; violations++
                    rest = substr(rest, RSTART + RLENGTH)
                }
            }
            if (layer < 0) continue
            # Identifiers of the line, each with the identifier after a dot, if any.
            rest = line; seenLine = ""
            while (match(rest, /[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?/)) {
                tok = substr(rest, RSTART, RLENGTH)
                before = RSTART > 1 ? substr(rest, RSTART - 1, 1) : ""
                rest = substr(rest, RSTART + RLENGTH)
                if (before ~ /[0-9]/) continue
                split(tok, t, ".")
                owner = -1; shown = ""
                if ((tok in qualified) && qualified[tok] > layer) { owner = qualified[tok]; shown = tok }
                else if ((t[1] in declared) && declared[t[1]] > layer) { owner = declared[t[1]]; shown = tok }
                else if (index(tok, ".") && (t[2] in declared) && declared[t[2]] > layer) { owner = declared[t[2]]; shown = t[2] }
                if (owner < 0) continue
                # The identifier after the dot stays for the next match when it
                # is not part of what is reported (`x.Foo` where only Foo counts).
                if (index(tok, ".") && shown == t[1]) rest = "." t[2] rest
                if (index(seenLine, "|" shown "|")) continue
                seenLine = seenLine "|" shown "|"
                printf "%s:%d: %s mentions %s from %s\n", rel, l, layerName[layer + 1], shown, layerName[owner + 1]
                violations++
            }
        }
    }
    exit violations > 0 ? 1 : 0
}
' && status=0 || status=$?

if [[ $status -eq 0 ]]; then
    echo "layers ok: Storage → Encoding → Schema → Engine → Objects → Migration → Database → Observation → Sync"
fi
exit "$status"
