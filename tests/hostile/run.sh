#!/usr/bin/env bash
# One case of the hostile-input suite: hostile inputs, output folders under concurrency and
# signals. Each case either succeeds correctly or ends with a non-zero exit code and one
# "mbopt: error:" line naming the place and the reason; nothing is silently wrong and nothing an
# earlier run wrote is lost.
#   bash tests/hostile/run.sh MBOPT WORKDIR CASE        (from the repository root)
# tests/hostile.cmake runs every case named "case_*" below as its own CTest test.
set -u
mbopt=$1
root=$(pwd)
work=$2/$3
name=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

fail() {
  echo "FAIL $name: $*"
  exit 1
}

# expect CODE REGEX COMMAND...: the exit code, and for a failure exactly one error line on
# stderr matching REGEX (for a success, REGEX must match stdout)
expect() {
  local code=$1 regex=$2
  shift 2
  "$@" >out.txt 2>err.txt
  local got=$?
  [ "$got" -eq "$code" ] || fail "exit $got, expected $code: $(head -c 600 err.txt)"
  if [ "$code" -ne 0 ]; then
    [ "$(wc -l <err.txt)" -eq 1 ] || fail "stderr is not one line: $(head -c 600 err.txt)"
    grep -q '^mbopt: error: ' err.txt || fail "stderr is not an error line: $(cat err.txt)"
    grep -Eq -- "$regex" err.txt || fail "error does not match '$regex': $(cat err.txt)"
  else
    grep -Eq -- "$regex" out.txt || fail "output does not match '$regex': $(head -c 600 out.txt)"
  fi
}

# every row of a CSV file has as many fields as its header
well_formed_csv() {
  awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad }' "$1" ||
    fail "$1 has a row with a wrong number of fields"
}

fivebar=$root/problems/fivebar.json
springs=$root/problems/fivebar_springs.json
spline=$root/problems/fivebar_spline.json
governor=$root/problems/control/governor_design.json
long_path=$(printf 'd%.0s' $(seq 1 5000))

# ---- numbers: the step count computed safely, a limit before an absurdly long run
case_step_denormal() { expect 3 'simulation: t_end / step = 5 / 4.9.*e-324 = inf steps, more than' "$mbopt" simulate "$fivebar" --step 5e-324; }
case_t_end_huge() { expect 3 't_end / step = 1e\+12 / 0.001 = 1e\+15 steps' "$mbopt" simulate "$fivebar" --t-end 1e12; }
case_gradient_step_denormal() { expect 3 'inf steps' "$mbopt" gradient "$fivebar" --step 5e-324; }
case_check_step_denormal() { expect 3 'inf steps' "$mbopt" check "$fivebar" --step 5e-324; }
case_bench_t_end_huge() { expect 3 'steps, more than' "$mbopt" bench "$fivebar" --t-end 1e300; }
case_step_nan() { expect 2 "--step: expected a positive number, got 'nan'" "$mbopt" simulate "$fivebar" --step nan; }
case_step_inf() { expect 2 "--step: expected a positive number, got 'inf'" "$mbopt" simulate "$fivebar" --step inf; }
case_step_trailing() { expect 2 "--step: expected a positive number, got '1e-3x'" "$mbopt" simulate "$fivebar" --step 1e-3x; }
case_step_longer_than_span() { expect 2 'step 2 is longer than the time span' "$mbopt" simulate "$fivebar" --step 2 --t-end 1; }

