# Plumbing shared by the recipes in bin/ (sourced, bash): arguments and help, logs, cache keys.
# A recipe computes nothing itself: columns, selections, samples and choices are asrpriv steps
# (select-nbest, select-text, pick-best, ...). This file only runs them and keeps the books.
#
#   . "$(dirname "$0")/lib/recipe.sh"; recipe_init NAME
#
# Help: the recipe's header comment (from line 2 to the first line that is not a comment) is
# its --help: what it runs, the DATA_DIR layout, options and every environment knob.

recipe_init() {  # recipe_init NAME: RECIPE, HERE, START; PYTHONHASHSEED=0
  RECIPE=$1
  HERE=$(cd "$(dirname "$0")" && pwd)
  START=$(date +%s)
  export PYTHONHASHSEED=0
}

recipe_help() {  # the header comment, to stderr; exit 0
  local line
  while IFS= read -r line; do
    case "$line" in
      "#!"*) continue ;;
      "#"*) line=${line#\#}; printf '%s\n' "${line# }" ;;
      *) break ;;
    esac
  done < "$0" >&2
  exit 0
}

recipe_usage_line() {  # the header's "bin/NAME ..." line, trimmed
  local line
  while IFS= read -r line; do
    case "$line" in
      "#"*"bin/$RECIPE "*) line=${line#\#}; line=${line#"${line%%[![:space:]]*}"}; printf '%s\n' "$line"; return ;;
    esac
  done < "$0"
  printf 'bin/%s DATA_DIR OUT_DIR\n' "$RECIPE"
}

recipe_usage_error() {  # recipe_usage_error MESSAGE: one line, exit 2
  echo "$RECIPE: $1 (usage: $(recipe_usage_line); --help: the data layout and every knob)" >&2
  exit 2
}

recipe_positionals() {  # recipe_positionals "$@" after the options: DATA and OUT, or one line and exit 2
  case $# in
    0) recipe_usage_error "missing DATA_DIR and OUT_DIR" ;;
    1) recipe_usage_error "missing OUT_DIR (after DATA_DIR $1)" ;;
    2) DATA=$1; OUT=$2 ;;
    *) recipe_usage_error "too many arguments: $*" ;;
  esac
}

recipe_unknown_option() { recipe_usage_error "unknown option $1"; }

recipe_require() {  # recipe_require FILE...: each must exist (the layout of DATA_DIR)
  local f
  for f in "$@"; do
    [ -f "$f" ] || { echo "$RECIPE: $f: missing (bin/$RECIPE --help shows the DATA_DIR layout)" >&2; exit 2; }
  done
  command -v asrpriv >/dev/null || { echo "$RECIPE: asrpriv is not on PATH" >&2; exit 2; }
}

# ------------------------------------------------------------------ the command and its run time
# A results file names the exact command (with every knob set in the environment) and the run
# time of ALL the invocations that made OUT: a rerun that reuses cached artefacts adds its own
# seconds to those of the earlier parts instead of passing a few seconds off as the run time.
recipe_knobs() {  # the knobs of the header (lines "#   NAME=  ..."), one per line
  local line name
  while IFS= read -r line; do
    case "$line" in
      "#!"*) continue ;;
      "#"*) line=${line#\#}; line=${line#"${line%%[![:space:]]*}"}; name=${line%%=*}
            case "$name" in "$line"|*[!A-Z0-9_]*|"") ;; *) printf '%s\n' "$name" ;; esac ;;
      *) break ;;
    esac
  done < "$0"
}

recipe_quote() {  # one word as a shell reads it back: as it is when plain, else in single quotes
  case $1 in
    "" | *[!A-Za-z0-9_./:,+=@%-]*) printf "'%s'" "${1//\'/\'\\\'\'}" ;;
    *) printf '%s' "$1" ;;
  esac
}

recipe_command() {  # recipe_command "EXTRA_NAMES" ARG...: "NAME=value ... bin/RECIPE ARG..." (call
  # it before the defaults are set: NAME=value for every knob of the header, and every EXTRA
  # name, that the environment sets -- even to its default)
  local name out="" a
  for name in $(recipe_knobs) $1; do
    if [ -n "${!name+x}" ]; then out+="$name=$(recipe_quote "${!name}") "; fi
  done
  shift
  out+="bin/$RECIPE"
  for a in "$@"; do out+=" $(recipe_quote "$a")"; done
  printf '%s\n' "$out"
}

