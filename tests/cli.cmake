# Command-line tests: exit codes, help texts, outputs and one-line errors on bad input.
function(mbopt_cli_test name expect_code regex one_line)
  add_test(NAME cli_${name}
    COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:mbopt>;${ARGN}"
            -DEXPECT_CODE=${expect_code} "-DEXPECT_REGEX=${regex}" -DONE_LINE_STDERR=${one_line}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()

# `mbopt check MODEL ARGS` passing by both sensitivity methods: cli_check_NAME_forward, _adjoint
function(mbopt_check_both name model)
  foreach(method forward adjoint)
    mbopt_cli_test(check_${name}_${method} 0 "passed" 0 check ${model} --method ${method} ${ARGN})
  endforeach()
endfunction()

mbopt_cli_test(help 0 "Usage: mbopt COMMAND" 0 --help)
mbopt_cli_test(simulate_help 0 "Usage: mbopt simulate SPEC.json" 0 simulate --help)
mbopt_cli_test(no_command 2 "Usage: mbopt COMMAND" 0)
mbopt_cli_test(unknown_command 2 "unknown command 'fly'" 1 fly)
mbopt_cli_test(unknown_option 2 "unknown option '--stpe'" 1 simulate problems/fivebar.json --stpe 1)
mbopt_cli_test(bad_step 2 "--step: expected a positive number" 1 simulate problems/fivebar.json --step -1)
mbopt_cli_test(missing_file 3 "cannot" 1 simulate tests/models/does-not-exist.json)
mbopt_cli_test(simulate_fivebar 0 "status +completed" 0
  simulate problems/fivebar.json --csv ${PROJECT_BINARY_DIR}/fivebar.csv)
mbopt_cli_test(simulate_json 0 "\"status\":\"completed\"" 0
  simulate problems/slider_crank.json --t-end 0.1 --json)
# the summary's functionals: the five-bar benchmark's psi (../shared/benchmarks: 0.7268777,
# 7.342272, 304.92075 at h = 1e-3)
mbopt_cli_test(simulate_functionals 0 "functionals  psi1 = 0\\.7268777[0-9]* psi2 = 7\\.34227[0-9]* psi3 = 304\\.92[0-9]*" 0
  simulate problems/fivebar.json --step 1e-3)
mbopt_cli_test(simulate_functionals_json 0 "\"functionals\":{\"psi1\":0\\.7268777" 0
  simulate problems/fivebar.json --step 1e-3 --json)
mbopt_cli_test(simulate_csv_unwritable 3 "cannot write" 1
  simulate problems/fivebar.json --csv /nonexistent-dir/out.csv)

# every malformed or non-physical model: exit code 3 and one error line naming the file
file(GLOB bad_models RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/models/bad/*.json)
foreach(model ${bad_models})
  get_filename_component(stem ${model} NAME_WE)
  mbopt_cli_test(bad_${stem} 3 "${stem}\\.json" 1 simulate ${model})
endforeach()

# every model of the tests that should run runs in both formulations (a spherical joint near the
# identity and a coordinate no force moves once stopped the joint formulation alone)
file(GLOB ok_models RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/models/ok/*.json)
foreach(model ${ok_models})
  get_filename_component(stem ${model} NAME_WE)
  foreach(formulation natural joint)
    mbopt_cli_test(ok_${stem}_${formulation} 0 "status +completed" 0
      simulate ${model} --formulation ${formulation} --quiet)
  endforeach()
endforeach()

# models that load but cannot be assembled or integrated: message and exit code from the table
# tests/models/fail/expect.txt, one "file;exit code;regular expression" per line
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/models/fail/expect.txt)
file(STRINGS ${PROJECT_SOURCE_DIR}/tests/models/fail/expect.txt fail_cases REGEX "^[^#]")
foreach(case ${fail_cases})
  list(GET case 0 model)
  list(GET case 1 code)
  list(GET case 2 regex)
  get_filename_component(stem ${model} NAME_WE)
  mbopt_cli_test(fail_${stem} ${code} "${regex}" 1 simulate tests/models/fail/${model} --quiet)
endforeach()

# in joint coordinates the assembly counts every joint's rows, and says so
mbopt_cli_test(fail_singular_initial_joint 3 "initial configuration is locked: 8 constraints \\(counting every joint's, as the joint formulation's assembly does\\) have rank 7 and no motion leaves it .* dependent: .*joint jA" 1
  simulate tests/models/fail/singular_initial.json --formulation joint --quiet)

# a mechanism driven beyond its reach locks: a smaller step reaches the same verdict
mbopt_cli_test(simulate_locking_small_step 1 "t = 0\\.3179: the constraints cannot be satisfied: .* the mechanism locks" 1
  simulate tests/models/fail/locking.json --step 1e-4 --quiet)

# steps accepted stalled at singular positions: the summary names the penalty that converges them
# (test_iftomm checks that it does)
mbopt_cli_test(simulate_stalled_names_the_cap 0
  "[0-9]+ stalled at round-off\nstalled +steps accepted where the iteration stalled keep an error that a smaller step does not reduce; simulation\\.penalty = 4e\\+10 \\(every constraint's penalty at its cap\\) converges them" 0
  simulate tests/models/iftomm/a02_fourbar_2.json --step 5e-4)
# steps that fail at h = 0.05 but pass on sub-steps: simulate and gradients retry them, and the
# gradients of the sub-stepped run match finite differences; at h = 0.5 one step needs more
# sub-steps than the default 8: the gradient names the fixed step that gets it through, and that
# step does
mbopt_cli_test(simulate_substeps 0 "100 steps, .* 3 retried on sub-steps" 0
  simulate problems/fivebar.json --step 0.05)
mbopt_cli_test(gradient_substeps 0 "steps     3 retried on sub-steps" 0
  gradient problems/fivebar.json --step 0.05)
mbopt_check_both(fivebar_substeps problems/fivebar.json --step 0.05)
# in joint coordinates the five-bar takes h = 0.05 whole; at h = 0.5 nine of its ten steps pass on
# sub-steps (the first iterations thrown out of range), which both methods follow
mbopt_cli_test(simulate_joint_substeps 0 "10 steps, .* 9 retried on sub-steps.*completed" 0
  simulate problems/fivebar.json --formulation joint --step 0.5)
mbopt_check_both(joint_fivebar_substeps problems/fivebar.json --formulation joint --step 0.5)
mbopt_cli_test(gradient_substep_remedy 1
  "t = 2: the Newton iteration fails at h = 0\\.5, also on 8 sub-steps, but passes on 16 sub-steps: simulation\\.max_substeps = 16 \\(or --step 0\\.03125\\) gets it through" 1
  gradient problems/fivebar.json --step 0.5)
mbopt_cli_test(gradient_substep_remedy_works 0 "method    forward" 0
  gradient problems/fivebar.json --step 0.03125 --method forward)

# gradients: the JSON shape, and analytic against finite differences
mbopt_cli_test(gradient_json 0 "\"parameters\":\\[\"Ls1\",\"Ls2\",\"m_A1\",\"x_G\",\"L_A1\"\\],\"functionals\":\\[\\{\"name\":\"psi1\"" 0
  gradient problems/fivebar.json --json)
mbopt_cli_test(gradient_help 0 "Usage: mbopt gradient" 0 gradient --help)
mbopt_cli_test(gradient_bad_method 2 "--method" 1 gradient problems/fivebar.json --method magic)
mbopt_cli_test(gradient_bad_threads 2 "--threads: expected 0, 1 or 2, got '3'" 1
  gradient problems/fivebar.json --threads 3)
mbopt_cli_test(gradient_threads 0 "\"method\":\"adjoint\"" 0
  gradient problems/fivebar.json --t-end 0.1 --method adjoint --threads 2 --json)
mbopt_cli_test(simulate_threads 2 "simulate: unknown option '--threads'" 1
  simulate problems/fivebar.json --threads 1)
mbopt_cli_test(gradient_no_functionals 3 "needs \"functionals\"" 1
  gradient tests/models/ok/features_planar.json)
mbopt_cli_test(check_fivebar 0 "passed" 0 check problems/fivebar.json)
# the slider_track entry of I_rod is 50 times smaller than the rest of its row: the round-off of
# whole simulations (Newton tolerance 1e-13) puts its central differences 2e-5 from the exact value
mbopt_cli_test(check_slider_crank 0 "passed" 0 check problems/slider_crank.json --tolerance 1e-4)
mbopt_cli_test(check_help 0 "Usage: mbopt check" 0 check --help)
# a functional that is zero but for round-off (the symmetric buggy's roll before the lane change,
# about 1e-20): its entries pass by the absolute tolerance that its measured noise gives
mbopt_cli_test(check_roll_at_round_off 0
  "method +adjoint \\(requested\\)\nnoise +roll +[0-9.]+e-2[0-9] at psi = [0-9.]+e-2[0-9].*5 of 5 entries beyond it but within their absolute tolerance, 0 failed: passed" 0
  check problems/vehicle/double_lane_change.json --t-end 0.3 --method adjoint)
# a real difference (the differences' own truncation error at a tenfold step, and at its tenth and
# hundredth against a tolerance of 1e-9) is not noise
mbopt_cli_test(check_fails_on_a_real_difference 1 "psi3 +L_A1 .*FAIL.*FAILED" 0
  check problems/fivebar.json --fd-step 0.1 --tolerance 1e-9)
# the same differences with the default tolerance pass at a tenth of the step, and say so
mbopt_cli_test(check_refines_its_step 0
  "psi3 +L_A1 .*\\(at 1/10 of the step\\).*[0-9]+ at a smaller step, 0 failed: passed" 0
  check problems/fivebar.json --fd-step 0.1)
# a tyre's contact, smooth over 0.1 mm, is narrower than the default step of its radius
mbopt_cli_test(check_tyre_radius_at_a_smaller_step 0
  "R .*\\(at 1/10 of the step\\).*0 failed: passed" 0
  check tests/models/ok/tyre_wheel.json --t-end 0.1)
mbopt_cli_test(bench_help 0 "Usage: mbopt bench" 0 bench --help)
mbopt_cli_test(bench_fivebar 0 "central differences" 0 bench problems/fivebar.json --repeat 1 --t-end 0.5)

# adjoint sensitivity through the command line
mbopt_cli_test(gradient_adjoint_checkpoint 0 "\"method\":\"adjoint\"" 0
  gradient problems/fivebar.json --method adjoint --checkpoint 64 --json)
mbopt_cli_test(check_fivebar_adjoint 0 "passed" 0 check problems/fivebar.json --method adjoint)
mbopt_cli_test(gradient_auto_reason 0 "method +adjoint \\(p = 100 parameters > m = 2 functionals: per step the forward method solves p sets of linearised systems, the adjoint m transposed sets and one refactorisation\\)" 0
  gradient problems/fivebar_spline.json --t-end 0.5)
# auto is reproducible: ten runs, one method and the same digits
add_test(NAME cli_gradient_auto_ten_runs
  COMMAND bash -c "for i in 1 2 3 4 5 6 7 8 9 10; do $<TARGET_FILE:mbopt> gradient problems/fivebar.json --t-end 1 --json | sed 's/,\"seconds\":.*//'; done | sort -u | wc -l | grep -qx 1"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# optimisation through the command line
mbopt_cli_test(optimize_help 0 "Usage: mbopt optimize" 0 optimize --help)
mbopt_cli_test(compare_help 0 "Usage: mbopt compare" 0 compare --help)
mbopt_cli_test(optimize_springs 0 "lbfgs +converged" 0
  optimize problems/fivebar_springs.json --out ${PROJECT_BINARY_DIR}/out/optimize-springs --quiet)
mbopt_cli_test(compare_springs 0 "bobyqa +converged" 0
  compare problems/fivebar_springs.json --algorithms lbfgs,slsqp,mma,bobyqa
  --out ${PROJECT_BINARY_DIR}/out/compare-springs --quiet)
mbopt_cli_test(optimize_failed_points 1 "evaluation_failed" 0
  optimize tests/models/opt/chain_fails_below.json --out ${PROJECT_BINARY_DIR}/out/chain --quiet)
mbopt_cli_test(optimize_bad_algorithm 2 "--algorithm: unknown algorithm 'simplex'" 1
  optimize problems/fivebar_springs.json --algorithm simplex --out ${PROJECT_BINARY_DIR}/out/bad --quiet)
mbopt_cli_test(version 0 "^mbopt [0-9]+\\.[0-9]+\\.[0-9]+\n$" 0 --version)
# every command that simulates takes the run options; the start follows --set
mbopt_cli_test(optimize_run_options 0 "Ls1 +2\\.3\n" 0
  optimize problems/fivebar_springs.json --set Ls1=2.3 --t-end 0.5 --step=2e-3 --maxeval 1
  --out ${PROJECT_BINARY_DIR}/out/optimize-run-options --quiet)
mbopt_cli_test(optimize_set_unknown 2 "--set: the spec has no parameter \"L1\"" 1
  optimize problems/fivebar_springs.json --set L1=2.3 --out ${PROJECT_BINARY_DIR}/out/none --quiet)
# a constrained spec: compare picks algorithms that take constraints, and every one runs
mbopt_cli_test(compare_constrained_defaults 0
  "slsqp +max_evaluations[^\n]*\nmma +max_evaluations[^\n]*\nccsaq +max_evaluations[^\n]*\ncobyla +max_evaluations" 0
  compare problems/control/governor_design.json --maxeval 2 --t-end 0.4
  --out ${PROJECT_BINARY_DIR}/out/compare-constrained --quiet)
# the start's objective (the spec's psi at its start, as simulate prints it: 71.42892281 over
# 0.5 s) and the constraints at the result
mbopt_cli_test(optimize_start_and_constraints 0
  "objective at the start 71\\.428922[0-9]*\n  constraint overhang_min +[0-9.e-]+ +>= 0\n  constraint overhang_max +[0-9.e-]+ +>= 0\nfeasible\n" 0
  optimize problems/control/governor_design.json --maxeval 2 --t-end 0.5
  --out ${PROJECT_BINARY_DIR}/out/optimize-governor-start --quiet)
mbopt_cli_test(compare_algorithm_typo 2 "--algorithms: unknown algorithm 'mmaa' \\(did you mean mma\\?" 1
  compare problems/control/governor_design.json --algorithms slsqp,mmaa --out ${PROJECT_BINARY_DIR}/out/none)
mbopt_cli_test(compare_algorithm_without_constraints 2 "--algorithms: bobyqa cannot run" 1
  compare problems/control/governor_design.json --algorithms slsqp,bobyqa --out ${PROJECT_BINARY_DIR}/out/none)
mbopt_cli_test(optimize_no_section 3 "optimization: missing" 1
  optimize problems/fivebar.json --out ${PROJECT_BINARY_DIR}/out/none --quiet)
# tests/SCRIPT run with the mbopt executable and a scratch folder out/SCRATCH of the build tree
function(mbopt_script_test name script scratch)
  add_test(NAME ${name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/${script} $<TARGET_FILE:mbopt>
            ${PROJECT_BINARY_DIR}/out/${scratch}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()
mbopt_script_test(cli_best_feasible cli_best_feasible.sh best-feasible)
mbopt_script_test(cli_convergence_plot cli_convergence_plot.sh convergence-plot)
add_test(NAME plot_histories_units_and_targets
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/plot_histories.sh ${PROJECT_BINARY_DIR}/histories.svg
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
mbopt_script_test(cli_run_options_everywhere cli_run_options.sh run-options)
mbopt_script_test(cli_optimize_interrupted cli_interrupt.sh interrupted)

# parameters set on the command line and from an optimisation's results
mbopt_cli_test(simulate_set 0 "status +completed" 0
  simulate tests/models/ok/controller_planar.json --set Kp=80 --set U=25 --t-end 0.2)
mbopt_cli_test(simulate_set_unknown 2 "--set: the spec has no parameter \"Kq\"" 1
  simulate tests/models/ok/controller_planar.json --set Kq=1)
mbopt_cli_test(simulate_set_not_number 2 "--set: '1x' is not a number" 1
  simulate tests/models/ok/controller_planar.json --set Kp=1x)
mbopt_cli_test(simulate_set_no_equals 2 "--set: expected NAME=VALUE" 1
  simulate tests/models/ok/controller_planar.json --set Kp)
mbopt_cli_test(simulate_parameters_comparison 0 "status +completed" 0
  simulate problems/fivebar_springs.json --parameters results/optimization/fivebar_springs/comparison.json)
mbopt_cli_test(simulate_parameters_not_summary 3 "is neither an optimisation's summary.json" 1
  simulate problems/fivebar_springs.json --parameters problems/fivebar.json)

# bodies whose joints fix the same vectors twice (an XY table, a collar on a spinning pillar):
# the implied rigidity constraints are not repeated, so the assembly sees no redundancy
mbopt_cli_test(simulate_xy_table 0 "5 DOF" 0 simulate problems/control/pendulum_pid.json --t-end 0.01)
mbopt_cli_test(simulate_collar_on_pillar 0 "2 DOF.*status +completed" 0
  simulate tests/models/ok/collar_on_pillar.json)

# gradients of the control problems against finite differences (1e-4 relative; shortened runs)
mbopt_cli_test(check_pendulum_pid 0 "passed" 0
  check problems/control/pendulum_pid.json --method forward --t-end 1 --tolerance 1e-4)
# with joint friction over 1.5 s, stick-slip moves with Kp: its entry fails at the default step
# and at a tenth of it, and at a hundredth comes within that step's noise alone; the table and
# the last line say so. The tolerance is 1e-7: whether that difference passes the default 1e-5
# depends on the rounding the stick-slip carries, which differs between machines (5.3e-6 relative
# on an AMD EPYC, above 1e-5 on an Intel Xeon); 1e-7 fails it on any, well inside the noise there
# (a fifth of it)
mbopt_cli_test(check_noise_limited_entry 1
  "Kp .*\\(at 1/100 of the step [0-9.]+, within its noise\\)  FAIL.*failed entr(y meets|ies meet) the differences at a smaller step within their noise there.*--fd-step 1e-05 differences all entries at that step" 0
  check problems/control/pendulum_pid_friction.json --t-end 1.5 --tolerance 1e-7)
# the same with Ki at zero, whose differences take their step from --fd-abs: the hint scales that
# step too
mbopt_cli_test(check_noise_limited_entry_zero_parameter 1
  "Kp .*within its noise\\)  FAIL.*--fd-step 1e-05 --fd-abs 1e-07 differences all entries at that step" 0
  check problems/control/pendulum_pid_friction.json --t-end 1.5 --tolerance 1e-7 --set Ki=0)
# Bricard's mechanism has a redundant constraint: gradients with respect to a link mass and the
# length of the two links along x, by both methods
mbopt_check_both(bricard tests/models/iftomm/a04_bricard.json --t-end 2)

# functionals of joint reactions, which read the multipliers: both methods against differences
mbopt_check_both(reactions_planar tests/models/ok/reactions_planar.json --tolerance 1e-4)
# (the spatial one over its first 0.5 s: its 2 s took over four minutes under the sanitizers)
mbopt_check_both(reactions_spatial tests/models/ok/reactions_spatial.json --t-end 0.5)

# joint friction, whose force reads the multipliers inside the step: both methods against
# differences, on planar (revolute and prismatic) and spatial (revolute with thrust, prismatic;
# cylindrical; spherical) joints
mbopt_check_both(friction_planar tests/models/ok/friction_planar.json)
mbopt_check_both(friction_spatial tests/models/ok/friction_spatial.json)
mbopt_check_both(friction_sleeve tests/models/ok/friction_sleeve.json)
mbopt_check_both(friction_ball tests/models/ok/friction_ball.json)
mbopt_cli_test(simulate_bricard_redundant 0 "redundant    1 of the constraints at t = 0 .dependent: joint j1;[^)]*joint j6" 0
  simulate tests/models/iftomm/a04_bricard.json --t-end 0.1)
mbopt_cli_test(check_slider_crank_codesign 0 "passed" 0
  check problems/control/slider_crank_codesign.json --method adjoint --t-end 0.5 --tolerance 1e-4)
mbopt_cli_test(check_governor_design 0 "passed" 0
  check problems/control/governor_design.json --method adjoint --t-end 0.2 --tolerance 1e-4)
mbopt_cli_test(simulate_welded_chassis 0 "1 DOF.*status +completed" 0
  simulate tests/models/ok/welded_chassis_rack.json)
mbopt_cli_test(simulate_buggy 0 "14 DOF.*status +completed" 0
  simulate problems/vehicle/buggy.json --t-end 0.01)
mbopt_cli_test(simulate_step_descent 0 "14 DOF.*status +completed" 0
  simulate problems/vehicle/step_descent.json --t-end 0.02)
mbopt_cli_test(simulate_double_lane_change 0 "14 DOF.*status +completed" 0
  simulate problems/vehicle/double_lane_change.json --t-end 0.1)
# the lane change's gradient against finite differences over its first 2 s (the steering starts
# at 1.5 s), both methods
mbopt_cli_test(check_double_lane_change_forward 0 "passed" 0
  check problems/vehicle/double_lane_change.json --method forward --t-end 2 --tolerance 1e-4)
mbopt_cli_test(check_double_lane_change_adjoint 0 "passed" 0
  check problems/vehicle/double_lane_change.json --method adjoint --t-end 2 --tolerance 1e-4)

# the static equilibrium of the initial positions ("initial": {"equilibrium": true})
mbopt_cli_test(simulate_equilibrium 0
  "initial +static equilibrium: [0-9]+ Newton iterations?, unbalanced force [0-9.e+-]+ N\n.*functionals +height = 0\\.57339575[0-9]* .*status +completed" 0
  simulate tests/models/ok/quarter_car.json)
mbopt_cli_test(simulate_equilibrium_json 0 "\"equilibrium_iterations\":[0-9]+,\"equilibrium_residual\":" 0
  simulate tests/models/ok/quarter_car.json --t-end 0.01 --json)
# every parameter of the quarter-car but the dampings moves its equilibrium
mbopt_cli_test(check_equilibrium 0 "0 failed: passed" 0 check tests/models/ok/quarter_car.json)
mbopt_cli_test(check_equilibrium_forward 0 "0 failed: passed" 0
  check tests/models/ok/quarter_car.json --method forward)
mbopt_cli_test(equilibrium_without_support 3
  "static equilibrium not found: the forces on body chassis do not balance" 1
  simulate tests/models/ok/quarter_car.json --set k_t=0)
mbopt_cli_test(equilibrium_without_support_joint 3
  "static equilibrium not found: the forces on body chassis do not balance" 1
  simulate tests/models/ok/quarter_car.json --set k_t=0 --formulation joint)
mbopt_cli_test(simulate_equilibrium_option 0 "initial +static equilibrium: [0-9]+ Newton iterations?.*status +completed" 0
  simulate tests/models/ok/tyre_wheel.json --equilibrium --t-end 0.01)
# a parameter that pushes along a motion nothing resists: the equilibrium has no derivative
mbopt_cli_test(gradient_equilibrium_unresisted 3
  "initial: parameter \"F\" pushes the static equilibrium along a motion that nothing resists" 1
  gradient tests/models/ok/free_slider.json)

# joint coordinates: the five-bar's summary and objectives (published psi: 0.726877, 7.34229,
# 304.921), the same in JSON; what they do not do yet is refused by name
mbopt_cli_test(simulate_joint_fivebar 0
  "4 joint coordinates .RTdyn0., 2 constraints, 2 DOF.*dense linear solver.*psi1 = 0\\.72687[0-9]* psi2 = 7\\.3422[0-9]* psi3 = 304\\.92[0-9]*.*completed" 0
  simulate problems/fivebar.json --formulation joint)
mbopt_cli_test(simulate_joint_json 0 "\"formulation\":\"joint\",\"coordinates\":30,\"constraints\":16" 0
  simulate problems/vehicle/step_descent.json --formulation joint --t-end 0.05 --json)
# gradients in joint coordinates: the forward method against differences, planar (the five-bar),
# with Euler parameters and controllers (the pendulum on its table), with cut spatial joints (the
# governor), the buggy's lane change (a free chassis, tyres); the discrete adjoint likewise
mbopt_cli_test(check_joint_fivebar 0 "method +forward \\(requested\\).*0 failed: passed" 0
  check problems/fivebar.json --formulation joint --method forward)
# its rod's angle is light: the projections' penalty is scaled per coordinate, or the differences
# drown in rounding
mbopt_cli_test(check_joint_slider_crank 0 "0 failed: passed" 0
  check problems/slider_crank.json --formulation joint --tolerance 1e-4)
mbopt_cli_test(check_joint_pendulum 0 "0 failed: passed" 0
  check problems/control/pendulum_pid.json --formulation joint)
mbopt_cli_test(check_joint_governor 0 "0 failed: passed" 0
  check problems/control/governor_design.json --formulation joint --t-end 0.5)
mbopt_cli_test(check_joint_double_lane_change 0 "0 failed: passed" 0
  check problems/vehicle/double_lane_change.json --formulation joint --method forward --t-end 2
  --tolerance 1e-4)
mbopt_cli_test(check_joint_fivebar_adjoint 0 "method +adjoint \\(requested\\).*0 failed: passed" 0
  check problems/fivebar.json --formulation joint --method adjoint)
mbopt_cli_test(check_joint_governor_adjoint 0 "0 failed: passed" 0
  check problems/control/governor_design.json --formulation joint --method adjoint --t-end 0.5)
mbopt_cli_test(simulate_joint_controllers 0 "12 joint coordinates .RTdyn0., 1 constraints, 2 controllers with 6 state coordinates, 5 DOF.*cost = 256\\.97[0-9]*.*completed" 0
  simulate problems/control/pendulum_pid.json --formulation joint)
# reaction outputs in joint coordinates (the tree joints' multipliers recovered from the leaves);
# the gradients of those of the tree's joints are refused, naming the functional, the output and
# the joint
# stiff gains: the joint Newton matrix holds the controllers' couplings, so every step converges
# on its own (without them every step needed sub-steps)
mbopt_cli_test(simulate_joint_controllers_stiff 0 "\"substepped_steps\":0,.*\"status\":\"completed\"" 0
  simulate problems/control/pendulum_pid.json --formulation joint --set Kp=750000 --set Kd=10000
  --json)
mbopt_cli_test(simulate_joint_reactions 0 "joint coordinates .RTdyn0..*reactions = 228\\.7[0-9]*.*completed" 0
  simulate tests/models/ok/reactions_spatial.json --formulation joint)
# functionals of reactions in joint coordinates: the tree joints' multipliers recovered body by
# body (and the cut joints' own), both methods against differences
mbopt_check_both(joint_reactions_planar tests/models/ok/reactions_planar.json --formulation joint
  --tolerance 1e-4)
mbopt_check_both(joint_reactions_spatial tests/models/ok/reactions_spatial.json --formulation joint
  --t-end 0.5)
# with joint friction, whose forces read the cut joints' multipliers: the tree joints' reactions
# (the mount's carries the socket's friction torque) through the friction's stiffness and its
# coupling to those multipliers, both methods against differences (at 1e-4: the differences of the
# viscous coefficient cv move by 2e-5 of the mount load's entry with the rounding of the motion,
# whose stick-slip moves with it, while the analytic entry keeps its nine digits)
mbopt_check_both(joint_friction_tree_reactions tests/models/ok/friction_ball_mount.json
  --formulation joint --tolerance 1e-4)
# joint friction in joint coordinates: its joints are cut, their multipliers the reactions its
# law reads; the natural formulation has psi = 82.3046 (within 1e-3 of each other). Gradients by
# both methods against differences, on the planar, spatial and spherical joints' friction and the
# cylindrical one's (whose transition velocity's differences are noisy below 1e-2 of it, in both
# formulations: larger steps, 1e-4)
mbopt_cli_test(simulate_joint_friction 0 "17 joint coordinates.*psi = 82\\.3[01][0-9]*.*completed" 0
  simulate problems/control/governor_design_friction.json --formulation joint)
mbopt_check_both(joint_friction_spatial tests/models/ok/friction_spatial.json --formulation joint)
# (the planar one's functional "loads" reads the reaction of its rail, a joint with friction, cut:
# its multipliers are the formulation's own)
mbopt_check_both(joint_friction_planar tests/models/ok/friction_planar.json --formulation joint)
mbopt_check_both(joint_friction_ball tests/models/ok/friction_ball.json --formulation joint)
mbopt_check_both(joint_friction_sleeve tests/models/ok/friction_sleeve.json --formulation joint
  --fd-step 1e-2 --tolerance 1e-4)
mbopt_cli_test(bad_formulation 2 "--formulation: expected natural or joint" 1
  simulate problems/fivebar.json --formulation cartesian)
# a gradient-free optimisation needs simulations alone: it runs in joint coordinates
mbopt_cli_test(optimize_joint_gradient_free 0 "maxeval = 3 evaluations spent" 0
  optimize problems/vehicle/step_descent.json --formulation joint --t-end 1 --algorithm bobyqa
  --maxeval 3 --out ${PROJECT_BINARY_DIR}/optimize-joint-bobyqa)
# bench in joint coordinates: the simulation and central differences, the sensitivities said
# to be missing
mbopt_cli_test(bench_joint 0 "4 joint coordinates .RTdyn0.*simulation .*forward gradient .*adjoint gradient .*central differences" 0
  bench problems/fivebar.json --formulation joint --repeat 1 --t-end 0.5)