# ---- numbers: whole numbers parsed strictly, never cast
case_maxeval_fraction() { expect 2 "--maxeval: expected a whole number from 1 to 2147483647, got '2.5'" "$mbopt" optimize "$springs" --maxeval 2.5; }
case_maxeval_huge() { expect 2 "--maxeval: .* got '3e9'" "$mbopt" optimize "$springs" --maxeval 3e9; }
case_maxeval_beyond_int() { expect 2 "--maxeval: .* got '3000000000'" "$mbopt" optimize "$springs" --maxeval 3000000000; }
case_maxeval_zero() { expect 2 "--maxeval: .* got '0'" "$mbopt" compare "$springs" --maxeval 0; }
case_maxeval_negative() { expect 2 "--maxeval: .* got '-5'" "$mbopt" optimize "$springs" --maxeval -5; }
case_maxeval_missing() { expect 2 '--maxeval: missing value' "$mbopt" optimize "$springs" --maxeval; }
case_checkpoint_huge() { expect 2 "--checkpoint: .* got '1e11'" "$mbopt" gradient "$fivebar" --checkpoint 1e11; }
case_checkpoint_fraction() { expect 2 "--checkpoint: .* got '2.5'" "$mbopt" gradient "$fivebar" --checkpoint 2.5; }
case_repeat_huge() { expect 2 "--repeat: expected a whole number from 1 to 1000000, got '1e9'" "$mbopt" bench "$fivebar" --repeat 1e9; }

# ---- paths: never cut, never a surprise
case_out_too_long() { expect 2 '--out: path longer than 4095 characters' "$mbopt" optimize "$springs" --out "$long_path"; }
case_compare_out_too_long() { expect 2 '--out: path longer than 4095 characters' "$mbopt" compare "$springs" --out "$long_path"; }
case_csv_too_long() { expect 3 '--csv: path longer than 4095 characters' "$mbopt" simulate "$fivebar" --csv "$long_path"; }
case_out_is_file() {
  echo keep >file
  expect 3 "--out: cannot create 'file': Not a directory" "$mbopt" optimize "$springs" --out file --maxeval 2
  [ "$(cat file)" = keep ] || fail "the file was changed"
}
case_out_empty() { expect 2 '--out: empty value' "$mbopt" optimize "$springs" --out ''; }

# ---- the command line: one parser, strict, --name value or --name=value
case_option_equals() { expect 0 'status +completed' "$mbopt" simulate "$fivebar" --t-end=0.02 --step=1e-3; }
case_option_twice() { expect 2 '--step: given twice' "$mbopt" simulate "$fivebar" --step 1e-3 --step 2e-3; }
case_option_empty_equals() { expect 2 '--step: empty value' "$mbopt" simulate "$fivebar" --step=; }
case_option_misspelt() { expect 2 "optimize: unknown option '--maxevals' \(did you mean --maxeval\?" "$mbopt" optimize "$springs" --maxevals 3; }
case_option_unknown() { expect 2 "gradient: unknown option '--frobnicate' \(see 'mbopt gradient --help'\)" "$mbopt" gradient "$fivebar" --frobnicate; }
case_flag_with_value() { expect 2 "--quiet: takes no value, got '--quiet=1'" "$mbopt" simulate "$fivebar" --quiet=1; }
case_value_is_an_option() { expect 2 '--out: missing value' "$mbopt" optimize "$springs" --out --quiet; }
case_no_spec() { expect 2 'simulate: no SPEC given' "$mbopt" simulate --json; }
case_two_specs() { expect 2 "check: more than one SPEC given \('a.json' and 'b.json'\)" "$mbopt" check a.json b.json; }
case_spec_after_double_dash() { expect 3 '^mbopt: error: -x.json: cannot open the file' "$mbopt" simulate -- -x.json; }
case_spec_missing() { expect 3 'nothing.json: cannot open the file \(No such file or directory\)' "$mbopt" gradient nothing.json; }
case_unknown_command() { expect 2 "unknown command 'simlate'" "$mbopt" simlate "$fivebar"; }
case_method_unknown() { expect 2 "--method: expected forward, adjoint or auto, got 'sideways'" "$mbopt" gradient "$fivebar" --method=sideways; }
case_threads_negative() { expect 2 "--threads: expected 0, 1 or 2, got '-1'" "$mbopt" gradient "$fivebar" --threads -1; }
case_threads_on_simulate() { expect 2 "simulate: unknown option '--threads'" "$mbopt" simulate "$fivebar" --threads 1; }
case_linear_solver_unknown() { expect 2 "--linear-solver: expected auto, dense, sparse or klu, got 'magic'" "$mbopt" simulate "$fivebar" --linear-solver magic; }
case_repeat_trailing() { expect 2 "--repeat: .* got '3x'" "$mbopt" bench "$fivebar" --repeat 3x; }
case_set_too_many() {
  local sets=()
  for k in $(seq 65); do sets+=(--set "m_A1=$k"); done
  expect 2 '--set: given more than 64 times' "$mbopt" simulate "$fivebar" "${sets[@]}"
}
case_set_no_equals() { expect 2 "--set: expected NAME=VALUE, got 'm_A1'" "$mbopt" simulate "$fivebar" --set m_A1; }
case_set_unknown_parameter() { expect 2 '--set: the spec has no parameter "nope"' "$mbopt" simulate "$fivebar" --set nope=1; }
case_help_beats_errors() { expect 0 'Usage: mbopt optimize' "$mbopt" optimize --maxeval 0x --help; }