recipe_runtime() {  # after OUT exists: this invocation's line of OUT/runtime.tsv is written on exit
  # (or earlier by recipe_runtime_record), "seconds<TAB>start (epoch s)<TAB>command", a stopped
  # invocation's command marked "[stopped: exit N]" (its artefacts may be reused by the next part)
  RUNTIME_RECORDED=""
  recipe_code_record   # the commit (and whether src/ and bin/ were clean) this invocation runs
  trap 'recipe_runtime_record "$?"' EXIT
  trap 'recipe_stop 130' INT
  trap 'recipe_stop 143' TERM
}

RECIPE_CHILD=""
recipe_child() {  # recipe_child COMMAND...: run a long step (minutes) so that SIGTERM/SIGINT to
  # the recipe stops it at once: bash runs its trap only after the foreground command ends, so a
  # recipe stopped by `kill PID` would wait for the whole step; the step's status is returned
  "$@" &
  RECIPE_CHILD=$!
  local rc=0
  wait "$RECIPE_CHILD" || rc=$?
  RECIPE_CHILD=""
  return "$rc"
}

fl_last_round() {  # fl_last_round RUN: the highest t of an fl-rounds run directory's RUN/model-t.pt
  # (0: none), where a stopped run goes on from (fl-rounds --resume)
  local f t last=0
  for f in "$1"/model-*.pt; do
    t=${f##*/model-}; t=${t%.pt}
    case $t in "" | *[!0-9]*) continue ;; esac
    if [ "$t" -gt "$last" ]; then last=$t; fi
  done
  printf '%s\n' "$last"
}

recipe_stop() {  # recipe_stop STATUS (the INT/TERM trap): stop the step recipe_child runs and the
  # jobs recipe_job started, wait for them, exit
  if [ -n "${RECIPE_CHILD:-}" ]; then
    kill -TERM "$RECIPE_CHILD" 2>/dev/null || true
    wait "$RECIPE_CHILD" 2>/dev/null || true
  fi
  local left
  left=$(jobs -pr)
  if [ -n "$left" ]; then
    # shellcheck disable=SC2086
    kill -TERM $left 2>/dev/null || true
    wait 2>/dev/null || true
  fi
  exit "$1"
}

# recipe_job N COMMAND...: run COMMAND (a shell function: one independent unit of work, e.g. a
# table row's training and evaluation) as a background job, at most N at a time (N <= 1: in
# the foreground, as a plain call); recipe_jobs_wait waits for them all. A job that fails makes
# the recipe fail (at the next recipe_job or recipe_jobs_wait); SIGTERM/SIGINT to the recipe
# stops every job and its step. The jobs must not share artefacts.
RECIPE_JOBS_FAILED=0
recipe_job() {
  local n=$1; shift
  if [ "$n" -le 1 ]; then "$@"; return; fi
  while [ "$(jobs -pr | wc -l)" -ge "$n" ]; do wait -n || RECIPE_JOBS_FAILED=1; done
  [ "$RECIPE_JOBS_FAILED" = 0 ] || die "a job failed (its error is above); the running ones are stopped"
  ( trap 'recipe_stop 143' TERM; trap 'recipe_stop 130' INT; "$@" ) &
}
recipe_jobs_wait() {
  while [ -n "$(jobs -pr)" ]; do wait -n || RECIPE_JOBS_FAILED=1; done
  wait || RECIPE_JOBS_FAILED=1
  [ "$RECIPE_JOBS_FAILED" = 0 ] || die "a job failed (its error is above)"
}

recipe_runtime_record() {  # recipe_runtime_record [STATUS]: append this invocation's line, once
  [ -z "${RUNTIME_RECORDED:-}" ] || return 0
  RUNTIME_RECORDED=1
  local note=""
  [ "${1:-0}" = 0 ] || note=" [stopped: exit $1]"
  printf '%s\t%s\t%s\n' "$(( $(date +%s) - START ))" "$START" "${COMMAND:-bin/$RECIPE}$note" >> "$OUT/runtime.tsv"
}

recipe_code() {  # "COMMIT<TAB>clean|modified": the code this invocation runs (git), or "unknown<TAB>unknown"
  local root commit state
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  if commit=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
    if [ -z "$(git -C "$root" status --porcelain --untracked-files=no -- src bin 2>/dev/null)" ]; then
      state=clean; else state=modified; fi
  else
    commit=unknown; state=unknown
  fi
  printf '%s\t%s\n' "$commit" "$state"
}

recipe_code_record() {  # OUT/code.tsv: "start<TAB>commit<TAB>clean|modified" of this invocation's code
  printf '%s\t%s\n' "$START" "$(recipe_code)" >> "$OUT/code.tsv"
}

