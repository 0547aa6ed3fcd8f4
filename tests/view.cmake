# Browser tests of the HTML pages (tests/view/): every bundled model and a model with every
# joint and force type through `mbopt view` (shortened spans), opened in headless Chromium; the
# checks must be able to fail (broken pages); the command line's errors.
set(MBOPT_VIEW_OUT ${PROJECT_BINARY_DIR}/out/view)
function(mbopt_view_test name options spec)
  add_test(NAME view_${name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/view/page_test.sh $<TARGET_FILE:mbopt>
            ${MBOPT_VIEW_OUT}/${name}.html ${options} ${spec} ${ARGN}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(view_${name} PROPERTIES TIMEOUT 200 PASS_REGULAR_EXPRESSION "^[^\n]*\nok ")
endfunction()

file(GLOB view_specs RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/problems/*.json ${PROJECT_SOURCE_DIR}/problems/control/*.json
  ${PROJECT_SOURCE_DIR}/problems/vehicle/*.json)
foreach(spec ${view_specs})
  get_filename_component(stem ${spec} NAME_WE)
  mbopt_view_test(${stem} - ${spec} --t-end 1)
endforeach()
mbopt_view_test(every_element - tests/models/view/every_element.json --t-end 0.5)
mbopt_view_test(planar_features - tests/models/ok/features_planar.json --t-end 0.5)
# the buggy's straight run over the step: its roll rate, 1e-11 rad/s of rounding against wheels
# spinning at 10 rad/s, is drawn as noise (its mean, its range noted), not at full height
mbopt_view_test(noise_shown_as_such --expect-noise,chassis_omega.x
  problems/vehicle/step_descent.json --t-end 1.6)
# the initial and the optimised design of a comparison on one page
mbopt_view_test(before_after - problems/fivebar_springs.json
  --parameters results/optimization/fivebar_springs/comparison.json --t-end 2)

# the checks fail on a page with a script error, and on one whose mechanism does not move
foreach(spoil error frozen)
  add_test(NAME view_detects_${spoil}_page
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/view/broken_page.sh $<TARGET_FILE:mbopt>
            ${MBOPT_VIEW_OUT}/broken_${spoil}.html ${spoil} problems/fivebar.json --t-end 1
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(view_detects_${spoil}_page PROPERTIES TIMEOUT 200)
endforeach()
set_tests_properties(view_detects_error_page PROPERTIES PASS_REGULAR_EXPRESSION "FAIL .*a deliberate error")
set_tests_properties(view_detects_frozen_page PROPERTIES
  PASS_REGULAR_EXPRESSION "FAIL .*moving the time slider did not change the 3-D canvas")

# the command line
mbopt_cli_test(view_help 0 "Usage: mbopt view SPEC.json" 0 view --help)
mbopt_cli_test(view_no_spec 2 "view: no SPEC given" 1 view)
mbopt_cli_test(view_unknown_option 2 "view: unknown option '--csv'" 1 view problems/fivebar.json --csv x.csv)
mbopt_cli_test(view_missing_file 3 "cannot open the file" 1 view problems/none.json --out ${MBOPT_VIEW_OUT}/none.html)
mbopt_cli_test(view_unwritable 3 "--out: cannot write" 1
  view problems/fivebar.json --t-end 0.1 --out /nonexistent-dir/page.html)
# a run that stops early: the page shows the motion until then, and the command fails
mbopt_cli_test(view_run_stops_early 1 "the mechanism locks.* at t = 0\\.31[0-9]* s; the page shows the motion until then" 1
  view tests/models/fail/locking.json --out ${MBOPT_VIEW_OUT}/locking.html)
mbopt_cli_test(view_bad_parameters 3 "is neither an optimisation's summary.json" 1
  view problems/fivebar_springs.json --parameters problems/fivebar.json --out ${MBOPT_VIEW_OUT}/none.html)

# report.html of compare and optimize: it renders, and the convergence plot's best curves hold
# feasible evaluations only (a constrained mechanism whose infeasible points lie lower, and the
# buggy's step descent shortened); a report whose evaluations are all marked feasible must fail
function(mbopt_report_test name spoil options)
  add_test(NAME ${name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/view/report_test.sh $<TARGET_FILE:mbopt>
            ${MBOPT_VIEW_OUT}/${name} ${spoil} ${options} ${ARGN}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300)
endfunction()
mbopt_report_test(report_compare_constrained - --expect-infeasible,--still
  compare tests/models/opt/reach_above_floor.json --algorithms slsqp,mma,ccsaq)
set_tests_properties(report_compare_constrained PROPERTIES
  PASS_REGULAR_EXPRESSION "ok report.html: .*all feasible and monotone, [1-9][0-9]* lower infeasible points left out")
mbopt_report_test(report_compare_step_descent - -
  compare problems/vehicle/step_descent.json --t-end 1.6 --maxeval 3 --algorithms lbfgs,mma)
set_tests_properties(report_compare_step_descent PROPERTIES PASS_REGULAR_EXPRESSION "ok report.html: .*2 designs; report: 2 runs")
mbopt_report_test(report_optimize - -
  optimize problems/fivebar_springs.json --maxeval 5 --t-end 2)
set_tests_properties(report_optimize PROPERTIES PASS_REGULAR_EXPRESSION "ok report.html: .*report: 1 runs")
mbopt_report_test(report_detects_infeasible_best feasible --still
  compare tests/models/opt/reach_above_floor.json --algorithms slsqp)
set_tests_properties(report_detects_infeasible_best PROPERTIES
  PASS_REGULAR_EXPRESSION "FAIL report.html: .*marked feasible but violates a constraint")