# ---- no user text reaches a shell or a plot script as code
case_compare_injection() {
  local spec="x\`touch PWNED1\`'q\$(touch PWNED2)\";system('touch PWNED3').json"
  cp "$springs" "$spec"
  expect 0 'lbfgs +max_evaluations' "$mbopt" compare "$spec" --algorithms lbfgs,bobyqa --maxeval 3 \
    --out "o'\`touch PWNED4\`\"@x" --quiet
  ls PWNED* 2>/dev/null && fail "a command ran"
  [ -s "o'\`touch PWNED4\`\"@x/convergence.svg" ] || fail "no convergence plot"
}

# ---- structure, size and encoding of the input files
case_dev_zero() { expect 3 '/dev/zero: contains a NUL byte at offset 0' "$mbopt" simulate /dev/zero; }
case_random_bytes() {
  printf '{"name": "\001\002\003' >r.json
  head -c 2000 /dev/urandom | tr -d '\000' >>r.json
  expect 3 'r.json: ' "$mbopt" simulate r.json
}
case_directory() { expect 3 'cannot read the file \(Is a directory\)' "$mbopt" simulate "$root/problems"; }
case_empty_file() { : >e.json && expect 3 'e.json: line 1, column 1: syntax error near end of input' "$mbopt" simulate e.json; }
case_top_level_array() { echo '[1, 2]' >a.json && expect 3 'a.json: ' "$mbopt" simulate a.json; }
case_deep_nesting() {
  awk 'BEGIN { for (i = 0; i < 100000; i++) printf "["; for (i = 0; i < 100000; i++) printf "]" }' >deep.json
  expect 3 'deep.json: line 1, column 1001: arrays and objects nested deeper than 1000 levels' "$mbopt" simulate deep.json
}
utf8_name() { sed "s/\"five-bar linkage\"/\"five-bar $1 linkage\"/" "$fivebar" >u.json; }
case_utf8_invalid_byte() { utf8_name $'\xff' && expect 3 'u.json: line 2, column 21: invalid UTF-8 \(byte 0xFF\)' "$mbopt" simulate u.json --json; }
case_utf8_overlong() { utf8_name $'\xc0\xaf' && expect 3 'invalid UTF-8 \(byte 0xC0\)' "$mbopt" simulate u.json --json; }
case_utf8_surrogate() { utf8_name $'\xed\xa0\x80' && expect 3 'invalid UTF-8 \(byte 0xED\)' "$mbopt" simulate u.json --json; }
case_utf8_valid_name() {
  utf8_name 'Fünfgelenk ✓'
  expect 0 '"model":"five-bar Fünfgelenk ✓ linkage"' "$mbopt" simulate u.json --json --t-end 0.01
}
case_file_too_large() {
  { cat "$fivebar"; head -c 68000000 /dev/zero | tr '\000' ' '; } >big.json
  expect 3 'big.json: larger than 64 MB' "$mbopt" simulate big.json
  rm -f big.json
}
many_markers() {
  awk -v dup="$1" 'BEGIN { printf "{\"name\": \"m\", \"dimension\": 2, \"bodies\": [{\"name\": \"b\", \"mass\": 1, \"inertia\": 1, \"markers\": {"
    for (i = 0; i < 100000; i++) printf "%s\"m%d\": {\"point\": [%d, 0]}", i ? ", " : "", i, i
    if (dup) printf ", \"m77\": {\"point\": [0, 1]}"
    printf "}}], \"simulation\": {\"t_end\": 0.01, \"step\": 0.001}}\n" }' >m.json
}
case_many_markers_linear() { many_markers 0 && expect 0 'status +completed' "$mbopt" simulate m.json; }
case_many_markers_duplicate() { many_markers 1 && expect 3 'm.json: bodies\[0\].markers.m77: duplicate key' "$mbopt" simulate m.json; }