recipe_runtime_begin() {  # recipe_runtime_begin ARTEFACT: OUT holds ARTEFACT from before runtime.tsv was kept
  [ -e "$OUT/runtime.tsv" ] || [ ! -e "$1" ] || \
    printf '0\t%s\n' "(earlier invocations, made before $RECIPE kept runtime.tsv: not timed)" >> "$OUT/runtime.tsv"
}

# knob NAME DEFAULT reads an environment knob; the report's command line names every knob whose
# value differs from this mode's default (KNOBS_SET), so the results file gives the exact command.
KNOBS_SET=""
knob() {  # knob NAME DEFAULT: NAME from the environment (empty = unset), else DEFAULT
  local name=$1 default=$2 value
  value=${!1:-}
  [ -n "$value" ] || value=$default
  printf -v "$name" '%s' "$value"
  [ "$value" = "$default" ] || KNOBS_SET+="$name=$(recipe_quote "$value") "
}

log() { printf '[%4ds] %s\n' $(( $(date +%s) - START )) "$*" >&2; }
die() { echo "$RECIPE: $*" >&2; exit 2; }

asrpriv_version() { local v; v=$(asrpriv --version 2>/dev/null) || v=unknown; printf '%s\n' "${v##* }"; }

# ------------------------------------------------------------------ cache keys
# An artefact is reused only when the key stored beside it equals the key of this run: every
# setting it was made from and the content of its inputs (sha256, first 16 hex digits), and
# the asrpriv version. Inputs that are artefacts enter by the hash of their own key.
fhash() { sha256sum < "$1" | cut -c1-16; }        # an input file's content
khash() { fhash "$1.key"; }                        # an artefact's identity: the hash of ARTEFACT.key
kstr() { printf '%s\n' "$1" | sha256sum | cut -c1-16; }   # = khash of an artefact stamped with key $1

cache_key() {  # cache_key name=value ... [file:NAME=PATH ...]: the key text, sorted, with the version
  local a
  { printf 'asrpriv=%s\n' "$VERSION"
    for a in "$@"; do
      case "$a" in
        file:*) a=${a#file:}; printf '%s=sha256:%s\n' "${a%%=*}" "$(fhash "${a#*=}")" ;;
        *) printf '%s\n' "$a" ;;
      esac
    done; } | LC_ALL=C sort
}

_key_items() {  # the name=value items of a key: whole lines, or the words of a one-line key
  local line word
  while IFS= read -r line; do
    case "$line" in
      *" "*=*) case "${line%%=*}" in *" "*) for word in $line; do printf '%s\n' "$word"; done; continue ;; esac ;;
    esac
    printf '%s\n' "$line"
  done <<< "$1"
}

