#!/usr/bin/env bash
# Layer check for core/ (docs/architecture.md): a file in core/L may include core/M/... or reference a symbol
# defined in core/M only when L depends on M, directly or through other layers. core/ never includes ui/, app/,
# tests/, bench/ or Qt. core/CMakeLists.txt passes the dependency edges it links with, so the rule and the link
# lines cannot drift apart; with --lib the built libraries' undefined symbols are checked too (nm).
#   scripts/check_layers.sh ROOT LAYER:DEP,DEP... [--lib=LAYER=LIBRARY.a ...]
# Exit 0 when clean, 1 on a violation (one line each), 2 on bad usage.
set -uo pipefail
root=${1:?usage: check_layers.sh ROOT LAYER:DEP,DEP... [--lib=LAYER=LIBRARY.a ...]}
shift

declare -A direct=() lib=()
layers=()
for arg in "$@"; do
  case $arg in
    --lib=*=*)
      spec=${arg#--lib=}
      lib[${spec%%=*}]=${spec#*=}
      ;;
    *:*)
      layers+=("${arg%%:*}")
      direct[${arg%%:*}]=${arg#*:}
      ;;
    *)
      echo "check_layers.sh: bad argument '$arg'" >&2
      exit 2
      ;;
  esac
done
if ((${#layers[@]} == 0)); then
  echo "check_layers.sh: no layers given" >&2
  exit 2
fi

# allowed[L] = " L dep dep ... " over the transitive closure of the direct edges.
declare -A allowed=()
closure() {
  local layer=$1 dep out=" $1 "
  local -a deps
  IFS=, read -ra deps <<<"${direct[$layer]-}"
  for dep in "${deps[@]}"; do
    if [[ -z ${direct[$dep]+set} ]]; then
      echo "check_layers.sh: $layer depends on unknown layer '$dep'" >&2
      exit 2
    fi
    [[ -n ${allowed[$dep]+set} ]] || closure "$dep"
    out+="${allowed[$dep]} "
  done
  allowed[$layer]=$out
}
for layer in "${layers[@]}"; do
  [[ -n ${allowed[$layer]+set} ]] || closure "$layer"
done

failures=0
fail() {
  echo "$1"
  failures=$((failures + 1))
}

# Includes: every #include of a project path in a core file.
cd "$root" || exit 2
for layer in "${layers[@]}"; do
  [[ -d core/$layer ]] || continue
  while IFS=: read -r file line text; do
    target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*)[>"].*/\1/' <<<"$text")
    [[ $text =~ include[[:space:]]*\" ]] && quoted=1 || quoted=0
    case $target in
      core/*/*)
        dep=${target#core/}
        dep=${dep%%/*}
        if [[ -z ${direct[$dep]+set} ]]; then
          fail "$file:$line includes $target: core/$dep is not a layer"
        elif [[ ${allowed[$layer]} != *" $dep "* ]]; then
          fail "$file:$line includes $target: $layer may not depend on $dep"
        fi
        ;;
      ui/* | app/* | tests/* | bench/*)
        fail "$file:$line includes $target: core may not depend on ${target%%/*}"
        ;;
      *)
        # A relative path would hide the layer from this check: project headers are included as "core/L/x.h".
        if ((quoted)); then
          fail "$file:$line includes \"$target\": write the path from the project root (core/LAYER/...)"
        elif [[ $target == Q* ]]; then
          fail "$file:$line includes <$target>: core may not depend on Qt"
        fi
        ;;
    esac
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include' "core/$layer" --include='*.h' --include='*.cpp' \
             --include='*.hpp' --include='*.inc' --include='*.ipp')
done

# Symbols: an undefined symbol of layer L's objects that another layer defines (strongly) must come from a
# layer L depends on; inline functions and templates (weak) are judged by their include above.
if ((${#lib[@]} > 0)); then
  for layer in "${layers[@]}"; do
    [[ -n ${lib[$layer]+set} ]] || continue
    if [[ ! -f ${lib[$layer]} ]]; then
      echo "check_layers.sh: ${lib[$layer]} (layer $layer) does not exist" >&2
      exit 2
    fi
    # "LAYER OBJECT SYMBOL TYPE" per external symbol.
    nm -A -P -g "${lib[$layer]}" 2>/dev/null | awk -v layer="$layer" '{
      obj = $1; sub(/:$/, "", obj); sub(/^.*\[/, "", obj); sub(/\]$/, "", obj); sub(/\.o$/, "", obj)
      print layer, obj, $2, $3 }'
  done | awk -v allowed_list="$(for l in "${layers[@]}"; do printf '%s=%s;' "$l" "${allowed[$l]}"; done)" '
    BEGIN {
      n = split(allowed_list, rows, ";")
      for (i = 1; i <= n; i++) { split(rows[i], kv, "="); allowed[kv[1]] = kv[2] }
    }
    {
      layer = $1; obj = $2; sym = $3; type = $4
      if (type == "U") { ref[++nref] = layer SUBSEP obj SUBSEP sym }
      else if (type ~ /^[TDBRC]$/) { def[layer, sym] = 1; owner[sym] = owner[sym] ? owner[sym] : layer }
    }
    END {
      for (i = 1; i <= nref; i++) {
        split(ref[i], r, SUBSEP); layer = r[1]; obj = r[2]; sym = r[3]
        if ((layer, sym) in def || !(sym in owner)) continue
        dep = owner[sym]
        if (index(allowed[layer], " " dep " ") == 0 && !seen[layer, obj, dep]++)
          printf "core/%s/%s references %s, defined in core/%s: %s may not depend on %s\n", layer, obj, sym, dep, layer, dep
      }
    }' | c++filt >"${TMPDIR:-/tmp}/check_layers.$$"
  while IFS= read -r violation; do fail "$violation"; done <"${TMPDIR:-/tmp}/check_layers.$$"
  rm -f "${TMPDIR:-/tmp}/check_layers.$$"
fi

if ((failures > 0)); then
  echo "check_layers.sh: $failures layer violation(s); the layers and their dependencies are declared in" \
    "core/CMakeLists.txt (docs/architecture.md)"
  exit 1
fi
exit 0