# ---- numbers and sizes in the model
# edit PATTERN: the five-bar springs with one sed substitution, as m.json
edit() { sed -E "$1" "$springs" >m.json; grep -q "$2" m.json || fail "the edit did not apply"; }
case_model_step_negative() { edit 's/"step": *0.01/"step": -1/' '"step": -1' && expect 3 'm.json: simulation.step: must be > 0 \(got -1\)' "$mbopt" simulate m.json; }
case_model_t_end_zero() { edit 's/"t_end": *5/"t_end": 0/' '"t_end": 0' && expect 3 'm.json: simulation.t_end: must be > 0 \(got 0\)' "$mbopt" simulate m.json; }
case_model_penalty_negative() { edit 's/"penalty": *[0-9.]+/"penalty": -5/' '"penalty": -5' && expect 3 'm.json: simulation.penalty: must be > 0 \(got -5\)' "$mbopt" simulate m.json; }
case_model_maxeval_huge() { edit 's/"maxeval": *60/"maxeval": 1e12/' '1e12' && expect 3 'm.json: optimization.maxeval: must be an integer \(got 1e\+12\)' "$mbopt" optimize m.json --out o; }
case_model_mass_overflow() { sed '0,/"mass": 1.5/s//"mass": 1e400/' "$fivebar" >m.json && expect 3 'm.json: bodies\[1\].mass: not a finite number' "$mbopt" simulate m.json; }
case_model_bounds_reversed() {
  tr -d '\n' <"$springs" | sed -E 's/"Ls1": *\{ *"lower": *1, *"upper": *4/"Ls1": {"lower": 4, "upper": 1/' >m.json
  expect 3 'm.json: optimization.parameters.Ls1.upper: must be greater than lower \(got 1 <= 4\)' "$mbopt" optimize m.json --out o
  [ ! -e o ] || fail "the output folder was created"
}
case_model_start_outside_bounds() {
  tr -d '\n' <"$springs" | sed -E 's/"Ls1": *\{ *"lower": *1,/"Ls1": {"lower": 3,/' >m.json
  expect 3 'm.json: optimization.parameters.Ls1: initial value 2.23607 of "Ls1" is outside \[3, 4\]' "$mbopt" optimize m.json --out o
}
case_free_bodies_limit() {
  awk 'BEGIN { printf "{\"name\": \"free\", \"dimension\": 3, \"bodies\": ["
    for (i = 0; i < 1000; i++) printf "%s{\"name\": \"b%d\", \"mass\": 1, \"inertia\": [1, 1, 1], \"position\": [%d, 0, 0]}", i ? ", " : "", i, i
    printf "], \"simulation\": {\"t_end\": 0.01, \"step\": 0.001}}\n" }' >m.json
  expect 3 'm.json: initial assembly: the model has 12000 coordinates, more than the 4000 the assembly takes' "$mbopt" simulate m.json
}
case_byte_order_mark() { { printf '\xef\xbb\xbf'; cat "$fivebar"; } >m.json && expect 0 'status +completed' "$mbopt" simulate m.json --t-end 0.01; }