cache_changes() {  # cache_changes OLD NEW: "name: old -> new; ..." of the items that differ
  local -A old=() seen=()
  local item name out=""
  while IFS= read -r item; do [ -n "$item" ] && old[${item%%=*}]=${item#*=}; done < <(_key_items "$1")
  while IFS= read -r item; do
    [ -n "$item" ] || continue
    name=${item%%=*}; seen[$name]=1
    if [ -z "${old[$name]+x}" ]; then out+="$name: (none) -> ${item#*=}; "
    elif [ "${old[$name]}" != "${item#*=}" ]; then out+="$name: ${old[$name]} -> ${item#*=}; "; fi
  done < <(_key_items "$2")
  for name in "${!old[@]}"; do [ -n "${seen[$name]+x}" ] || out+="$name: ${old[$name]} -> (none); "; done
  printf '%s\n' "${out%; }"
}

SAVE_WARN=""                           # where sieve also keeps the warnings of the artefact being made
cache_fresh() {  # cache_fresh KEYFILE KEY ARTEFACT: 0 = reuse it (said on stderr); 1 = (re)compute it (why said)
  local file=$1 key=$2 what=${3#"$OUT"/}
  [ "$what" = "$3" ] || what="OUT/$what"
  if [ -f "$file" ] && [ -e "$3" ] && [ "$(cat "$file")" = "$key" ]; then
    log "reusing $what (same settings)"
    SAVE_WARN=""
    if [ -s "${file%.key}.warnings" ]; then    # the warnings of the run that made it, repeated
      sed "s|\$|  [when $what was made]|" "${file%.key}.warnings" | tee -a "$OUT/warnings.log" >&2
    fi
    return 0
  fi
  if [ -f "$file" ] && [ -e "$3" ]; then
    log "recomputing $what: settings changed ($(cache_changes "$(cat "$file")" "$key"))"
  elif [ -e "$3" ]; then
    log "recomputing $what: no settings record beside it (an older $RECIPE, or interrupted)"
  fi
  rm -f "${file%.key}.warnings"
  SAVE_WARN="${file%.key}.warnings"      # kept until the next cache_fresh call
  return 1
}

cache_stamp() {  # cache_stamp KEYFILE KEY: the artefact is complete
  printf '%s\n' "$2" > "$1"
  SAVE_WARN=""
}

need() {  # need ARTEFACT KEY: true when ARTEFACT must be (re)built (it and ARTEFACT.key are removed first)
  if cache_fresh "$1.key" "$2" "$1"; then return 1; fi
  rm -rf "$1" "$1.key"
  return 0
}
stamp() { cache_stamp "$1.key" "$2"; }             # stamp ARTEFACT KEY, after ARTEFACT is complete

# ------------------------------------------------------------------ sub-step talk and warnings
# With recipe_logs, sub-steps run through `step` keep their stderr in OUT/steps.log; their
# warnings ("asrpriv STEP: warning: ...") and errors are repeated on stderr at once with what
# the recipe was doing, collected in OUT/warnings.log and summarized by recipe_warnings_summary.
recipe_logs() {
  : > "$OUT/warnings.log"
  printf '# %s %s\n' "$RECIPE" "$(date -u +%FT%TZ)" >> "$OUT/steps.log"
  exec 3>&1                              # the recipe's stdout, for steps run through sieve
}
sieve() {  # sieve CONTEXT [show]: stderr lines of a step, read on stdin
  local ctx=$1 show=${2:-} line
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$OUT/steps.log"
    case "$line" in
      "asrpriv "*": warning: "*)
        [ -z "$SAVE_WARN" ] || printf '%s\n' "$line" >> "$SAVE_WARN"
        printf '%s  [%s]\n' "$line" "$ctx" | tee -a "$OUT/warnings.log" >&2 ;;
      "asrpriv "*": "*) printf '%s  [%s]\n' "$line" "$ctx" >&2 ;;
      *) [ -z "$show" ] || printf '        %s\n' "$line" >&2 ;;
    esac
  done
}
sieved() {  # sieved CONTEXT SHOW COMMAND...: run COMMAND (or a shell function, with set -e) in a
  local ctx=$1 show=$2 rc                  # subshell, its stderr through sieve; exit on failure
  shift 2
  set +e
  ( set -e; "$@" ) 2>&1 1>&3 3>&- | sieve "$ctx" "$show"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    echo "$RECIPE: failed ($ctx, exit $rc); last lines of $OUT/steps.log:" >&2
    tail -n 15 "$OUT/steps.log" | sed 's/^/    /' >&2
    exit "$rc"
  fi
}
step() { local ctx=$1; shift; sieved "$ctx" "" "$@"; }            # warnings and errors shown
step_show() { local ctx=$1; shift; sieved "$ctx" show "$@"; }     # every line shown (long steps)

recipe_warnings_summary() {  # each distinct warning of OUT/warnings.log once, with its count
  [ -s "$OUT/warnings.log" ] || return 0
  echo "$RECIPE: warnings of this run (also in $OUT/warnings.log; sub-step talk in $OUT/steps.log):" >&2
  local n text
  sed 's/  \[.*\]$//' "$OUT/warnings.log" | sort | uniq -c | sort -rn | \
    while read -r n text; do
      if [ "$n" -gt 1 ]; then printf '  %s (%s times)\n' "$text" "$n"; else printf '  %s\n' "$text"; fi
    done >&2
}

# ------------------------------------------------------------------ seeds of seeded (test) runs
# derive_seed S T [D]: the seed of round (or item) T of draw D (default 0) from base seed S, by
# the one rule of asrpriv.federated.seeds (S*100000 + D*1000 + T; exit 2 out of its range).
# Steps with rounds take the base and the draw themselves (fl-rounds/fmp-rounds --noise-seed S
# --noise-draw D); this is for one-shot noise (add-noise --seed). Recipes write no seed arithmetic.
derive_seed() { "${PYTHON:-python3}" -m asrpriv.federated.seeds "$@"; }

# ------------------------------------------------------------------ selections several recipes make
nbest_1best() { asrpriv select-nbest -q --best "$1"; }           # Kaldi text of each utterance's 1-best
ref_for() { asrpriv select-nbest -q --references "$2" "$1"; }    # ref_for NBEST REF: REF's lines of NBEST's utterances
# The dev split of every recipe: every 4th client in sorted order tunes (weights, lambda, EM
# weights, calibration) and is excluded from every reported number; the others evaluate.
tuning_clients() { asrpriv select-nbest -q --list-clients --every 4 "$1" | xargs; }
evaluation_clients() { asrpriv select-nbest -q --list-clients --every 4 --others "$1" | xargs; }