# ---- paths
case_symlink_loop() { ln -s loop1 loop2 && ln -s loop2 loop1 && expect 3 'loop1: cannot open the file \(Too many levels of symbolic links\)' "$mbopt" simulate loop1; }
case_csv_missing_folder() { expect 3 "--csv: cannot write 'nodir/x.csv.part': No such file or directory" "$mbopt" simulate "$fivebar" --csv nodir/x.csv; }
case_parameters_not_json() { echo '{' >p.json && expect 3 "--parameters: 'p.json' is neither an optimisation's summary.json" "$mbopt" simulate "$fivebar" --parameters p.json; }
case_out_with_equals() { expect 0 'wrote a=b/summary.json' "$mbopt" optimize "$springs" --out=a=b --maxeval 2 --quiet; }

# ---- parameters set on the command line meet the model's rules
case_set_mass_zero() { expect 2 '--set: parameter "m_A1" = 0: bodies\[0\].mass must be > 0' "$mbopt" simulate "$fivebar" --set m_A1=0; }
case_set_mass_negative() { expect 2 '"m_A1" = -1: bodies\[0\].mass must be > 0' "$mbopt" simulate "$fivebar" --set m_A1=-1; }
case_set_nan() { expect 2 '--set: parameter "m_A1": nan is not a finite number' "$mbopt" simulate "$fivebar" --set m_A1=nan; }
case_set_hex_junk() { expect 2 "--set: '1x' is not a number" "$mbopt" simulate "$fivebar" --set m_A1=1x; }
case_parameters_negative_mass() {
  echo '{"parameters": ["m_A1"], "x": [-2]}' >s.json
  expect 2 's.json: parameter "m_A1" = -2: bodies\[0\].mass must be > 0' "$mbopt" simulate "$fivebar" --parameters s.json
}

# ---- output folders: locked, validated before they are touched, written whole
case_failed_rerun_keeps_results() {
  expect 0 'lbfgs' "$mbopt" optimize "$springs" --out o --maxeval 4 --quiet
  local before
  before=$(cd o && sha256sum history.csv summary.json best.dat)
  expect 2 "--algorithm: unknown algorithm 'simplx' \\(did you mean sbplx\\?" "$mbopt" optimize "$springs" --out o --algorithm simplx
  expect 2 '--maxeval' "$mbopt" optimize "$springs" --out o --maxeval 2.5
  expect 2 "--algorithms: unknown algorithm 'bogus'" "$mbopt" compare "$springs" --out o --algorithms lbfgs,bogus
  [ "$(cd o && sha256sum history.csv summary.json best.dat)" = "$before" ] || fail "results changed"
  ls o/*.part 2>/dev/null && fail "staged files left"
  return 0
}
case_compare_checks_every_algorithm_first() {
  expect 2 "--algorithms: unknown algorithm 'bogus'" "$mbopt" compare "$springs" --out c --algorithms lbfgs,bogus
  [ ! -e c ] || fail "the folder was created before the check"
  expect 2 "--algorithms: lbfgs cannot run .*constraints\[0\]: lbfgs takes no constraints" "$mbopt" compare "$governor" --out c --algorithms slsqp,lbfgs
  [ ! -e c ] || fail "the folder was created before the check"
}
case_concurrent_optimize() {
  "$mbopt" optimize "$spline" --out o --quiet >first.txt 2>&1 &
  local first=$!
  # until its first evaluation is in (an interrupted run without one leaves the folder as it was)
  for _ in $(seq 1 600); do
    [ "$(cat o/history.csv.part 2>/dev/null | wc -l)" -ge 2 ] && break
    sleep 0.05
  done
  expect 3 "--out: 'o' is in use by another mbopt run \(process $first\)" \
    "$mbopt" optimize "$spline" --out o --quiet
  kill -INT $first
  wait $first
  local code=$?
  [ $code -eq 130 ] || fail "the first run exited $code"
  grep -q '"status":[[:space:]]*"interrupted"' o/summary.json || fail "the first run's summary"
  well_formed_csv o/history.csv
}

case_concurrent_csv() {
  "$mbopt" simulate "$fivebar" --t-end 400 --csv c.csv --quiet >/dev/null &
  local pid=$! waited=0
  until [ -e c.csv.part ] || [ $waited -ge 500 ]; do sleep 0.01; waited=$((waited + 1)); done
  expect 3 "--csv: 'c.csv.part' is being written by another mbopt run" "$mbopt" simulate "$fivebar" --t-end 0.1 --csv c.csv
  kill -TERM $pid
  wait $pid
  well_formed_csv c.csv
}

# ---- signals: complete files and 128 + signal
signal_optimize() {
  local sig=$1 code=$2
  timeout --preserve-status -s "$sig" 2 "$mbopt" optimize "$spline" --out o --quiet >/dev/null 2>&1
  local got=$?
  [ $got -eq "$code" ] || fail "exit $got, expected $code"
  grep -q '"status":[[:space:]]*"interrupted"' o/summary.json || fail "summary not marked interrupted"
  well_formed_csv o/history.csv
  [ "$(wc -l <o/history.csv)" -ge 2 ] || fail "no evaluation in the history"
  ls o/*.part 2>/dev/null && fail "staged files left"
  return 0
}
case_optimize_sigterm() { signal_optimize TERM 143; }
case_optimize_sighup() { signal_optimize HUP 129; }
case_simulate_sigterm_csv() {
  timeout --preserve-status -s TERM 1 "$mbopt" simulate "$fivebar" --t-end 10000 --csv s.csv \
    >out.txt 2>err.txt
  local got=$?
  [ $got -eq 143 ] || fail "exit $got, expected 143"
  grep -q 'status *interrupted' out.txt || fail "no interrupted status: $(cat out.txt)"
  grep -Eq 'error: .*interrupted at t = [0-9.]+' err.txt || fail "no message: $(cat err.txt)"
  well_formed_csv s.csv
  [ ! -e s.csv.part ] || fail "staged CSV left"
}
case_gradient_sigint() {
  timeout --preserve-status -s INT 1 "$mbopt" gradient "$fivebar" --t-end 5000 >out.txt 2>err.txt
  local got=$?
  [ $got -eq 130 ] || fail "exit $got, expected 130"
  grep -Eq '^mbopt: error: .*interrupted at t = [0-9.]+$' err.txt || fail "$(cat err.txt)"
}

# ---- resuming: a run stopped at any moment, even by SIGKILL, continues to the same optimum
# the five-bar springs with a finer step, so that a run lasts long enough to be stopped anywhere
slow_springs() { sed 's/"step": *0.01/"step": 0.0005/' "$springs" >s.json; }
# the design variables of a summary, one per line
summary_x() { tr -d '\n\t ' <"$1" | sed -E 's/.*"x":\[([^]]*)\].*/\1/' | tr , '\n'; }
# same_optimum A B: two summaries end at the same point (1e-9 relative) with psi1 < 1e-20
same_optimum() {
  paste <(summary_x "$1") <(summary_x "$2") |
    awk '{ d = $1 - $2; if (d < 0) d = -d; s = $1 < 0 ? -$1 : $1; if (d > 1e-9 * s) bad = 1 }
         END { exit bad + (NR != 2) }' || fail "optima differ: $(summary_x "$1" | tr '\n' ' ') / $(summary_x "$2" | tr '\n' ' ')"
  tr -d '\n\t ' <"$2" | grep -Eq '"objective":[0-9.]+e-([2-9][0-9]|[1-9][0-9][0-9])' ||
    fail "objective not below 1e-20: $(grep objective "$2")"
}
# stop_at_random SIG DIR [MS]: starts a run into DIR and sends SIG at a random moment within MS
# milliseconds (default 400) after its first evaluation
stop_at_random() {
  local sig=$1 dir=$2 most=${3:-400}
  "$mbopt" optimize s.json --out "$dir" --quiet >/dev/null 2>&1 &
  local pid=$! waited=0
  until [ "$(cat "$dir"/history.csv.part 2>/dev/null | wc -l)" -ge 2 ] || [ $waited -ge 600 ]; do
    sleep 0.01
    waited=$((waited + 1))
  done
  sleep "0.$(printf '%03d' $((RANDOM % (most + 1))))"
  kill -"$sig" $pid 2>/dev/null
  wait $pid
}
# the history left by a stopped run: whole rows under one header
history_left() { [ -e "$1/history.csv.part" ] && echo "$1/history.csv.part" || echo "$1/history.csv"; }
resume_after() {
  local sig=$1
  slow_springs
  "$mbopt" optimize s.json --out full --quiet >/dev/null || fail "uninterrupted run failed"
  for trial in 1 2 3; do
    stop_at_random "$sig" "r$trial"
    well_formed_csv "$(history_left "r$trial")"
    "$mbopt" optimize --resume "r$trial" --quiet >out.txt 2>err.txt || fail "resume $trial: $(cat err.txt)"
    grep -q 'evaluations replayed from the history' out.txt || fail "no replay: $(cat out.txt)"
    ls "r$trial"/*.part* 2>/dev/null && fail "staged files left after resume $trial"
    well_formed_csv "r$trial/history.csv"
    same_optimum full/summary.json "r$trial/summary.json"
  done
  return 0
}
case_resume_after_sigkill() { resume_after KILL; }
case_resume_after_sigterm() { resume_after TERM; }
case_resume_after_sigint() { resume_after INT; }
case_resume_killed_twice() {
  slow_springs
  "$mbopt" optimize s.json --out full --quiet >/dev/null || fail "uninterrupted run failed"
  stop_at_random KILL r 0
  # the resumed run killed too, once it has evaluated beyond the record
  local rows
  rows=$(wc -l <r/history.csv.part)
  "$mbopt" optimize --resume r --quiet >/dev/null 2>&1 &
  local pid=$! waited=0
  until [ "$(wc -l <r/history.csv.part)" -gt "$rows" ] || [ $waited -ge 600 ]; do
    sleep 0.01
    waited=$((waited + 1))
  done
  kill -KILL $pid 2>/dev/null
  wait $pid
  well_formed_csv r/history.csv.part
  [ "$(wc -l <r/history.csv.part)" -ge "$rows" ] || fail "the record lost rows"
  "$mbopt" optimize --resume r --quiet >/dev/null 2>err.txt || fail "second resume: $(cat err.txt)"
  same_optimum full/summary.json r/summary.json
}
case_resume_more_evaluations() {
  "$mbopt" optimize "$springs" --out full --quiet >/dev/null || fail "uninterrupted run failed"
  expect 0 'max_evaluations' "$mbopt" optimize "$springs" --out r --maxeval 4 --quiet
  expect 0 '4 evaluations replayed' "$mbopt" optimize --resume r --maxeval 60 --quiet
  same_optimum full/summary.json r/summary.json
  [ "$(tail -1 full/history.csv | cut -d, -f1)" = "$(tail -1 r/history.csv | cut -d, -f1)" ] ||
    fail "the evaluation count did not continue"
}
case_resume_partial_row() {
  "$mbopt" optimize "$springs" --out full --quiet >/dev/null || fail "uninterrupted run failed"
  "$mbopt" optimize "$springs" --out r --maxeval 5 --quiet >/dev/null || fail "first run failed"
  # as a kill leaves it: the history still staged, its last row cut short
  mv r/summary.json r/summary.json.part
  head -c -20 r/history.csv >r/history.csv.part && rm r/history.csv
  expect 0 '4 evaluations replayed' "$mbopt" optimize --resume r --maxeval 60 --quiet
  same_optimum full/summary.json r/summary.json
}
case_resume_refuses_fresh_run() {
  slow_springs
  stop_at_random KILL r 0
  cp r/history.csv.part before.csv
  expect 3 "--out: 'r' holds the history of a run that stopped without finishing" "$mbopt" optimize s.json --out r
  cmp -s before.csv r/history.csv.part || fail "the record was changed"
}
case_resume_spec_changed() {
  slow_springs
  "$mbopt" optimize s.json --out r --maxeval 2 --quiet >/dev/null || fail "first run failed"
  echo ' ' >>s.json
  expect 3 "--resume: the run's spec '.*/s.json' changed since the run began" "$mbopt" optimize --resume r
}
case_resume_nothing() { mkdir -p r && expect 3 "--resume: 'r' holds no run to resume" "$mbopt" optimize --resume r; }
case_resume_with_spec() { expect 2 '--resume: continues the run in .r. with its own spec, algorithm, folder, simulation settings and start; give no SPEC' "$mbopt" optimize "$springs" --resume r; }
case_resume_with_run_option() { expect 2 'give no --set' "$mbopt" optimize --resume r --set Ls1=2; }
# a run's step, span and start (--set) are part of its record: the resumed run replays them
case_resume_keeps_run_options() {
  local options=(--step 2e-3 --t-end 0.6 --set Ls2=1.9 --quiet)
  "$mbopt" optimize "$springs" --out full "${options[@]}" >/dev/null || fail "uninterrupted run failed"
  expect 0 'max_evaluations' "$mbopt" optimize "$springs" --out r --maxeval 3 "${options[@]}"
  expect 0 '3 evaluations replayed' "$mbopt" optimize --resume r --maxeval 60 --quiet
  [ ! -s err.txt ] || fail "the replay left the record: $(cat err.txt)"
  same_optimum full/summary.json r/summary.json
  cmp full/history.csv r/history.csv >/dev/null || [ "$(cut -d, -f1,3- full/history.csv)" = "$(cut -d, -f1,3- r/history.csv)" ] ||
    fail "the histories differ beyond their clocks"
}
case_resume_with_algorithm() { expect 2 'give no --algorithm' "$mbopt" optimize --resume r --algorithm mma; }
case_resume_corrupt_row() {
  "$mbopt" optimize "$springs" --out r --maxeval 4 --quiet >/dev/null || fail "first run failed"
  sed -i '4s/,1,0,/,1,7,/' r/history.csv
  cp r/history.csv before.csv
  expect 3 'r/history.csv: line 4: evaluation 3, gradient 1, failed 7: expected evaluation 3 and 0 or 1' "$mbopt" optimize --resume r
  cmp -s before.csv r/history.csv || fail "the history was changed"
}
case_resume_other_header() {
  "$mbopt" optimize "$springs" --out r --maxeval 2 --quiet >/dev/null || fail "first run failed"
  sed -i '1s/Ls1/Lx1/' r/history.csv
  expect 3 "r/history.csv: its first line is not the header of this spec's history" "$mbopt" optimize --resume r
}
case_compare_refuses_record() {
  mkdir -p c/lbfgs && echo 'evaluation' >c/lbfgs/history.csv.part
  expect 3 "'c/lbfgs' holds the history of a run that stopped without finishing" "$mbopt" compare "$springs" --out c --algorithms lbfgs
}

case_compare_sigterm() {
  timeout --preserve-status -s TERM 2 "$mbopt" compare "$spline" --out c --algorithms lbfgs,mma --quiet >/dev/null 2>&1
  local got=$?
  [ $got -eq 143 ] || fail "exit $got, expected 143"
  grep -q '"status":[[:space:]]*"interrupted"' c/comparison.json || fail "comparison not marked interrupted"
  well_formed_csv c/lbfgs/history.csv
  ls c/*.part c/*/*.part 2>/dev/null && fail "staged files left"
  return 0
}
case_second_signal_at_once() {
  "$mbopt" optimize "$spline" --out o --quiet >/dev/null 2>err.txt &
  local pid=$! waited=0
  until [ "$(cat o/history.csv.part 2>/dev/null | wc -l)" -ge 2 ] || [ $waited -ge 3000 ]; do sleep 0.01; waited=$((waited + 1)); done
  kill -TERM $pid
  sleep 0.7
  kill -TERM $pid 2>/dev/null
  wait $pid
  local got=$?
  [ $got -eq 143 ] || fail "exit $got, expected 143"
  well_formed_csv "$(history_left o)"
}

declare -F "case_$name" >/dev/null || fail "no such case"
"case_$name"
echo "PASS $name"
