/* Tests of the JSON model loader (problems/model_json.c): every file of tests/models/bad/ fails
   with a one-line message naming the JSON path and the reason; valid models fill the description
   as documented, including "$param" bindings, vector parameters ("$u[i]" and whole "$u" lists)
   and B-splines; every number field rejects a string and infinity, and every object rejects an
   unknown key. Run from the repository root. */
#include <cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/desc.h"

static int npass, nfail;

/* records one check; prints the failing ones with their context */
static int check(int ok, const char* what, const char* detail, int line) {
  if (ok) {
    npass++;
  } else {
    nfail++;
    printf("FAIL (line %d): %s%s%s\n", line, what, detail ? ": " : "", detail ? detail : "");
  }
  return ok;
}
#define CHECK(cond) check((cond) != 0, #cond, NULL, __LINE__)
#define CHECK_MSG(cond, msg) check((cond) != 0, #cond, (msg), __LINE__)
#define CHECK_NEAR(a, b) check(near((a), (b)), #a " == " #b, NULL, __LINE__)

static int near(double a, double b) {
  return fabs(a - b) <= 1e-12 * (1 + fabs(b));
}

/* ---------------------------------------------------------------------------------------------
   malformed and non-physical models: file, status, JSON path (or position) and reason */

static void expect_failure(const char* text, const char* source, const char* path,
                           const char* reason);

static const struct {
  const char* file;
  mb_status status;
  const char* where;
  const char* reason;
} bad_models[] = {
    {"syntax_missing_comma.json", MB_ERR_JSON, "line 4, column 20", "syntax error near '\"mass\""},
    {"syntax_empty.json", MB_ERR_JSON, "line 1, column 1", "syntax error near end of input"},
    {"top_level_array.json", MB_ERR_MODEL, "top level", "expected an object, got array"},
    {"dimension_missing.json", MB_ERR_MODEL, "dimension", "missing"},
    {"dimension_bad.json", MB_ERR_MODEL, "dimension", "must be 2 or 3 (got 4)"},
    {"gravity_length.json", MB_ERR_MODEL, "gravity", "expected 2 components, got 3"},
    {"bodies_empty.json", MB_ERR_MODEL, "bodies", "at least one body"},
    {"key_unknown_top.json", MB_ERR_MODEL, "bodyes", "unknown key"},
    {"param_unknown.json", MB_ERR_MODEL, "bodies[0].com[0]", "unknown parameter \"x_G\""},
    {"param_not_number.json", MB_ERR_MODEL, "parameters.k",
     "expected a number, an array of numbers or {\"repeat\": number, \"count\": integer}, got "
     "string \"100\""},
    {"param_name_chars.json", MB_ERR_MODEL, "parameters.spring length",
     "only letters, digits and '_'"},
    {"mass_string.json", MB_ERR_MODEL, "bodies[0].mass",
     "expression \"1 kg\": at column 3: unexpected 'k' after a complete expression"},
    {"mass_negative.json", MB_ERR_MODEL, "bodies[1].mass", "must be > 0 (got -1)"},
    {"mass_zero.json", MB_ERR_MODEL, "bodies[0].mass", "must be > 0 (got 0)"},
    {"mass_missing.json", MB_ERR_MODEL, "bodies[0].mass", "missing"},
    {"mass_infinite.json", MB_ERR_MODEL, "bodies[0].mass", "not a finite number"},
    {"inertia_negative_planar.json", MB_ERR_MODEL, "bodies[0].inertia", "must be >= 0"},
    {"inertia_not_positive_definite.json", MB_ERR_MODEL, "bodies[0].inertia",
     "not positive definite"},
    {"inertia_triangle.json", MB_ERR_MODEL, "bodies[0].inertia",
     "violates the triangle inequality"},
    {"inertia_asymmetric.json", MB_ERR_MODEL, "bodies[0].inertia[1][0]", "not symmetric"},
    {"body_duplicate.json", MB_ERR_MODEL, "bodies[1].name", "duplicate body name \"bar\""},
    {"body_named_ground.json", MB_ERR_MODEL, "bodies[0].name", "reserved"},
    {"name_too_long.json", MB_ERR_MODEL, "bodies[0].name", "longer than 63 characters"},
    {"key_unknown.json", MB_ERR_MODEL, "bodies[0].masss", "unknown key"},
    {"key_duplicate.json", MB_ERR_MODEL, "bodies[0].markers.O", "duplicate key"},
    {"vector_length.json", MB_ERR_MODEL, "bodies[0].com", "expected 2 components, got 3"},
    {"angle_in_spatial.json", MB_ERR_MODEL, "bodies[0].angle", "only in planar models"},
    {"ref_not_perpendicular.json", MB_ERR_MODEL, "bodies[0].markers.O.ref", "not perpendicular"},
    {"ref_without_axis.json", MB_ERR_MODEL, "bodies[0].markers.P.ref", "needs \"axis\""},
    {"axis_zero.json", MB_ERR_MODEL, "ground.markers.O.axis", "must be non-zero"},
    {"joint_type_unknown.json", MB_ERR_MODEL, "joints[0].type", "unknown joint type \"hinge\""},
    {"joint_type_number.json", MB_ERR_MODEL, "joints[0].type", "expected a string, got number"},
    {"marker_unknown.json", MB_ERR_MODEL, "joints[0].marker2", "unknown marker \"Q\""},
    {"body_unknown.json", MB_ERR_MODEL, "joints[0].marker2", "unknown body \"rod\""},
    {"joint_same_body.json", MB_ERR_MODEL, "joints[0].marker2", "same body"},
    {"joint_spherical_planar.json", MB_ERR_MODEL, "joints[0].type",
     "not available in planar models"},
    {"revolute_no_axis.json", MB_ERR_MODEL, "joints[0].marker2", "has no \"axis\""},
    {"prismatic_no_axis_planar.json", MB_ERR_MODEL, "joints[0].marker1", "has no \"axis\""},
    {"joint_duplicate.json", MB_ERR_MODEL, "joints[1].name", "duplicate joint name"},
    {"table_not_increasing.json", MB_ERR_MODEL, "forces[0].value[1].table.t[2]",
     "strictly increasing"},
    {"table_length_mismatch.json", MB_ERR_MODEL, "forces[0].value[0].table.values",
     "expected 3 values"},
    {"spring_no_natural_length.json", MB_ERR_MODEL, "forces[0].natural_length", "missing"},
    {"spring_stiffness_negative.json", MB_ERR_MODEL, "forces[0].stiffness", "must be >= 0"},
    {"force_on_ground.json", MB_ERR_MODEL, "forces[0].marker", "not the ground"},
    {"torque_planar_array.json", MB_ERR_MODEL, "forces[0].value", "planar torque is one function"},
    {"driver_coordinate.json", MB_ERR_MODEL, "drivers[0].coordinate",
     "has no translation coordinate"},
    {"harmonic_missing_omega.json", MB_ERR_MODEL, "drivers[0].function.harmonic.omega", "missing"},
    {"driver_twice.json", MB_ERR_MODEL, "drivers[1].joint", "already driven"},
    {"function_two_kinds.json", MB_ERR_MODEL, "drivers[0].function", "exactly one of"},
    {"initial_body_spatial.json", MB_ERR_MODEL, "initial[0].body", "only in planar models"},
    {"initial_two_kinds.json", MB_ERR_MODEL, "initial[0]", "exactly one of"},
    {"initial_nothing.json", MB_ERR_MODEL, "initial[0]", "prescribes nothing"},
    {"initial_coordinates_nothing.json", MB_ERR_MODEL, "initial.coordinates[0]",
     "prescribes nothing"},
    {"initial_number.json", MB_ERR_MODEL, "initial",
     "expected an array of coordinates or an object"},
    {"initial_object_key.json", MB_ERR_MODEL, "initial.coordinate", "unknown key"},
    {"equilibrium_not_bool.json", MB_ERR_MODEL, "initial.equilibrium",
     "expected true or false, got number"},
    {"output_type_unknown.json", MB_ERR_MODEL, "outputs[0].type", "unknown output type \"speed\""},
    {"sensitivity_unknown.json", MB_ERR_MODEL, "sensitivity",
     "expected \"auto\", \"forward\" or \"adjoint\""},
    {"output_name_chars.json", MB_ERR_MODEL, "outputs[0].name", "only letters, digits and '_'"},
    {"component_planar_z.json", MB_ERR_MODEL, "outputs[0].component", "unknown component \"z\""},
    {"spring_output_not_spring.json", MB_ERR_MODEL, "outputs[0].force", "not a spring"},
    {"cylindrical_output_coordinate.json", MB_ERR_MODEL, "outputs[0].coordinate", "missing"},
    {"output_on_ground.json", MB_ERR_MODEL, "outputs[0].body", "not the ground"},
    {"functional_no_terms.json", MB_ERR_MODEL, "functionals[0]", "needs at least one term"},
    {"functional_shape_unknown.json", MB_ERR_MODEL, "functionals[0].integral[1].shape",
     "unknown shape \"abs\""},
    {"functional_duplicate.json", MB_ERR_MODEL, "functionals[1].name",
     "duplicate functional name \"psi\""},
    {"functional_epsilon_zero.json", MB_ERR_MODEL, "functionals[0].integral[0].epsilon",
     "must be > 0 (got 0)"},
    {"functional_output_missing.json", MB_ERR_MODEL, "functionals[0].final[0].output", "missing"},
    {"functional_value_reference.json", MB_ERR_MODEL, "functionals[0].final[0].reference",
     "has no reference"},
    {"functional_reference_table.json", MB_ERR_MODEL,
     "functionals[0].integral[0].reference.table.values", "expected 2 values"},
    {"step_negative.json", MB_ERR_MODEL, "simulation.step", "must be > 0 (got -0.001)"},
    {"step_exceeds_t_end.json", MB_ERR_MODEL, "simulation.step", "must be <= t_end"},
    {"tangent_unknown.json", MB_ERR_MODEL, "simulation.tangent",
     "must be \"exact\" or \"approximate\""},
    {"max_newton_fraction.json", MB_ERR_MODEL, "simulation.max_newton", "must be an integer"},
    {"max_substeps_zero.json", MB_ERR_MODEL, "simulation.max_substeps",
     "must be between 1 (no retry) and 1024 (got 0)"},
    {"threads_three.json", MB_ERR_MODEL, "simulation.threads",
     "must be 0 (chosen), 1 or 2 (got 3)"},
    {"tangent_refresh_unknown.json", MB_ERR_MODEL, "simulation.tangent_refresh",
     "must be \"step\" or \"iteration\" (got \"sometimes\")"},
    {"linear_solver_unknown.json", MB_ERR_MODEL, "simulation.linear_solver",
     "must be \"auto\", \"dense\", \"sparse\" or \"klu\" (got \"umfpack\")"},
    {"bspline_three_coefficients.json", MB_ERR_MODEL, "forces[0].value.bspline.coefficients",
     "needs at least 4 values (got 3)"},
    {"bspline_t1_not_after_t0.json", MB_ERR_MODEL, "forces[0].value.bspline.t1",
     "must be greater than t0 (got 2 <= 2)"},
    {"bspline_reference_t0_missing.json", MB_ERR_MODEL,
     "functionals[0].integral[0].reference.bspline.t0", "missing"},
    {"vector_param_as_scalar.json", MB_ERR_MODEL, "forces[0].value[1]",
     "\"$u\" is a vector parameter (3 values); use \"$u[i]\""},
    {"vector_index_out_of_range.json", MB_ERR_MODEL, "forces[0].value[0].polynomial[1]",
     "unknown parameter \"u[7]\" (the vector \"u\" has 3 values: \"$u[0]\" to \"$u[2]\")"},
    {"vector_element_of_scalar.json", MB_ERR_MODEL, "forces[0].value",
     "unknown parameter \"k[0]\" (\"k\" is a scalar parameter: write \"$k\")"},
    {"vector_table_length.json", MB_ERR_MODEL, "forces[0].value[0].table.values",
     "expected 3 values (one per time in \"t\"), got 5 from \"$u\""},
    {"vector_too_short_bspline.json", MB_ERR_MODEL, "forces[0].value.bspline.coefficients",
     "needs at least 4 values (got 3 from \"$u\")"},
    {"vector_repeat_count_zero.json", MB_ERR_MODEL, "parameters.u.count", "must be >= 1 (got 0)"},
    {"vector_empty.json", MB_ERR_MODEL, "parameters.u",
     "a vector parameter needs at least 1 value"},
    {"scalar_param_as_list.json", MB_ERR_MODEL, "forces[0].value.bspline.coefficients",
     "\"$k\" is a scalar parameter; expected an array or a vector parameter \"$name\""},
    {"controller_type_missing.json", MB_ERR_MODEL, "controllers[0].type", "missing"},
    {"controller_type_unknown.json", MB_ERR_MODEL, "controllers[0].type",
     "unknown controller type \"pd\" (the only type is \"pid\")"},
    {"controller_error_empty.json", MB_ERR_MODEL, "controllers[0].error",
     "needs at least one term"},
    {"controller_saturation_zero.json", MB_ERR_MODEL, "controllers[0].saturation",
     "must be > 0 (got 0)"},
    {"controller_force_on_ground.json", MB_ERR_MODEL, "controllers[0].actuator.marker",
     "must be on a moving body, not the ground"},
    {"controller_torque_on_ground.json", MB_ERR_MODEL, "controllers[0].actuator.body",
     "must be a moving body, not the ground"},
    {"controller_torque_axis_planar.json", MB_ERR_MODEL, "controllers[0].actuator.axis",
     "only in spatial models (a planar torque acts about z)"},
    {"controller_direction_zero.json", MB_ERR_MODEL, "controllers[0].actuator.direction",
     "must be non-zero"},
    {"controller_duplicate.json", MB_ERR_MODEL, "controllers[1].name",
     "duplicate controller name \"hold\""},
    {"control_output_unknown_controller.json", MB_ERR_MODEL, "outputs[1].controller",
     "unknown controller \"hodl\" (not in \"controllers\")"},
    {"tyre_planar.json", MB_ERR_MODEL, "forces[0].type",
     "a tyre needs a spatial model (dimension 3)"},
    {"tyre_radius_zero.json", MB_ERR_MODEL, "forces[0].radius", "must be > 0 (got 0)"},
    {"tyre_radius_missing.json", MB_ERR_MODEL, "forces[0].radius", "missing"},
    {"tyre_stiffness_zero.json", MB_ERR_MODEL, "forces[0].stiffness", "must be > 0 (got 0)"},
    {"tyre_damping_negative.json", MB_ERR_MODEL, "forces[0].damping", "must be >= 0 (got -1)"},
    {"tyre_wheel_ground.json", MB_ERR_MODEL, "forces[0].wheel",
     "must be on a moving body, not the ground"},
    {"tyre_wheel_no_axis.json", MB_ERR_MODEL, "forces[0].wheel",
     "marker has no \"axis\", which a tyre needs as its spin axis"},
    {"tyre_step_width_zero.json", MB_ERR_MODEL, "forces[0].road.step.width", "must be > 0 (got 0)"},
    {"tyre_step_height_missing.json", MB_ERR_MODEL, "forces[0].road.step.height", "missing"},
    {"tyre_road_unknown_key.json", MB_ERR_MODEL, "forces[0].road.bump", "unknown key"},
    {"tyre_slip_friction_zero.json", MB_ERR_MODEL, "forces[0].slip.friction",
     "must be > 0 (got 0)"},
    {"tyre_slip_lateral_missing.json", MB_ERR_MODEL, "forces[0].slip.lateral", "missing"},
    {"tyre_unknown_key.json", MB_ERR_MODEL, "forces[0].friction", "unknown key"},
    {"reaction_frame_unknown.json", MB_ERR_MODEL, "outputs[0].frame", "unknown frame \"body\""},
    {"reaction_torque_planar_x.json", MB_ERR_MODEL, "outputs[0].component",
     "planar models have only \"z\""},
    {"reaction_joint_unknown.json", MB_ERR_MODEL, "outputs[0].joint", "unknown joint \"jX\""},
    {"friction_radius_missing.json", MB_ERR_MODEL, "joints[0].friction.radius", "missing"},
    {"friction_transition_zero.json", MB_ERR_MODEL, "joints[0].friction.transition_velocity",
     "must be > 0"},
    {"friction_width_on_revolute.json", MB_ERR_MODEL, "joints[0].friction.width",
     "not used by the friction of a planar revolute joint"},
    {"friction_output_without_friction.json", MB_ERR_MODEL, "outputs[0].joint",
     "has no \"friction\""},
    {"friction_length_on_spherical.json", MB_ERR_MODEL, "joints[0].friction.length",
     "not used by the friction of a spatial spherical joint"},
    {"friction_on_universal.json", MB_ERR_MODEL, "joints[0].friction",
     "friction is available on revolute, prismatic, cylindrical and spherical joints (not on "
     "universal)"},
};
#define NBAD ((int)(sizeof bad_models / sizeof bad_models[0]))

/* a failed load: the status, one line "<source>: <where>: <reason>...", and an empty desc */
static void check_failure(const char* source, mb_status got, const mb_desc* d, const mb_error* err,
                          mb_status status, const char* where, const char* reason) {
  static const mb_desc empty;
  char head[512], mid[512];
  snprintf(head, sizeof head, "%s: ", source);
  snprintf(mid, sizeof mid, ": %s: ", where);
  check(got == status, "status", err->message, __LINE__);
  check(err->status == got, "err->status matches the return value", err->message, __LINE__);
  check(strchr(err->message, '\n') == NULL, "message is one line", err->message, __LINE__);
  check(strncmp(err->message, head, strlen(head)) == 0, "message starts with the source",
        err->message, __LINE__);
  check(strstr(err->message, mid) != NULL, where, err->message, __LINE__);
  check(strstr(err->message, reason) != NULL, reason, err->message, __LINE__);
  check(memcmp(d, &empty, sizeof empty) == 0, "desc left empty", source, __LINE__);
}

static void test_bad_models(void) {
  char path[512];
  for (int i = 0; i < NBAD; i++) {
    mb_desc d;
    mb_error err;
    snprintf(path, sizeof path, "tests/models/bad/%s", bad_models[i].file);
    mb_status s = mb_desc_load_json(path, &d, &err);
    check_failure(path, s, &d, &err, bad_models[i].status, bad_models[i].where,
                  bad_models[i].reason);
    mb_desc_free(&d);
  }

  /* every file of the folder has an expectation here, so none is silently skipped */
  DIR* dir = opendir("tests/models/bad");
  int nfile = 0;
  if (!CHECK_MSG(dir != NULL, "tests/models/bad (run from the repository root)")) return;
  for (struct dirent* e; (e = readdir(dir)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
    int known = 0;
    for (int i = 0; i < NBAD; i++) known |= strcmp(bad_models[i].file, e->d_name) == 0;
    check(known, "bad model listed in the test table", e->d_name, __LINE__);
    nfile++;
  }
  closedir(dir);
  CHECK(nfile == NBAD);
  CHECK(nfile >= 24);
}

/* ---------------------------------------------------------------------------------------------
   valid models */

static const char* const planar_model =
    "{\n"
    "  \"name\": \"test planar\",\n"
    "  \"dimension\": 2,\n"
    "  \"gravity\": [0, \"$g\"],\n"
    "  \"parameters\": {\"g\": -9.81, \"L\": 1.5, \"k\": 100, \"m\": 2, \"w\": 6.28},\n"
    "  \"ground\": {\"markers\": {\"A\": {\"point\": [0, 0]}, \"B\": {\"point\": [1, 0], \"axis\": "
    "[1, 0]}}},\n"
    "  \"bodies\": [\n"
    "    {\"name\": \"crank\", \"mass\": \"$m\", \"com\": [\"$L\", 0], \"inertia\": 0.25, "
    "\"position\": [0.5, 0.25],\n"
    "     \"angle\": -1.5, \"markers\": {\"A\": {\"point\": [0, 0]}, \"P\": {\"point\": [\"$L\", "
    "0], \"axis\": [1, 0]}}},\n"
    "    {\"name\": \"slider\", \"mass\": 1, \"inertia\": 0, \"position\": [1, 0],\n"
    "     \"markers\": {\"S\": {\"point\": [0, 0], \"axis\": [1, 0]}, \"T\": {\"point\": [0.5, "
    "0]}}},\n"
    "    {\"name\": \"plate\", \"mass\": 0.5, \"inertia\": 0.01, \"markers\": {\"C\": {\"point\": "
    "[0, 0]}}}\n"
    "  ],\n"
    "  \"joints\": [\n"
    "    {\"name\": \"jA\", \"type\": \"revolute\", \"marker1\": \"ground.A\", \"marker2\": "
    "\"crank.A\"},\n"
    "    {\"name\": \"jS\", \"type\": \"prismatic\", \"marker1\": \"ground.B\", \"marker2\": "
    "\"slider.S\"},\n"
    "    {\"name\": \"jF\", \"type\": \"fixed\", \"marker1\": \"slider.T\", \"marker2\": "
    "\"plate.C\"}\n"
    "  ],\n"
    "  \"forces\": [\n"
    "    {\"name\": \"s1\", \"type\": \"spring\", \"marker1\": \"ground.B\", \"marker2\": "
    "\"crank.P\",\n"
    "     \"stiffness\": \"$k\", \"damping\": 0.5, \"natural_length\": 2, \"force\": 1},\n"
    "    {\"name\": \"push\", \"type\": \"force\", \"marker\": \"crank.P\",\n"
    "     \"value\": [0, {\"table\": {\"t\": [0, 1, 2], \"values\": [0, \"$k\", 0]}}]},\n"
    "    {\"name\": \"motor\", \"type\": \"torque\", \"body\": \"crank\",\n"
    "     \"value\": {\"harmonic\": {\"offset\": 0.5, \"amplitude\": 1, \"omega\": \"$w\", "
    "\"phase\": 0.25}}}\n"
    "  ],\n"
    "  \"drivers\": [{\"name\": \"drive\", \"joint\": \"jS\", \"function\": {\"polynomial\": [1, "
    "0.5, \"$L\"]}}],\n"
    "  \"initial\": [\n"
    "    {\"body\": \"crank\", \"angle\": -1.5, \"rate\": 0},\n"
    "    {\"joint\": \"jA\", \"angle\": 0.1, \"rate\": 2},\n"
    "    {\"joint\": \"jS\", \"translation\": 0.2},\n"
    "    {\"joint\": \"jA\", \"rate\": 1.0, \"coordinate\": \"angle\"},\n"
    "    {\"marker\": \"crank.P\", \"component\": \"y\", \"value\": -1, \"rate\": 0}\n"
    "  ],\n"
    "  \"outputs\": [\n"
    "    {\"name\": \"x1\", \"type\": \"position\", \"marker\": \"crank.P\", \"component\": "
    "\"x\"},\n"
    "    {\"name\": \"v2\", \"type\": \"velocity\", \"marker\": \"slider.T\"},\n"
    "    {\"name\": \"a2\", \"type\": \"acceleration\", \"marker\": \"ground.B\", \"component\": "
    "\"y\"},\n"
    "    {\"name\": \"w\", \"type\": \"angular_velocity\", \"body\": \"crank\", \"component\": "
    "\"z\"},\n"
    "    {\"name\": \"th\", \"type\": \"angles\", \"body\": \"crank\"},\n"
    "    {\"name\": \"q\", \"type\": \"joint\", \"joint\": \"jA\", \"coordinate\": \"angle\"},\n"
    "    {\"name\": \"qd\", \"type\": \"joint_rate\", \"joint\": \"jS\"},\n"
    "    {\"name\": \"l1\", \"type\": \"spring_length\", \"force\": \"s1\"},\n"
    "    {\"name\": \"f1\", \"type\": \"spring_force\", \"force\": \"s1\"},\n"
    "    {\"name\": \"T\", \"type\": \"kinetic_energy\"}, {\"name\": \"Vg\", \"type\": "
    "\"gravity_energy\"},\n"
    "    {\"name\": \"Ve\", \"type\": \"elastic_energy\"}, {\"name\": \"E\", \"type\": "
    "\"total_energy\"}\n"
    "  ],\n"
    "  \"functionals\": [\n"
    "    {\"name\": \"track\",\n"
    "     \"integral\": [{\"output\": \"x1\", \"weight\": \"$k\",\n"
    "                   \"reference\": {\"table\": {\"t\": [0, 1, 2], \"values\": [0, \"$L\", "
    "0]}}},\n"
    "                  {\"output\": \"v2.y\", \"shape\": \"smooth_abs\", \"epsilon\": 0.001, "
    "\"reference\": 0.5}],\n"
    "     \"final\": [{\"output\": \"E\", \"shape\": \"value\", \"weight\": -2}]},\n"
    "    {\"name\": \"effort\", \"integral\": [{\"output\": \"f1\", \"shape\": "
    "\"squared_error\"}]}\n"
    "  ],\n"
    "  \"simulation\": {\"t_end\": 2, \"step\": 0.01, \"output_interval\": 0.1, \"beta\": 0.3, "
    "\"gamma\": 0.6,\n"
    "                 \"penalty\": 1e8, \"newton_tolerance\": 1e-9, \"constraint_tolerance\": "
    "1e-8,\n"
    "                 \"max_newton\": 30, \"max_substeps\": 4, \"projection_iterations\": 3, "
    "\"projection_tolerance\": "
    "1e-11,\n"
    "                 \"tangent\": \"approximate\", \"assembly_tolerance\": 1e-10, "
    "\"max_assembly\": 40}\n"
    "}\n";

static const char* const spatial_model =
    "{\n"
    "  \"dimension\": 3,\n"
    "  \"gravity\": [0, 0, -9.81],\n"
    "  \"parameters\": {\"Ixy\": 0.01},\n"
    "  \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [0, 0, 1], \"ref\": [1, "
    "0, 0]},\n"
    "                          \"Q\": {\"point\": [2, 0, 0], \"axis\": [1, 0, 0]}}},\n"
    "  \"bodies\": [\n"
    "    {\"name\": \"b1\", \"mass\": 1, \"com\": [0.5, 0, 0], \"inertia\": [0.1, 0.1, 0.05],\n"
    "     \"position\": [0, 0, 0.5], \"orientation\": [0.1, 0.2, 0.3],\n"
    "     \"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [0, 0, 2], \"ref\": [3, 0, 0]},\n"
    "                 \"P\": {\"point\": [1, 0, 0], \"axis\": [0, 1, 0]}}},\n"
    "    {\"name\": \"b2\", \"mass\": 2, \"inertia\": [[0.2, \"$Ixy\", 0], [\"$Ixy\", 0.3, 0.02], "
    "[0, 0.02, 0.4]],\n"
    "     \"markers\": {\"P\": {\"point\": [0, 0, 0], \"axis\": [0, 1, 0]}, \"R\": {\"point\": [1, "
    "0, 0], \"axis\": [1, 0, 0]}}},\n"
    "    {\"name\": \"b3\", \"mass\": 1, \"inertia\": [0.1, 0.1, 0.1],\n"
    "     \"markers\": {\"R\": {\"point\": [0, 0, 0], \"axis\": [1, 0, 0]}, \"S\": {\"point\": "
    "[0.5, 0, 0], \"axis\": [0, 0, 1]}}},\n"
    "    {\"name\": \"b4\", \"mass\": 1, \"inertia\": [0.1, 0.1, 0.1],\n"
    "     \"markers\": {\"S\": {\"point\": [0, 0, 0], \"axis\": [0, 0, 1]}, \"U\": {\"point\": [1, "
    "0, 0], \"axis\": [0, 1, 0]}}},\n"
    "    {\"name\": \"b5\", \"mass\": 1, \"inertia\": [0.1, 0.1, 0.1],\n"
    "     \"markers\": {\"U\": {\"point\": [0, 0, 0], \"axis\": [0, 0, 1]}, \"F\": {\"point\": [1, "
    "0, 0]}}},\n"
    "    {\"name\": \"b6\", \"mass\": 1, \"inertia\": [0.1, 0.1, 0.1],\n"
    "     \"markers\": {\"F\": {\"point\": [0, 0, 0]}, \"Q\": {\"point\": [0, 0, 0], \"axis\": [1, "
    "0, 0]}}}\n"
    "  ],\n"
    "  \"joints\": [\n"
    "    {\"name\": \"rev\", \"type\": \"revolute\", \"marker1\": \"ground.O\", \"marker2\": "
    "\"b1.O\"},\n"
    "    {\"name\": \"sph\", \"type\": \"spherical\", \"marker1\": \"b1.P\", \"marker2\": "
    "\"b2.P\"},\n"
    "    {\"name\": \"cyl\", \"type\": \"cylindrical\", \"marker1\": \"b2.R\", \"marker2\": "
    "\"b3.R\"},\n"
    "    {\"name\": \"pri\", \"type\": \"prismatic\", \"marker1\": \"b3.S\", \"marker2\": "
    "\"b4.S\"},\n"
    "    {\"name\": \"uni\", \"type\": \"universal\", \"marker1\": \"b4.U\", \"marker2\": "
    "\"b5.U\"},\n"
    "    {\"name\": \"fix\", \"type\": \"fixed\", \"marker1\": \"b5.F\", \"marker2\": \"b6.F\"},\n"
    "    {\"name\": \"pla\", \"type\": \"planar\", \"marker1\": \"ground.Q\", \"marker2\": "
    "\"b6.Q\"}\n"
    "  ],\n"
    "  \"forces\": [\n"
    "    {\"name\": \"f\", \"type\": \"force\", \"marker\": \"b2.R\", \"value\": [1, 0, "
    "{\"polynomial\": [0, 1]}]},\n"
    "    {\"name\": \"tq\", \"type\": \"torque\", \"body\": \"b1\",\n"
    "     \"value\": [0, 0, {\"harmonic\": {\"amplitude\": 2, \"omega\": 3}}]}\n"
    "  ],\n"
    "  \"drivers\": [{\"name\": \"d\", \"joint\": \"cyl\", \"coordinate\": \"translation\", "
    "\"function\": 0.5}],\n"
    "  \"initial\": [\n"
    "    {\"joint\": \"cyl\", \"angle\": 0.3, \"coordinate\": \"angle\"},\n"
    "    {\"marker\": \"b1.P\", \"component\": \"z\", \"rate\": 0.1}\n"
    "  ],\n"
    "  \"outputs\": [\n"
    "    {\"name\": \"yaw\", \"type\": \"angles\", \"body\": \"b2\", \"component\": \"yaw\"},\n"
    "    {\"name\": \"roll\", \"type\": \"angles\", \"body\": \"b2\", \"component\": \"roll\"},\n"
    "    {\"name\": \"wx\", \"type\": \"angular_velocity\", \"body\": \"b1\", \"component\": "
    "\"x\"},\n"
    "    {\"name\": \"pz\", \"type\": \"position\", \"marker\": \"b3.S\", \"component\": \"z\"},\n"
    "    {\"name\": \"qc\", \"type\": \"joint\", \"joint\": \"cyl\", \"coordinate\": "
    "\"translation\"}\n"
    "  ]\n"
    "}\n";

/* vector parameters (an array, a repeat) bound whole ("$u") and by element ("$w[1]"), and
   B-splines in a torque, a force, a driver and a functional reference */
static const char* const vector_model =
    "{\n"
    "  \"dimension\": 2,\n"
    "  \"gravity\": [0, \"$g\"],\n"
    "  \"parameters\": {\"g\": -9.81, \"u\": {\"repeat\": 0.25, \"count\": 20}, \"w\": [1, 2.5, "
    "-3], \"k\": 4},\n"
    "  \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0]}, \"P\": {\"point\": [0, -2], "
    "\"axis\": [1, 0]}}},\n"
    "  \"bodies\": [\n"
    "    {\"name\": \"bar\", \"mass\": \"$w[0]\", \"com\": [0.5, 0], \"inertia\": 0.1,\n"
    "     \"markers\": {\"O\": {\"point\": [0, 0]}, \"P\": {\"point\": [1, 0]}}},\n"
    "    {\"name\": \"slider\", \"mass\": 1, \"inertia\": 0, \"position\": [0, -2],\n"
    "     \"markers\": {\"S\": {\"point\": [0, 0], \"axis\": [1, 0]}}}\n"
    "  ],\n"
    "  \"joints\": [\n"
    "    {\"name\": \"jO\", \"type\": \"revolute\", \"marker1\": \"ground.O\", \"marker2\": "
    "\"bar.O\"},\n"
    "    {\"name\": \"jS\", \"type\": \"prismatic\", \"marker1\": \"ground.P\", \"marker2\": "
    "\"slider.S\"}\n"
    "  ],\n"
    "  \"forces\": [\n"
    "    {\"name\": \"motor\", \"type\": \"torque\", \"body\": \"bar\",\n"
    "     \"value\": {\"bspline\": {\"t0\": 0, \"t1\": 5, \"coefficients\": \"$u\"}}},\n"
    "    {\"name\": \"push\", \"type\": \"force\", \"marker\": \"bar.P\",\n"
    "     \"value\": [{\"bspline\": {\"t0\": -1, \"t1\": 1.5, \"coefficients\": [0, \"$w[1]\", "
    "\"$k\", 0.5, 1]}},\n"
    "               {\"table\": {\"t\": [0, 1, 2], \"values\": \"$w\"}}]}\n"
    "  ],\n"
    "  \"drivers\": [{\"name\": \"drive\", \"joint\": \"jS\", \"function\": {\"polynomial\": "
    "\"$w\"}}],\n"
    "  \"outputs\": [{\"name\": \"q\", \"type\": \"joint\", \"joint\": \"jO\"}],\n"
    "  \"functionals\": [{\"name\": \"track\", \"integral\": [{\"output\": \"q\", \"weight\": "
    "\"$w[2]\",\n"
    "    \"reference\": {\"bspline\": {\"t0\": 0, \"t1\": 2, \"coefficients\": \"$u\"}}}]}],\n"
    "  \"simulation\": {\"t_end\": 2, \"step\": 0.01}\n"
    "}\n";

static void test_vector_params(void) {
  mb_desc d;
  mb_error err;
  char name[16];
  mb_status s = mb_desc_parse_json(vector_model, "vector", &d, &err);
  if (!CHECK_MSG(s == MB_OK, err.message)) return;

  /* names and values: "u[0]".."u[19]", then "w[0]".."w[2]", consecutive in file order */
  CHECK(d.nparam == 25);
  if (d.nparam != 25) goto done;
  CHECK(strcmp(d.param_name[0], "g") == 0 && d.param_value[0] == -9.81);
  for (int i = 0; i < 20; i++) {
    snprintf(name, sizeof name, "u[%d]", i);
    CHECK_MSG(strcmp(d.param_name[1 + i], name) == 0, name);
    CHECK(d.param_value[1 + i] == 0.25);
    CHECK(mb_desc_param_index(&d, name) == 1 + i);
  }
  CHECK(strcmp(d.param_name[21], "w[0]") == 0 && strcmp(d.param_name[23], "w[2]") == 0);
  CHECK(d.param_value[21] == 1 && d.param_value[22] == 2.5 && d.param_value[23] == -3);
  CHECK(strcmp(d.param_name[24], "k") == 0 && d.param_value[24] == 4);
  CHECK(mb_desc_param_index(&d, "u[3]") == 4 && mb_desc_param_index(&d, "w[1]") == 22);
  CHECK(mb_desc_param_index(&d, "u") == -1 && mb_desc_param_index(&d, "u[20]") == -1);

  /* element bindings in scalars */
  CHECK(d.gravity[1].param == 0);
  CHECK(d.body[0].mass.param == 21 && d.body[0].mass.value == 1);
  CHECK(d.functional[0].term[0].weight.param == 23 && d.functional[0].term[0].weight.value == -3);

  /* the torque: a B-spline of 20 coefficients bound to u[0]..u[19] on [0, 5] */
  const mb_func_desc* f = &d.force[0].func[0];
  CHECK(f->type == MB_FUNC_BSPLINE && f->ncoef == 20);
  CHECK(f->time != NULL && f->time[0] == 0 && f->time[1] == 5);
  for (int i = 0; i < f->ncoef; i++) CHECK(f->coef[i].param == 1 + i && f->coef[i].value == 0.25);
  CHECK(d.force[0].func[1].type == MB_FUNC_CONSTANT && d.force[0].func[1].time == NULL);

  /* the point force: a B-spline of literals and elements, a table with values "$w" */
  f = &d.force[1].func[0];
  CHECK(f->type == MB_FUNC_BSPLINE && f->ncoef == 5 && f->time[0] == -1 && f->time[1] == 1.5);
  CHECK(f->coef[0].param == -1 && f->coef[0].value == 0);
  CHECK(f->coef[1].param == 22 && f->coef[1].value == 2.5);
  CHECK(f->coef[2].param == 24 && f->coef[2].value == 4);
  CHECK(f->coef[4].param == -1 && f->coef[4].value == 1);
  f = &d.force[1].func[1];
  CHECK(f->type == MB_FUNC_TABLE && f->ncoef == 3 && f->time[2] == 2);
  for (int i = 0; i < 3; i++) CHECK(f->coef[i].param == 21 + i);
  CHECK(f->coef[1].value == 2.5);

  /* the driver: a polynomial with coefficients "$w" */
  f = &d.driver[0].func;
  CHECK(f->type == MB_FUNC_POLYNOMIAL && f->ncoef == 3 && f->time == NULL);
  CHECK(f->coef[0].param == 21 && f->coef[2].param == 23 && f->coef[2].value == -3);

  /* the functional reference: a B-spline on [0, 2] bound to u */
  f = &d.functional[0].term[0].reference;
  CHECK(d.functional[0].term[0].has_reference && f->type == MB_FUNC_BSPLINE && f->ncoef == 20);
  CHECK(f->time[0] == 0 && f->time[1] == 2 && f->coef[19].param == 20);

  /* setting one element reaches every scalar bound to it, and only those */
  mb_desc_set_param(&d, mb_desc_param_index(&d, "u[3]"), 0.75);
  CHECK(d.force[0].func[0].coef[3].value == 0.75 && d.force[0].func[0].coef[4].value == 0.25);
  CHECK(d.functional[0].term[0].reference.coef[3].value == 0.75);
  mb_desc_set_param(&d, mb_desc_param_index(&d, "w[1]"), 7);
  CHECK(d.force[1].func[0].coef[1].value == 7 && d.force[1].func[1].coef[1].value == 7);
  CHECK(d.driver[0].func.coef[1].value == 7 && d.driver[0].func.coef[0].value == 1);

done:
  mb_desc_free(&d);
  CHECK(d.param_name == NULL && d.nparam == 0);
}

static void test_planar(void) {
  mb_desc d;
  mb_error err;
  mb_status s = mb_desc_parse_json(planar_model, "planar", &d, &err);
  if (!CHECK_MSG(s == MB_OK, err.message)) return;
  CHECK(err.status == MB_OK && err.message[0] == '\0');
  CHECK(strcmp(d.name, "test planar") == 0);
  CHECK(d.dim == 2);

  /* parameters and their bindings */
  int g = mb_desc_param_index(&d, "g"), L = mb_desc_param_index(&d, "L"),
      k = mb_desc_param_index(&d, "k");
  int m = mb_desc_param_index(&d, "m"), w = mb_desc_param_index(&d, "w");
  CHECK(d.nparam == 5);
  CHECK(g == 0 && L == 1 && k == 2 && m == 3 && w == 4);
  CHECK(mb_desc_param_index(&d, "nope") == -1);
  CHECK(mb_desc_param_index(NULL, "g") == -1);
  CHECK(strcmp(d.param_name[L], "L") == 0);
  CHECK_NEAR(d.param_value[L], 1.5);
  CHECK(d.gravity[0].value == 0 && d.gravity[0].param == -1);
  CHECK_NEAR(d.gravity[1].value, -9.81);
  CHECK(d.gravity[1].param == g);
  CHECK(d.gravity[2].value == 0 && d.gravity[2].param == -1);

  /* ground markers and bodies */
  CHECK(d.nground_marker == 2);
  CHECK(strcmp(d.ground_marker[1].name, "B") == 0 && d.ground_marker[1].has_axis &&
        !d.ground_marker[0].has_axis);
  CHECK(d.nbody == 3);
  const mb_body_desc* b = &d.body[0];
  CHECK(strcmp(b->name, "crank") == 0);
  CHECK_NEAR(b->mass.value, 2);
  CHECK(b->mass.param == m);
  CHECK_NEAR(b->com[0].value, 1.5);
  CHECK(b->com[0].param == L);
  CHECK(b->com[1].param == -1 && b->com[2].value == 0);
  CHECK_NEAR(b->inertia[2].value, 0.25);
  CHECK(b->inertia[0].value == 0 && b->inertia[1].value == 0 && b->inertia[3].value == 0);
  CHECK_NEAR(b->position[0], 0.5);
  CHECK_NEAR(b->position[1], 0.25);
  CHECK(b->position[2] == 0);
  CHECK_NEAR(b->orientation[0], -1.5);
  CHECK(b->nmarker == 2 && strcmp(b->marker[1].name, "P") == 0);
  CHECK(b->marker[1].point[0].param == L && b->marker[1].has_axis && !b->marker[1].has_ref);
  CHECK_NEAR(b->marker[1].axis[0].value, 1);
  CHECK(d.body[1].inertia[2].value == 0);
  CHECK(d.body[2].com[0].value == 0 && d.body[2].position[0] == 0);

  /* joints */
  CHECK(d.njoint == 3);
  CHECK(d.joint[0].type == MB_JOINT_REVOLUTE && d.joint[0].body[0] == -1 &&
        d.joint[0].marker[0] == 0);
  CHECK(d.joint[0].body[1] == 0 && d.joint[0].marker[1] == 0);
  CHECK(d.joint[1].type == MB_JOINT_PRISMATIC && d.joint[1].body[0] == -1 &&
        d.joint[1].marker[0] == 1);
  CHECK(d.joint[1].body[1] == 1 && d.joint[1].marker[1] == 0);
  CHECK(d.joint[2].type == MB_JOINT_FIXED && d.joint[2].body[0] == 1 && d.joint[2].marker[0] == 1);
  CHECK(d.joint[2].body[1] == 2 && d.joint[2].marker[1] == 0);

  /* forces */
  CHECK(d.nforce == 3);
  const mb_force_desc* f = &d.force[0];
  CHECK(f->type == MB_FORCE_SPRING && f->body[0] == -1 && f->marker[0] == 1 && f->body[1] == 0 &&
        f->marker[1] == 1);
  CHECK_NEAR(f->stiffness.value, 100);
  CHECK(f->stiffness.param == k);
  CHECK_NEAR(f->damping.value, 0.5);
  CHECK_NEAR(f->natural_length.value, 2);
  CHECK_NEAR(f->force.value, 1);
  CHECK(f->func[0].ncoef == 0 && f->func[0].coef == NULL); /* springs have no time functions */
  f = &d.force[1];
  CHECK(f->type == MB_FORCE_POINT && f->body[0] == 0 && f->marker[0] == 1 && f->body[1] == -1);
  CHECK(f->func[0].type == MB_FUNC_CONSTANT && f->func[0].ncoef == 1 &&
        f->func[0].coef[0].value == 0);
  CHECK(f->func[0].time == NULL);
  CHECK(f->func[1].type == MB_FUNC_TABLE && f->func[1].ncoef == 3);
  CHECK(f->func[1].time[0] == 0 && f->func[1].time[2] == 2);
  CHECK(f->func[1].coef[1].param == k);
  CHECK_NEAR(f->func[1].coef[1].value, 100);
  CHECK(f->func[2].type == MB_FUNC_CONSTANT && f->func[2].ncoef == 1 &&
        f->func[2].coef[0].value == 0);
  f = &d.force[2];
  CHECK(f->type == MB_FORCE_TORQUE && f->body[0] == 0 && f->marker[0] == -1);
  CHECK(f->func[0].type == MB_FUNC_HARMONIC && f->func[0].ncoef == 4);
  CHECK_NEAR(f->func[0].coef[0].value, 0.5);
  CHECK_NEAR(f->func[0].coef[1].value, 1);
  CHECK_NEAR(f->func[0].coef[2].value, 6.28);
  CHECK(f->func[0].coef[2].param == w);
  CHECK_NEAR(f->func[0].coef[3].value, 0.25);
  CHECK(f->func[1].type == MB_FUNC_CONSTANT && f->func[1].ncoef == 1);

  /* drivers: the coordinate defaults to the joint's only one */
  CHECK(d.ndriver == 1);
  CHECK(strcmp(d.driver[0].name, "drive") == 0 && d.driver[0].joint == 1);
  CHECK(d.driver[0].coord == MB_COORD_TRANSLATION);
  CHECK(d.driver[0].func.type == MB_FUNC_POLYNOMIAL && d.driver[0].func.ncoef == 3);
  CHECK(d.driver[0].func.coef[2].param == L);

  /* initial conditions */
  CHECK(d.nprescribe == 5);
  const mb_prescribe_desc* p = d.prescribe;
  CHECK(p[0].type == MB_PRESCRIBE_BODY_ANGLE && p[0].body == 0 && p[0].has_value && p[0].has_rate);
  CHECK_NEAR(p[0].value.value, -1.5);
  CHECK(p[1].type == MB_PRESCRIBE_JOINT && p[1].joint == 0 && p[1].coord == MB_COORD_ANGLE);
  CHECK(p[1].has_value && p[1].has_rate && p[1].rate.value == 2);
  CHECK(p[2].joint == 1 && p[2].coord == MB_COORD_TRANSLATION && p[2].has_value && !p[2].has_rate);
  CHECK_NEAR(p[2].value.value, 0.2);
  CHECK(p[3].joint == 0 && p[3].coord == MB_COORD_ANGLE && !p[3].has_value && p[3].has_rate);
  CHECK(p[4].type == MB_PRESCRIBE_POINT && p[4].body == 0 && p[4].marker == 1 &&
        p[4].component == 1);
  CHECK(p[4].has_value && p[4].value.value == -1 && p[4].has_rate);

  /* outputs: components index the sensor's values */
  CHECK(d.nsensor == 13);
  const mb_sensor_desc* o = d.sensor;
  CHECK(o[0].type == MB_SENSOR_POINT_POSITION && o[0].body == 0 && o[0].marker == 1 &&
        o[0].component == 0);
  CHECK(o[1].type == MB_SENSOR_POINT_VELOCITY && o[1].body == 1 && o[1].marker == 1 &&
        o[1].component == -1);
  CHECK(o[2].type == MB_SENSOR_POINT_ACCELERATION && o[2].body == -1 && o[2].marker == 1 &&
        o[2].component == 1);
  CHECK(o[3].type == MB_SENSOR_BODY_ANGULAR_VELOCITY && o[3].body == 0 && o[3].component == 0);
  CHECK(o[4].type == MB_SENSOR_BODY_ANGLES && o[4].body == 0 && o[4].component == -1);
  CHECK(o[5].type == MB_SENSOR_JOINT_COORDINATE && o[5].joint == 0 && o[5].coord == MB_COORD_ANGLE);
  CHECK(o[6].type == MB_SENSOR_JOINT_RATE && o[6].joint == 1 && o[6].coord == MB_COORD_TRANSLATION);
  CHECK(o[7].type == MB_SENSOR_SPRING_LENGTH && o[7].force == 0);
  CHECK(o[8].type == MB_SENSOR_SPRING_FORCE && o[8].force == 0);
  CHECK(o[9].type == MB_SENSOR_KINETIC_ENERGY && o[10].type == MB_SENSOR_GRAVITY_ENERGY);
  CHECK(o[11].type == MB_SENSOR_ELASTIC_ENERGY && o[12].type == MB_SENSOR_TOTAL_ENERGY);
  CHECK(strcmp(o[12].name, "E") == 0 && o[12].body == -1 && o[12].joint == -1 && o[12].force == -1);

  /* functionals: integral terms first, then final ones; defaults */
  CHECK(d.nfunctional == 2);
  const mb_functional_desc* fn = d.functional;
  CHECK(strcmp(fn[0].name, "track") == 0 && fn[0].nterm == 3);
  const mb_fterm_desc* t = fn[0].term;
  CHECK(strcmp(t[0].output, "x1") == 0 && t[0].shape == MB_SHAPE_SQUARED_ERROR && !t[0].final);
  CHECK(t[0].weight.param == k && t[0].weight.value == 100);
  CHECK(t[0].has_reference && t[0].reference.type == MB_FUNC_TABLE && t[0].reference.ncoef == 3);
  CHECK(t[0].reference.coef[1].param == L && t[0].reference.time[2] == 2);
  CHECK(t[0].epsilon.value == 1e-6 && t[0].epsilon.param == -1);
  CHECK(strcmp(t[1].output, "v2.y") == 0 && t[1].shape == MB_SHAPE_SMOOTH_ABS && !t[1].final);
  CHECK(t[1].weight.value == 1 && t[1].weight.param == -1 && t[1].epsilon.value == 0.001);
  CHECK(t[1].has_reference && t[1].reference.type == MB_FUNC_CONSTANT &&
        t[1].reference.coef[0].value == 0.5);
  CHECK(strcmp(t[2].output, "E") == 0 && t[2].shape == MB_SHAPE_VALUE && t[2].final);
  CHECK(t[2].weight.value == -2 && !t[2].has_reference && t[2].reference.coef == NULL);
  CHECK(strcmp(fn[1].name, "effort") == 0 && fn[1].nterm == 1);
  CHECK(fn[1].term[0].shape == MB_SHAPE_SQUARED_ERROR && !fn[1].term[0].has_reference);
  CHECK(fn[1].term[0].weight.value == 1 && !fn[1].term[0].final);

  /* settings */
  const mb_settings* st = &d.settings;
  CHECK(st->t_end == 2 && st->step == 0.01 && st->output_interval == 0.1);
  CHECK(st->beta == 0.3 && st->gamma == 0.6 && st->penalty == 1e8);
  CHECK(st->tol_newton == 1e-9 && st->tol_constraint == 1e-8 && st->max_newton == 30 &&
        st->max_substeps == 4);
  CHECK(st->projection_iterations == 3 && st->tol_projection == 1e-11 && st->exact_tangent == 0);
  CHECK(st->tol_assembly == 1e-10 && st->max_assembly == 40);

  /* freeing twice is harmless (the first free zeroes the struct) */
  mb_desc_free(&d);
  CHECK(d.body == NULL && d.nbody == 0);
  mb_desc_free(&d);
  mb_desc_free(NULL);
}

static void test_spatial(void) {
  mb_desc d;
  mb_error err;
  mb_settings def;
  mb_status s = mb_desc_parse_json(spatial_model, "spatial", &d, &err);
  if (!CHECK_MSG(s == MB_OK, err.message)) return;
  CHECK(d.dim == 3 && d.name[0] == '\0');
  CHECK_NEAR(d.gravity[2].value, -9.81);

  /* inertia: principal moments, and the full matrix as [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] */
  const mb_body_desc* b = d.body;
  CHECK_NEAR(b[0].inertia[0].value, 0.1);
  CHECK_NEAR(b[0].inertia[2].value, 0.05);
  CHECK(b[0].inertia[3].value == 0 && b[0].inertia[5].value == 0);
  double want[6] = {0.2, 0.3, 0.4, 0.01, 0, 0.02};
  for (int i = 0; i < 6; i++) CHECK_NEAR(b[1].inertia[i].value, want[i]);
  CHECK(b[1].inertia[3].param == mb_desc_param_index(&d, "Ixy") && b[1].inertia[3].param == 0);
  CHECK(b[1].inertia[4].param == -1);
  CHECK_NEAR(b[0].position[2], 0.5);
  CHECK_NEAR(b[0].orientation[0], 0.1);
  CHECK_NEAR(b[0].orientation[2], 0.3);
  CHECK(b[0].marker[0].has_axis && b[0].marker[0].has_ref);
  CHECK_NEAR(b[0].marker[0].axis[2].value, 2); /* stored as written; the compiler normalises */
  CHECK_NEAR(b[0].marker[0].ref[0].value, 3);
  CHECK(d.ground_marker[0].has_ref && !d.ground_marker[1].has_ref);

  /* all joint types */
  mb_joint_type types[7] = {MB_JOINT_REVOLUTE,  MB_JOINT_SPHERICAL, MB_JOINT_CYLINDRICAL,
                            MB_JOINT_PRISMATIC, MB_JOINT_UNIVERSAL, MB_JOINT_FIXED,
                            MB_JOINT_PLANAR};
  CHECK(d.njoint == 7);
  for (int i = 0; i < 7 && i < d.njoint; i++) CHECK(d.joint[i].type == types[i]);
  CHECK(d.joint[6].body[0] == -1 && d.joint[6].marker[0] == 1 && d.joint[6].body[1] == 5);

  /* spatial loads have three components */
  CHECK(d.force[0].type == MB_FORCE_POINT && d.force[0].body[0] == 1 && d.force[0].marker[0] == 1);
  CHECK(d.force[0].func[0].coef[0].value == 1 && d.force[0].func[2].type == MB_FUNC_POLYNOMIAL);
  CHECK(d.force[1].type == MB_FORCE_TORQUE && d.force[1].func[2].type == MB_FUNC_HARMONIC);
  CHECK(d.force[1].func[2].coef[0].value == 0 && d.force[1].func[2].coef[3].value == 0);
  CHECK(d.force[1].func[2].coef[1].value == 2 && d.force[1].func[2].coef[2].value == 3);

  /* driver, initial conditions and outputs */
  CHECK(d.driver[0].joint == 2 && d.driver[0].coord == MB_COORD_TRANSLATION);
  CHECK(d.driver[0].func.type == MB_FUNC_CONSTANT && d.driver[0].func.coef[0].value == 0.5);
  CHECK(d.prescribe[0].joint == 2 && d.prescribe[0].coord == MB_COORD_ANGLE &&
        d.prescribe[0].has_value);
  CHECK(d.prescribe[1].component == 2 && !d.prescribe[1].has_value && d.prescribe[1].has_rate);
  CHECK(d.sensor[0].component == 0 && d.sensor[1].component == 2 && d.sensor[2].component == 0);
  CHECK(d.sensor[3].component == 2 && d.sensor[4].coord == MB_COORD_TRANSLATION);

  /* no functionals */
  CHECK(d.nfunctional == 0 && d.functional == NULL);

  /* absent "simulation": the defaults */
  mb_settings_default(&def);
  CHECK(memcmp(&def, &d.settings, sizeof def) == 0);
  CHECK(def.t_end == 5 && def.step == 1e-3 && def.output_interval == 0 && def.beta == 0.25 &&
        def.gamma == 0.5);
  CHECK(def.penalty == 1e9 && def.tol_newton == 1e-10 && def.tol_constraint == 1e-10 &&
        def.max_newton == 50 && def.max_substeps == 8);
  CHECK(def.projection_iterations == 30 && def.tol_projection == 1e-14 && def.exact_tangent == 1);
  CHECK(def.tol_assembly == 1e-12 && def.max_assembly == 50);
  mb_desc_free(&d);
}

/* ---------------------------------------------------------------------------------------------
   controllers */

/* three PID controllers: a force on a cart with two error terms, a table reference and
   parameter-bound gains and saturation; a planar torque with defaults; a force with one gain.
   The error terms name outputs declared after the controllers; two outputs are controls, one is
   a control error */
static const char* const controller_model =
    "{\n"
    "  \"dimension\": 2,\n"
    "  \"gravity\": [0, -9.81],\n"
    "  \"parameters\": {\"Kp\": 40, \"Ki\": 5, \"Kd\": 2, \"U\": 50, \"r1\": 0.25},\n"
    "  \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0]}, \"R\": {\"point\": [0, -1], "
    "\"axis\": [1, 0]}}},\n"
    "  \"bodies\": [\n"
    "    {\"name\": \"crank\", \"mass\": 1, \"inertia\": 0.1,\n"
    "     \"markers\": {\"O\": {\"point\": [0, 0]}, \"P\": {\"point\": [1, 0]}}},\n"
    "    {\"name\": \"cart\", \"mass\": 2, \"inertia\": 0.1, \"position\": [0, -1],\n"
    "     \"markers\": {\"S\": {\"point\": [0, 0], \"axis\": [1, 0]}, \"C\": {\"point\": [0.5, "
    "0]}}}\n"
    "  ],\n"
    "  \"joints\": [\n"
    "    {\"name\": \"jO\", \"type\": \"revolute\", \"marker1\": \"ground.O\", \"marker2\": "
    "\"crank.O\"},\n"
    "    {\"name\": \"jS\", \"type\": \"prismatic\", \"marker1\": \"ground.R\", \"marker2\": "
    "\"cart.S\"}\n"
    "  ],\n"
    "  \"controllers\": [\n"
    "    {\"name\": \"pid_x\", \"type\": \"pid\",\n"
    "     \"error\": [{\"output\": \"x2\", \"weight\": 1}, {\"output\": \"x1\", \"weight\": -1}],\n"
    "     \"reference\": {\"table\": {\"t\": [0, 1], \"values\": [0, \"$r1\"]}},\n"
    "     \"kp\": \"$Kp\", \"ki\": 0.5, \"kd\": \"$Kd\", \"saturation\": \"$U\",\n"
    "     \"actuator\": {\"type\": \"force\", \"marker\": \"cart.C\", \"direction\": [2, 0]}},\n"
    "    {\"name\": \"speed\", \"type\": \"pid\", \"error\": [{\"output\": \"omega\"}], "
    "\"reference\": -10, \"kp\": 1,\n"
    "     \"actuator\": {\"type\": \"torque\", \"body\": \"crank\"}},\n"
    "    {\"name\": \"lift\", \"type\": \"pid\", \"error\": [{\"output\": \"p.y\", \"weight\": "
    "0.5}], \"ki\": \"$Ki\",\n"
    "     \"saturation\": 3, \"actuator\": {\"type\": \"force\", \"marker\": \"crank.P\", "
    "\"direction\": [0, -1]}}\n"
    "  ],\n"
    "  \"outputs\": [\n"
    "    {\"name\": \"x1\", \"type\": \"position\", \"marker\": \"crank.P\", \"component\": "
    "\"x\"},\n"
    "    {\"name\": \"x2\", \"type\": \"position\", \"marker\": \"cart.C\", \"component\": "
    "\"x\"},\n"
    "    {\"name\": \"p\", \"type\": \"position\", \"marker\": \"crank.P\"},\n"
    "    {\"name\": \"omega\", \"type\": \"angular_velocity\", \"body\": \"crank\"},\n"
    "    {\"name\": \"u\", \"type\": \"control\", \"controller\": \"speed\"},\n"
    "    {\"name\": \"u_x\", \"type\": \"control\", \"controller\": \"pid_x\"},\n"
    "    {\"name\": \"e_x\", \"type\": \"control_error\", \"controller\": \"pid_x\"}\n"
    "  ],\n"
    "  \"simulation\": {\"t_end\": 2, \"step\": 0.01}\n"
    "}\n";

/* spatial actuators: a torque about a global axis, a force along a direction (stored as given) */
static const char* const controller_spatial_model =
    "{\n"
    "  \"dimension\": 3,\n"
    "  \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [1, 0, 0]}}},\n"
    "  \"bodies\": [{\"name\": \"wheel\", \"mass\": 1, \"inertia\": [0.2, 0.1, 0.1],\n"
    "              \"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [1, 0, 0]}, \"R\": "
    "{\"point\": [0, 0.5, 0]}}}],\n"
    "  \"joints\": [{\"name\": \"axle\", \"type\": \"revolute\", \"marker1\": \"ground.O\", "
    "\"marker2\": \"wheel.O\"}],\n"
    "  \"controllers\": [\n"
    "    {\"name\": \"spin\", \"type\": \"pid\", \"error\": [{\"output\": \"w.x\"}], "
    "\"reference\": "
    "{\"polynomial\": [0, 2]},\n"
    "     \"kp\": 3, \"kd\": 0.1, \"actuator\": {\"type\": \"torque\", \"body\": \"wheel\", "
    "\"axis\": [2, 0, 0]}},\n"
    "    {\"name\": \"rim\", \"type\": \"pid\", \"error\": [{\"output\": \"z\", \"weight\": -2}], "
    "\"ki\": 1,\n"
    "     \"actuator\": {\"type\": \"force\", \"marker\": \"wheel.R\", \"direction\": [1, 2, "
    "3]}}\n"
    "  ],\n"
    "  \"outputs\": [\n"
    "    {\"name\": \"w\", \"type\": \"angular_velocity\", \"body\": \"wheel\"},\n"
    "    {\"name\": \"z\", \"type\": \"position\", \"marker\": \"wheel.R\", \"component\": "
    "\"z\"},\n"
    "    {\"name\": \"u\", \"type\": \"control\", \"controller\": \"rim\"}\n"
    "  ]\n"
    "}\n";

static void test_controllers(void) {
  mb_desc d;
  mb_error err;
  mb_status s = mb_desc_parse_json(controller_model, "controllers", &d, &err);
  if (!CHECK_MSG(s == MB_OK, err.message)) return;
  const int Kp = mb_desc_param_index(&d, "Kp"), Ki = mb_desc_param_index(&d, "Ki"),
            Kd = mb_desc_param_index(&d, "Kd"), U = mb_desc_param_index(&d, "U"),
            r1 = mb_desc_param_index(&d, "r1");
  CHECK(Kp == 0 && Ki == 1 && Kd == 2 && U == 3 && r1 == 4);
  CHECK(d.ncontroller == 3 && d.controller != NULL);
  if (d.ncontroller != 3) goto done;

  /* a force on the cart: two error terms, a table reference, bound gains and saturation */
  const mb_controller_desc* k = &d.controller[0];
  CHECK(strcmp(k->name, "pid_x") == 0 && k->nterm == 2);
  CHECK(strcmp(k->term[0].output, "x2") == 0 && k->term[0].weight == 1);
  CHECK(strcmp(k->term[1].output, "x1") == 0 && k->term[1].weight == -1);
  CHECK(k->has_reference && k->reference.type == MB_FUNC_TABLE && k->reference.ncoef == 2);
  CHECK(k->reference.time[1] == 1 && k->reference.coef[0].param == -1);
  CHECK(k->reference.coef[1].param == r1 && k->reference.coef[1].value == 0.25);
  CHECK(k->kp.param == Kp && k->kp.value == 40);
  CHECK(k->ki.param == -1 && k->ki.value == 0.5);
  CHECK(k->kd.param == Kd && k->kd.value == 2);
  CHECK(k->has_saturation && k->saturation.param == U && k->saturation.value == 50);
  CHECK(k->actuator == MB_ACTUATOR_FORCE && k->body == 1 && k->marker == 1);
  CHECK(k->direction[0] == 2 && k->direction[1] == 0 && k->direction[2] == 0);

  /* a planar torque: default weight, constant reference, zero gains unbound, about z */
  k = &d.controller[1];
  CHECK(strcmp(k->name, "speed") == 0 && k->nterm == 1);
  CHECK(strcmp(k->term[0].output, "omega") == 0 && k->term[0].weight == 1);
  CHECK(k->has_reference && k->reference.type == MB_FUNC_CONSTANT &&
        k->reference.coef[0].value == -10);
  CHECK(k->kp.value == 1 && k->kp.param == -1);
  CHECK(k->ki.value == 0 && k->ki.param == -1 && k->kd.value == 0 && k->kd.param == -1);
  CHECK(!k->has_saturation && k->saturation.param == -1);
  CHECK(k->actuator == MB_ACTUATOR_TORQUE && k->body == 0 && k->marker == -1);
  CHECK(k->direction[0] == 0 && k->direction[1] == 0 && k->direction[2] == 1);

  /* no reference: r = 0, nothing allocated; a literal saturation; a bound ki only */
  k = &d.controller[2];
  CHECK(strcmp(k->term[0].output, "p.y") == 0 && k->term[0].weight == 0.5);
  CHECK(!k->has_reference && k->reference.coef == NULL && k->reference.ncoef == 0);
  CHECK(k->kp.value == 0 && k->ki.param == Ki && k->ki.value == 5);
  CHECK(k->has_saturation && k->saturation.value == 3 && k->saturation.param == -1);
  CHECK(k->actuator == MB_ACTUATOR_FORCE && k->body == 0 && k->marker == 1);
  CHECK(k->direction[0] == 0 && k->direction[1] == -1);

  /* control outputs and errors: the controller index in `force`, one column */
  CHECK(d.nsensor == 7);
  CHECK(d.sensor[4].type == MB_SENSOR_CONTROL && d.sensor[4].force == 1);
  CHECK(d.sensor[5].type == MB_SENSOR_CONTROL && d.sensor[5].force == 0);
  CHECK(d.sensor[4].component == -1 && d.sensor[4].body == -1 && d.sensor[4].joint == -1);
  CHECK(d.sensor[6].type == MB_SENSOR_CONTROL_ERROR && d.sensor[6].force == 0);

  /* a parameter reaches the bound gain and the reference */
  mb_desc_set_param(&d, Kp, 80);
  mb_desc_set_param(&d, r1, 0.5);
  CHECK(d.controller[0].kp.value == 80 && d.controller[0].reference.coef[1].value == 0.5);
  CHECK(d.controller[1].kp.value == 1);

done:
  mb_desc_free(&d);
  CHECK(d.controller == NULL && d.ncontroller == 0);

  /* spatial: the torque axis and the force direction as given */
  s = mb_desc_parse_json(controller_spatial_model, "controllers spatial", &d, &err);
  if (CHECK_MSG(s == MB_OK, err.message) && CHECK(d.ncontroller == 2)) {
    k = &d.controller[0];
    CHECK(k->actuator == MB_ACTUATOR_TORQUE && k->body == 0 && k->marker == -1);
    CHECK(k->direction[0] == 2 && k->direction[1] == 0 && k->direction[2] == 0);
    CHECK(k->reference.type == MB_FUNC_POLYNOMIAL && k->reference.coef[1].value == 2);
    CHECK(k->kp.value == 3 && k->kd.value == 0.1 && k->ki.value == 0);
    k = &d.controller[1];
    CHECK(k->actuator == MB_ACTUATOR_FORCE && k->body == 0 && k->marker == 1);
    CHECK(k->direction[0] == 1 && k->direction[1] == 2 && k->direction[2] == 3);
    CHECK(k->term[0].weight == -2 && !k->has_reference);
    CHECK(d.sensor[2].type == MB_SENSOR_CONTROL && d.sensor[2].force == 1);
  }
  mb_desc_free(&d);
}

/* the rules of controllers the bad models do not show */
static void test_controller_misc(void) {
  static const char* const planar =
      "{\"dimension\": 2, \"parameters\": {\"k\": 1, \"neg\": -1, \"u\": [1, 2]}, "
      "\"ground\": {\"markers\": {\"O\": {\"point\": [0, 0]}}}, "
      "\"bodies\": [{\"name\": \"bar\", \"mass\": 1, \"inertia\": 1, "
      "\"markers\": {\"P\": {\"point\": [1, 0]}}}], ";
  static const char* const spatial =
      "{\"dimension\": 3, \"bodies\": [{\"name\": \"bar\", \"mass\": 1, \"inertia\": [1, 1, 1], "
      "\"markers\": {\"P\": {\"point\": [1, 0, 0]}}}], ";
#define PID "{\"name\": \"c\", \"type\": \"pid\", "
#define ERR "\"error\": [{\"output\": \"x\"}], "
#define TORQUE "\"actuator\": {\"type\": \"torque\", \"body\": \"bar\"}"
  static const struct {
    int spatial;
    const char* rest; /* the text after the bodies */
    const char* path;
    const char* reason;
  } cases[] = {
      {0, "\"controllers\": {}}", "controllers", "expected an array, got object"},
      {0, "\"controllers\": [3]}", "controllers[0]", "expected an object, got number"},
      {0, "\"controllers\": [{\"type\": \"pid\", " ERR TORQUE "}]}", "controllers[0].name",
       "missing"},
      {0, "\"controllers\": [{\"name\": \"c-1\", \"type\": \"pid\", " ERR TORQUE "}]}",
       "controllers[0].name", "only letters, digits and '_'"},
      {0, "\"controllers\": [{\"name\": \"c\", \"type\": 1, " ERR TORQUE "}]}",
       "controllers[0].type", "expected a string, got number"},
      {0, "\"controllers\": [" PID ERR TORQUE ", \"kP\": 1}]}", "controllers[0].kP", "unknown key"},
      {0, "\"controllers\": [" PID TORQUE "}]}", "controllers[0].error", "missing"},
      {0, "\"controllers\": [" PID "\"error\": {\"output\": \"x\"}, " TORQUE "}]}",
       "controllers[0].error", "expected an array, got object"},
      {0, "\"controllers\": [" PID "\"error\": [\"x\"], " TORQUE "}]}", "controllers[0].error[0]",
       "expected an object, got string \"x\""},
      {0, "\"controllers\": [" PID "\"error\": [{\"weight\": 2}], " TORQUE "}]}",
       "controllers[0].error[0].output", "missing"},
      {0, "\"controllers\": [" PID "\"error\": [{\"output\": \"\"}], " TORQUE "}]}",
       "controllers[0].error[0].output", "must not be empty"},
      {0,
       "\"controllers\": [" PID "\"error\": [{\"output\": \"x\"}, {\"output\": \"y\", "
       "\"weight\": \"$k\"}], " TORQUE "}]}",
       "controllers[0].error[1].weight", "expected a number, got string \"$k\""},
      {0,
       "\"controllers\": [" PID "\"error\": [{\"output\": \"x\", \"shape\": \"value\"}], " TORQUE
       "}]}",
       "controllers[0].error[0].shape", "unknown key"},
      {0, "\"controllers\": [" PID ERR "\"reference\": \"abc\", " TORQUE "}]}",
       "controllers[0].reference", "expected a number, \"$parameter\" or a function object"},
      {0,
       "\"controllers\": [" PID ERR
       "\"reference\": {\"polynomial\": \"$u\"}, \"kd\": \"$u\", " TORQUE "}]}",
       "controllers[0].kd", "\"$u\" is a vector parameter (2 values)"},
      {0, "\"controllers\": [" PID ERR "\"ki\": \"$q\", " TORQUE "}]}", "controllers[0].ki",
       "unknown parameter \"q\""},
      {0, "\"controllers\": [" PID ERR "\"saturation\": -5, " TORQUE "}]}",
       "controllers[0].saturation", "must be > 0 (got -5)"},
      {0, "\"controllers\": [" PID ERR "\"saturation\": \"$neg\", " TORQUE "}]}",
       "controllers[0].saturation", "must be > 0 (got -1)"},
      {0, "\"controllers\": [" PID ERR "\"kp\": 1}]}", "controllers[0].actuator", "missing"},
      {0, "\"controllers\": [" PID ERR "\"actuator\": \"bar\"}]}", "controllers[0].actuator",
       "expected an object, got string \"bar\""},
      {0, "\"controllers\": [" PID ERR "\"actuator\": {\"body\": \"bar\"}}]}",
       "controllers[0].actuator.type", "missing"},
      {0, "\"controllers\": [" PID ERR "\"actuator\": {\"type\": \"motor\", \"body\": \"bar\"}}]}",
       "controllers[0].actuator.type", "unknown actuator type \"motor\" (force or torque)"},
      {0, "\"controllers\": [" PID ERR "\"actuator\": {\"type\": \"torque\", \"body\": \"rod\"}}]}",
       "controllers[0].actuator.body", "unknown body \"rod\""},
      {0,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"torque\", \"body\": \"bar\", \"direction\": [1, 0]}}]}",
       "controllers[0].actuator.direction", "unknown key"},
      {0,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"force\", \"marker\": \"bar.Q\", \"direction\": [1, 0]}}]}",
       "controllers[0].actuator.marker", "unknown marker \"Q\" on body \"bar\""},
      {0,
       "\"controllers\": [" PID ERR "\"actuator\": {\"type\": \"force\", \"marker\": \"bar.P\"}}]}",
       "controllers[0].actuator.direction", "missing"},
      {0,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"force\", \"marker\": \"bar.P\", \"direction\": [1, 0, 0]}}]}",
       "controllers[0].actuator.direction", "expected 2 components, got 3"},
      {0,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"force\", \"marker\": \"bar.P\", \"direction\": [\"$k\", "
       "0]}}]}",
       "controllers[0].actuator.direction[0]", "expected a number, got string \"$k\""},
      {0,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"force\", \"marker\": \"bar.P\", \"axis\": [1, 0]}}]}",
       "controllers[0].actuator.axis", "unknown key"},
      /* control outputs: the key names a controller; one column, so no component */
      {0, "\"outputs\": [{\"name\": \"u\", \"type\": \"control\"}]}", "outputs[0].controller",
       "missing"},
      {0, "\"outputs\": [{\"name\": \"u\", \"type\": \"control\", \"controller\": \"c\"}]}",
       "outputs[0].controller", "unknown controller \"c\" (not in \"controllers\")"},
      {0,
       "\"controllers\": [" PID ERR TORQUE
       "}], \"outputs\": [{\"name\": \"u\", \"type\": \"control\", \"controller\": \"c\", "
       "\"component\": \"x\"}]}",
       "outputs[0].component", "unknown key"},
      {0, "\"outputs\": [{\"name\": \"u\", \"type\": \"controller\"}]}", "outputs[0].type",
       "unknown output type \"controller\""},
      {0, "\"outputs\": [{\"name\": \"e\", \"type\": \"control_error\", \"controller\": \"c\"}]}",
       "outputs[0].controller", "unknown controller \"c\""},
      /* spatial torques need a non-zero axis of 3 components */
      {1, "\"controllers\": [" PID ERR TORQUE "}]}", "controllers[0].actuator.axis", "missing"},
      {1,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"torque\", \"body\": \"bar\", \"axis\": [0, 0, 0]}}]}",
       "controllers[0].actuator.axis", "must be non-zero"},
      {1,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"torque\", \"body\": \"bar\", \"axis\": [0, 1]}}]}",
       "controllers[0].actuator.axis", "expected 3 components, got 2"},
      {1,
       "\"controllers\": [" PID ERR
       "\"actuator\": {\"type\": \"force\", \"marker\": \"bar.P\", \"direction\": [1, 0]}}]}",
       "controllers[0].actuator.direction", "expected 3 components, got 2"},
  };
#undef PID
#undef ERR
#undef TORQUE
  char text[2048], source[32];
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    snprintf(text, sizeof text, "%s%s", cases[i].spatial ? spatial : planar, cases[i].rest);
    snprintf(source, sizeof source, "controller case %d", i);
    expect_failure(text, source, cases[i].path, cases[i].reason);
  }

  /* the order of the keys in the file does not matter (controllers are read before outputs),
     and an error term may name any column: the compiler resolves it */
  mb_desc d;
  mb_error err;
  snprintf(text, sizeof text,
           "%s\"outputs\": [{\"name\": \"u\", \"type\": \"control\", \"controller\": \"c\"}], "
           "\"controllers\": [{\"name\": \"c\", \"type\": \"pid\", \"error\": [{\"output\": "
           "\"no_such_column\"}], \"actuator\": {\"type\": \"torque\", \"body\": \"bar\"}}]}",
           planar);
  mb_status s = mb_desc_parse_json(text, "order", &d, &err);
  CHECK_MSG(s == MB_OK, err.message);
  if (s == MB_OK)
    CHECK(d.sensor[0].force == 0 && strcmp(d.controller[0].term[0].output, "no_such_column") == 0);
  mb_desc_free(&d);
}

/* ---------------------------------------------------------------------------------------------
   systematic mutations of the valid models */

/* parents of user-named members (the keys are names, not fields) */
static int is_name_map(const char* key) {
  return key && (strcmp(key, "parameters") == 0 || strcmp(key, "markers") == 0);
}

typedef void (*visit_fn)(cJSON* root, cJSON* item, const char* path, const char* source);

/* calls visit on every number (numbers) or every field object (objects), with its JSON path */
static void walk(cJSON* root, cJSON* item, const char* path, int objects, visit_fn visit,
                 const char* source) {
  char sub[512];
  int i = 0;
  if (cJSON_IsNumber(item) && !objects) visit(root, item, path, source);
  if (cJSON_IsObject(item) && objects && !is_name_map(item->string))
    visit(root, item, path, source);
  for (cJSON* e = item->child; e; e = e->next, i++) {
    if (cJSON_IsArray(item))
      snprintf(sub, sizeof sub, "%s[%d]", path, i);
    else
      snprintf(sub, sizeof sub, path[0] ? "%s.%s" : "%s%s", path, e->string);
    walk(root, e, sub, objects, visit, source);
  }
}

/* parses `text` and expects failure at `path` for `reason` */
static void expect_failure(const char* text, const char* source, const char* path,
                           const char* reason) {
  mb_desc d;
  mb_error err;
  mb_status s = mb_desc_parse_json(text, source, &d, &err);
  check_failure(source, s, &d, &err, MB_ERR_MODEL, path, reason);
  mb_desc_free(&d);
}

/* each number replaced by a string that is neither a parameter reference nor an expression (a
   number with its unit) */
static void visit_string(cJSON* root, cJSON* item, const char* path, const char* source) {
  static char text[] = "12 m";
  int type = item->type;
  item->type = cJSON_String;
  item->valuestring = text;
  char* json = cJSON_PrintUnformatted(root);
  item->type = type;
  item->valuestring = NULL;
  expect_failure(json, source, path, "\"12 m\"");
  free(json);
}

/* each number replaced by 1e999, which cJSON reads as infinity */
static void visit_infinite(cJSON* root, cJSON* item, const char* path, const char* source) {
  static char text[] = "__INF__";
  int type = item->type;
  item->type = cJSON_String;
  item->valuestring = text;
  char* json = cJSON_PrintUnformatted(root);
  item->type = type;
  item->valuestring = NULL;
  char* at = strstr(json, "\"__INF__\"");
  memcpy(at, "1e999    ", 9);
  expect_failure(json, source, path, "not a finite number");
  free(json);
}

/* an unknown key added to each object */
static void visit_unknown_key(cJSON* root, cJSON* item, const char* path, const char* source) {
  char sub[600];
  cJSON_AddNumberToObject(item, "zzz", 0);
  char* json = cJSON_PrintUnformatted(root);
  cJSON_DeleteItemFromObjectCaseSensitive(item, "zzz");
  snprintf(sub, sizeof sub, path[0] ? "%s.zzz" : "%szzz", path);
  expect_failure(json, source, sub, "unknown key");
  free(json);
}

/* every mutation of a model; more than min_checks checks, so that the walk really visited it */
static void test_mutations(const char* text, const char* source, int min_checks) {
  cJSON* root = cJSON_Parse(text);
  int before = npass + nfail;
  if (!CHECK_MSG(root != NULL, source)) return;
  walk(root, root, "", 0, visit_string, source);
  walk(root, root, "", 0, visit_infinite, source);
  walk(root, root, "", 1, visit_unknown_key, source);
  CHECK(npass + nfail - before > min_checks);
  cJSON_Delete(root);
}

/* ---------------------------------------------------------------------------------------------
   vector parameters and B-splines */

/* vector parameters and B-splines: the rules the bad models do not show */
static void test_vector_misc(void) {
  static const char* const head =
      "{\"dimension\": 2, \"bodies\": [{\"name\": \"b\", \"mass\": 1, \"inertia\": 1}], "
      "\"forces\": [{\"name\": \"t\", \"type\": \"torque\", \"body\": \"b\", \"value\": ";
  static const struct {
    const char* params; /* the "parameters" object */
    const char* value;  /* the torque's time function */
    const char* path;
    const char* reason;
  } cases[] = {
      /* element references must be written as the element names are */
      {"{\"u\": [1, 2]}", "\"$u[01]\"", "forces[0].value", "unknown parameter \"u[01]\""},
      {"{\"u\": [1, 2]}", "\"$u[-1]\"", "forces[0].value", "unknown parameter \"u[-1]\""},
      {"{\"u\": [1, 2]}", "\"$u[1\"", "forces[0].value", "unknown parameter \"u[1\""},
      {"{\"u\": [1, 2]}", "\"$u[1]x\"", "forces[0].value", "unknown parameter \"u[1]x\""},
      {"{\"u\": [1, 2]}", "\"$u[99999999999]\"", "forces[0].value",
       "unknown parameter \"u[99999999999]\" (the vector \"u\" has 2 values"},
      {"{\"u\": [1, 2]}", "\"$v[0]\"", "forces[0].value",
       "unknown parameter \"v[0]\" (not in \"parameters\")"},
      /* a vector where one scalar is expected: a time function, a harmonic's amplitude */
      {"{\"u\": [1, 2]}", "{\"harmonic\": {\"amplitude\": \"$u\", \"omega\": 1}}",
       "forces[0].value.harmonic.amplitude", "\"$u\" is a vector parameter (2 values)"},
      /* lists: an element is one scalar, not a list; an unknown vector; other types */
      {"{\"u\": [1, 2, 3, 4]}",
       "{\"bspline\": {\"t0\": 0, \"t1\": 1, \"coefficients\": \"$u[1]\"}}",
       "forces[0].value.bspline.coefficients", "\"$u[1]\" is a scalar parameter"},
      {"{\"u\": [1, 2, 3, 4]}", "{\"polynomial\": \"$p\"}", "forces[0].value.polynomial",
       "unknown parameter \"p\""},
      {"{\"u\": [1, 2, 3, 4]}", "{\"polynomial\": 3}", "forces[0].value.polynomial",
       "expected an array or a vector parameter \"$name\", got number"},
      {"{\"u\": [1, 2, 3, 4]}", "{\"polynomial\": []}", "forces[0].value.polynomial",
       "needs at least 1 coefficient"},
      {"{}", "{\"table\": {\"t\": [0, 1], \"values\": \"abc\"}}", "forces[0].value.table.values",
       "expected an array or a vector parameter \"$name\", got string \"abc\""},
      /* B-spline keys and time span */
      {"{}", "{\"bspline\": {\"t0\": 0, \"t1\": 1}}", "forces[0].value.bspline.coefficients",
       "missing"},
      {"{}", "{\"bspline\": {\"t0\": 0, \"coefficients\": [0, 0, 0, 0]}}",
       "forces[0].value.bspline.t1", "missing"},
      {"{}", "{\"bspline\": {\"t0\": 1, \"t1\": -1, \"coefficients\": [0, 0, 0, 0]}}",
       "forces[0].value.bspline.t1", "must be greater than t0 (got -1 <= 1)"},
      {"{\"k\": 1}", "{\"bspline\": {\"t0\": \"$k\", \"t1\": 2, \"coefficients\": [0, 0, 0, 0]}}",
       "forces[0].value.bspline.t0", "expected a number, got string \"$k\""},
      {"{}", "{\"bspline\": [0, 1, 2, 3]}", "forces[0].value.bspline", "expected an object"},
      {"{}",
       "{\"bspline\": {\"t0\": 0, \"t1\": 1, \"coefficients\": [0, 0, 0, 0]}, "
       "\"polynomial\": [1]}",
       "forces[0].value", "expected exactly one of"},
      {"{}", "[1]", "forces[0].value", "planar torque is one function"},
      /* vector declarations: counts, element names, forms */
      {"{\"u\": {\"repeat\": 1, \"count\": 100001}}", "0", "parameters.u.count",
       "must be <= 100000 (got 100001)"},
      {"{\"u\": {\"repeat\": 1, \"count\": 2.5}}", "0", "parameters.u.count", "must be an integer"},
      {"{\"u\": {\"repeat\": 1}}", "0", "parameters.u.count", "missing"},
      {"{\"u\": {\"count\": 3}}", "0", "parameters.u.repeat", "missing"},
      {"{\"u\": {\"repeat\": \"$k\", \"count\": 3}}", "0", "parameters.u.repeat",
       "expected a number, got string"},
      {"{\"u\": {\"repeat\": 1, \"count\": 3, \"step\": 1}}", "0", "parameters.u.step",
       "unknown key"},
      {"{\"u\": [1, [2]]}", "0", "parameters.u[1]", "expected a number, got array"},
      {"{\"u\": true}", "0", "parameters.u", "expected a number, an array of numbers"},
      {"{\"u[0]\": 1}", "0", "parameters.u[0]", "only letters, digits and '_'"},
      {"{\"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij\": {\"repeat\": 1, "
       "\"count\": 100}}",
       "0", "parameters.abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij",
       "too long for a vector of 100 values"},
  };
  char text[2048], source[32];
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    snprintf(text, sizeof text, "%s%s}], \"parameters\": %s}", head, cases[i].value,
             cases[i].params);
    snprintf(source, sizeof source, "vector case %d", i);
    expect_failure(text, source, cases[i].path, cases[i].reason);
  }

  /* the largest vector, bound whole: 100000 coefficients; a one-value vector; exactly 1000000
     parameters */
  mb_desc d;
  mb_error err;
  snprintf(text, sizeof text,
           "%s{\"bspline\": {\"t0\": 0, \"t1\": 1, \"coefficients\": \"$u\"}}}], "
           "\"parameters\": {\"one\": [2], \"u\": {\"repeat\": -1.5, \"count\": 100000}}}",
           head);
  mb_status s = mb_desc_parse_json(text, "large", &d, &err);
  if (CHECK_MSG(s == MB_OK, err.message)) {
    CHECK(d.nparam == 100001 && strcmp(d.param_name[0], "one[0]") == 0);
    CHECK(strcmp(d.param_name[100000], "u[99999]") == 0 && d.param_value[100000] == -1.5);
    CHECK(mb_desc_param_index(&d, "u[99999]") == 100000);
    CHECK(d.force[0].func[0].ncoef == 100000 && d.force[0].func[0].coef[99999].param == 100000);
  }
  mb_desc_free(&d);
  char* big = malloc(4096);
  if (big) {
    int n = snprintf(big, 4096, "%s0}], \"parameters\": {", head);
    for (int k = 0; k < 10; k++)
      n += snprintf(big + n, (size_t)(4096 - n), "\"v%d\": {\"repeat\": %d, \"count\": 100000}, ",
                    k, k);
    snprintf(big + n, (size_t)(4096 - n), "\"w\": 1}}");
    s = mb_desc_parse_json(big, "million", &d, &err);
    /* one too many: the scalar "w" is the 1000001st */
    CHECK_MSG(s == MB_ERR_MODEL && strstr(err.message, "parameters.w: more than 1000000"),
              err.message);
    mb_desc_free(&d);
    big[n] = '\0';
    snprintf(big + n - 2, (size_t)(4096 - n + 2), "}}");
    s = mb_desc_parse_json(big, "million", &d, &err);
    CHECK_MSG(s == MB_OK && d.nparam == 1000000, err.message);
    if (s == MB_OK) CHECK(strcmp(d.param_name[999999], "v9[99999]") == 0);
    mb_desc_free(&d);
    free(big);
  }
}

/* ---------------------------------------------------------------------------------------------
   the "optimization" section and the "sensitivity" key (docs/model-format.md, Optimization) */

/* `model` (a JSON object) with `members` (text of members, without braces) added at its end */
static char* with_members(const char* model, const char* members) {
  const char* end = strrchr(model, '}');
  size_t n = (size_t)(end - model), m = strlen(members);
  char* text = calloc(n + m + 4, 1);
  if (!text) return NULL;
  memcpy(text, model, n);
  snprintf(text + n, m + 4, ", %s}", members);
  return text;
}

/* vector_model with `members` added; expects failure at `path` for `reason` */
static void expect_optimization_failure(const char* members, const char* path, const char* reason) {
  char* text = with_members(vector_model, members);
  if (!CHECK(text != NULL)) return;
  expect_failure(text, "optimization", path, reason);
  free(text);
}

static void test_optimization(void) {
  mb_desc d;
  mb_error err;

  /* no section: no objective, no design variables; the method defaults to auto */
  mb_status s = mb_desc_parse_json(vector_model, "none", &d, &err);
  if (CHECK_MSG(s == MB_OK, err.message))
    CHECK(d.optimization.objective == -1 && d.optimization.nvar == 0 && d.sensitivity == 0);
  mb_desc_free(&d);

  /* a whole vector (one variable per element, in order), an element on a log scale with an
     initial value, a scalar; constraints: one-sided and equality; the defaults */
  char* text = with_members(
      vector_model,
      "\"optimization\": {\"parameters\": {\"u\": {\"lower\": 0, \"upper\": 1, \"initial\": 0.5}, "
      "\"w[1]\": {\"lower\": 1, \"upper\": 5, \"initial\": 3, \"scale\": \"log\"}, "
      "\"k\": {\"lower\": -10, \"upper\": 10, \"scale\": \"linear\"}}, \"objective\": \"track\", "
      "\"constraints\": [{\"functional\": \"track\", \"lower\": 0}, "
      "{\"functional\": \"track\", \"lower\": 1, \"upper\": 1}]}, \"sensitivity\": \"adjoint\"");
  s = text ? mb_desc_parse_json(text, "vars", &d, &err) : MB_ERR_MEMORY;
  if (CHECK_MSG(s == MB_OK, err.message)) {
    const mb_optim_desc* o = &d.optimization;
    const int u0 = mb_desc_param_index(&d, "u[0]"), w1 = mb_desc_param_index(&d, "w[1]");
    CHECK(o->objective == 0 && o->nvar == 22 && d.sensitivity == 2);
    for (int j = 0; j < 20 && o->nvar == 22; j++)
      CHECK(o->var[j].param == u0 + j && o->var[j].lower == 0 && o->var[j].upper == 1 &&
            !o->var[j].log_scale && d.param_value[u0 + j] == 0.5);
    if (o->nvar == 22) {
      CHECK(o->var[20].param == w1 && o->var[20].log_scale && o->var[20].lower == 1);
      CHECK(d.param_value[w1] == 3);
      CHECK(o->var[21].param == mb_desc_param_index(&d, "k") && !o->var[21].log_scale);
      CHECK(d.param_value[o->var[21].param] == 4);
    }
    CHECK(o->ncon == 2 && o->con[0].functional == 0 && o->con[0].lower == 0 &&
          isinf(o->con[0].upper) && o->con[0].upper > 0);
    CHECK(o->ncon == 2 && o->con[1].lower == 1 && o->con[1].upper == 1);
    CHECK(strcmp(o->algorithm, "lbfgs") == 0 && o->ftol_rel == 1e-10 && o->ftol_abs == 0 &&
          o->xtol_rel == 1e-8 && o->maxtime == 0 && o->maxeval == 200);
  }
  mb_desc_free(&d);
  free(text);

  /* the settings as given; the loader leaves the algorithm's name to the optimiser */
  text = with_members(vector_model,
                      "\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, "
                      "\"objective\": \"track\", \"algorithm\": \"simplex\", \"ftol_rel\": 0, "
                      "\"ftol_abs\": 1e-9, \"xtol_rel\": 0, \"maxtime\": 30, \"maxeval\": 1}, "
                      "\"sensitivity\": \"forward\"");
  s = text ? mb_desc_parse_json(text, "settings", &d, &err) : MB_ERR_MEMORY;
  if (CHECK_MSG(s == MB_OK, err.message)) {
    const mb_optim_desc* o = &d.optimization;
    CHECK(strcmp(o->algorithm, "simplex") == 0 && o->ftol_rel == 0 && o->ftol_abs == 1e-9 &&
          o->xtol_rel == 0 && o->maxtime == 30 && o->maxeval == 1 && o->ncon == 0);
    CHECK(d.sensitivity == 1);
  }
  mb_desc_free(&d);
  free(text);

  /* every rule of the section */
  static const struct {
    const char *members, *path, *reason;
  } bad[] = {
      {"\"optimization\": []", "optimization", "expected an object, got array"},
      {"\"optimization\": {\"objective\": \"track\"}", "optimization.parameters", "missing"},
      {"\"optimization\": {\"parameters\": {}, \"objective\": \"track\"}",
       "optimization.parameters", "needs at least one parameter"},
      {"\"optimization\": {\"parameters\": {\"q\": {\"lower\": 0, \"upper\": 1}}, \"objective\": "
       "\"track\"}",
       "optimization.parameters.q", "unknown parameter (not in \"parameters\")"},
      {"\"optimization\": {\"parameters\": {\"u[20]\": {\"lower\": 0, \"upper\": 1}}, "
       "\"objective\": \"track\"}",
       "optimization.parameters.u[20]", "unknown parameter"},
      {"\"optimization\": {\"parameters\": {\"u\": {\"lower\": 0, \"upper\": 1}, \"u[3]\": "
       "{\"lower\": 0, \"upper\": 1}}, \"objective\": \"track\"}",
       "optimization.parameters.u[3]", "parameter \"u[3]\" listed twice"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}, \"k\": "
       "{\"lower\": 0, \"upper\": 6}}, \"objective\": \"track\"}",
       "optimization.parameters.k", "parameter \"k\" listed twice"},
      {"\"optimization\": {\"parameters\": {\"k\": []}, \"objective\": \"track\"}",
       "optimization.parameters.k", "expected an object, got array"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"upper\": 5}}, \"objective\": \"track\"}",
       "optimization.parameters.k.lower", "missing"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0}}, \"objective\": \"track\"}",
       "optimization.parameters.k.upper", "missing"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 4, \"upper\": 4}}, \"objective\": "
       "\"track\"}",
       "optimization.parameters.k.upper", "must be greater than lower (got 4 <= 4)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": \"$g\", \"upper\": 5}}, "
       "\"objective\": \"track\"}",
       "optimization.parameters.k.lower", "expected a number, got string \"$g\""},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5, \"scale\": "
       "\"exp\"}}, \"objective\": \"track\"}",
       "optimization.parameters.k.scale", "expected \"linear\" or \"log\", got \"exp\""},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5, \"scale\": "
       "\"log\"}}, \"objective\": \"track\"}",
       "optimization.parameters.k.lower", "must be > 0 on a log scale (got 0)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 5, \"upper\": 6}}, \"objective\": "
       "\"track\"}",
       "optimization.parameters.k", "initial value 4 of \"k\" is outside [5, 6]"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5, \"initial\": 7}}, "
       "\"objective\": \"track\"}",
       "optimization.parameters.k", "initial value 7 of \"k\" is outside [0, 5]"},
      {"\"optimization\": {\"parameters\": {\"w\": {\"lower\": 0.5, \"upper\": 5}}, "
       "\"objective\": \"track\"}",
       "optimization.parameters.w", "initial value -3 of \"w[2]\" is outside [0.5, 5]"},
      /* w[0] is a mass: a range reaching 0 would hand the optimiser invalid models */
      {"\"optimization\": {\"parameters\": {\"w\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\"}",
       "optimization.parameters.w.lower", "parameter \"w[0]\" = 0: bodies[0].mass must be > 0"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}}",
       "optimization.objective", "missing"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"nope\"}",
       "optimization.objective", "unknown functional \"nope\" (not in \"functionals\")"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"constraints\": {}}",
       "optimization.constraints", "expected an array, got object"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"constraints\": [{\"upper\": 1}]}",
       "optimization.constraints[0].functional", "missing"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"constraints\": [{\"functional\": \"nope\", \"upper\": 1}]}",
       "optimization.constraints[0]", "unknown functional \"nope\" (not in \"functionals\")"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"constraints\": [{\"functional\": \"track\", \"upper\": 1}, {\"functional\": "
       "\"track\"}]}",
       "optimization.constraints[1]", "needs \"lower\", \"upper\" or both"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"constraints\": [{\"functional\": \"track\", \"lower\": 2, \"upper\": 1}]}",
       "optimization.constraints[0]", "lower 2 is greater than upper 1"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"algorithm\": 1}",
       "optimization.algorithm", "expected a string, got number"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"ftol_rel\": -1}",
       "optimization.ftol_rel", "must be >= 0 (got -1)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"ftol_abs\": -1}",
       "optimization.ftol_abs", "must be >= 0 (got -1)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"xtol_rel\": -1}",
       "optimization.xtol_rel", "must be >= 0 (got -1)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"maxtime\": -1}",
       "optimization.maxtime", "must be >= 0 (got -1)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"maxeval\": 0}",
       "optimization.maxeval", "must be >= 1 (got 0)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"maxeval\": 2.5}",
       "optimization.maxeval", "must be an integer (got 2.5)"},
      {"\"optimization\": {\"parameters\": {\"k\": {\"lower\": 0, \"upper\": 5}}, \"objective\": "
       "\"track\", \"tolerance\": 1}",
       "optimization.tolerance", "unknown key"},
      {"\"sensitivity\": \"Forward\"", "sensitivity",
       "expected \"auto\", \"forward\" or \"adjoint\", got \"Forward\""},
      {"\"sensitivity\": 1", "sensitivity", "expected a string, got number"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_optimization_failure(bad[i].members, bad[i].path, bad[i].reason);

  /* the mutations reach every number and object of the section */
  text = with_members(
      vector_model,
      "\"optimization\": {\"parameters\": {\"u\": {\"lower\": 0, \"upper\": 1, \"initial\": 0.5}, "
      "\"k\": {\"lower\": 1, \"upper\": 10, \"scale\": \"log\"}}, \"objective\": \"track\", "
      "\"constraints\": [{\"functional\": \"track\", \"lower\": 0, \"upper\": 2}], "
      "\"algorithm\": \"slsqp\", \"ftol_rel\": 1e-12, \"ftol_abs\": 0, \"xtol_rel\": 1e-10, "
      "\"maxtime\": 60, \"maxeval\": 50}, \"sensitivity\": \"auto\"");
  if (CHECK(text != NULL)) test_mutations(text, "optimization mutations", 400);
  free(text);
}

/* ---------------------------------------------------------------------------------------------
   the complete examples of docs/model-format.md (each fenced block after the line
   "<!-- complete model -->") load, so that the documentation stays true */

/* the block after "<!-- five-bar addition -->" (a B-spline torque bound to a vector parameter),
   merged into the five-bar example: its members are added to the five-bar's objects and arrays */
static void check_fivebar_addition(const char* fivebar, const char* addition) {
  cJSON *base = cJSON_Parse(fivebar), *add = cJSON_Parse(addition);
  char* text = NULL;
  mb_desc d;
  mb_error err;
  memset(&d, 0, sizeof d);
  if (!CHECK_MSG(base && add, "five-bar addition parses")) goto done;
  for (const cJSON* e = add->child; e; e = e->next) {
    cJSON* to = cJSON_GetObjectItemCaseSensitive(base, e->string);
    if (!CHECK_MSG(to != NULL && to->type == e->type, e->string)) goto done;
    for (const cJSON* x = e->child; x; x = x->next) {
      if (cJSON_IsObject(to))
        cJSON_AddItemToObject(to, x->string, cJSON_Duplicate(x, 1));
      else
        cJSON_AddItemToArray(to, cJSON_Duplicate(x, 1));
    }
  }
  text = cJSON_PrintUnformatted(base);
  mb_status s = mb_desc_parse_json(text, "docs/model-format.md five-bar addition", &d, &err);
  if (!CHECK_MSG(s == MB_OK, err.message)) goto done;

  /* 5 + 20 parameters; the torque's coefficients are u[0]..u[19], zero */
  CHECK(d.nparam == 25 && strcmp(d.param_name[5], "u[0]") == 0 &&
        strcmp(d.param_name[24], "u[19]") == 0);
  CHECK(d.nforce == 3 && d.force[2].type == MB_FORCE_TORQUE && d.force[2].body[0] == 0);
  const mb_func_desc* f = &d.force[2].func[0];
  CHECK(f->type == MB_FUNC_BSPLINE && f->ncoef == 20 && f->time[0] == 0 && f->time[1] == 5);
  for (int j = 0; j < f->ncoef && d.nparam == 25; j++)
    CHECK(f->coef[j].param == 5 + j && f->coef[j].value == 0);

done:
  mb_desc_free(&d);
  free(text);
  cJSON_Delete(base);
  cJSON_Delete(add);
}

/* a copy of the fenced JSON block after `marker` in text (NULL, with a failed check, if none) */
static char* fenced_json(const char* text, const char* marker) {
  const char *open = strstr(text, marker), *close;
  if (!CHECK_MSG(open != NULL, marker) || !CHECK((open = strstr(open, "```json\n")) != NULL))
    return NULL;
  open += 8;
  if (!CHECK((close = strstr(open, "\n```")) != NULL)) return NULL;
  char* json = calloc((size_t)(close - open) + 1, 1);
  if (CHECK(json != NULL)) memcpy(json, open, (size_t)(close - open));
  return json;
}

/* the blocks after "<!-- five-bar optimization -->" (added to the five-bar example) and
   "<!-- five-bar optimization with constraint -->" (added to the five-bar example with the
   five-bar addition): their members become top-level members of the model */
static void check_fivebar_optimization(const char* fivebar, const char* addition, const char* opt,
                                       const char* opt_con) {
  const char* blocks[2] = {opt, opt_con};
  for (int b = 0; b < 2; b++) {
    cJSON *base = cJSON_Parse(fivebar), *add = addition ? cJSON_Parse(addition) : NULL;
    cJSON* top = blocks[b] ? cJSON_Parse(blocks[b]) : NULL;
    char* text = NULL;
    mb_desc d;
    mb_error err;
    memset(&d, 0, sizeof d);
    if (!CHECK_MSG(base && top && (b == 0 || add), "five-bar optimization parses")) goto next;
    if (b == 1)
      for (const cJSON* e = add->child; e; e = e->next) {
        cJSON* to = cJSON_GetObjectItemCaseSensitive(base, e->string);
        if (!CHECK_MSG(to != NULL && to->type == e->type, e->string)) goto next;
        for (const cJSON* x = e->child; x; x = x->next) {
          if (cJSON_IsObject(to))
            cJSON_AddItemToObject(to, x->string, cJSON_Duplicate(x, 1));
          else
            cJSON_AddItemToArray(to, cJSON_Duplicate(x, 1));
        }
      }
    for (const cJSON* e = top->child; e; e = e->next) {
      if (!CHECK_MSG(cJSON_GetObjectItemCaseSensitive(base, e->string) == NULL, e->string))
        goto next;
      cJSON_AddItemToObject(base, e->string, cJSON_Duplicate(e, 1));
    }
    text = cJSON_PrintUnformatted(base);
    mb_status s = mb_desc_parse_json(text, "docs/model-format.md five-bar optimization", &d, &err);
    if (!CHECK_MSG(s == MB_OK, err.message)) goto next;
    const mb_optim_desc* o = &d.optimization;
    if (b == 0) {
      /* problems/fivebar_springs.json: the two spring lengths, forward sensitivity */
      CHECK(o->nvar == 2 && o->var[0].param == mb_desc_param_index(&d, "Ls1") &&
            o->var[1].param == mb_desc_param_index(&d, "Ls2"));
      CHECK(o->nvar == 2 && o->var[0].lower == 1 && o->var[1].upper == 4 && !o->var[1].log_scale);
      CHECK(o->objective == 0 && o->ncon == 0 && strcmp(o->algorithm, "lbfgs") == 0);
      CHECK(o->ftol_rel == 1e-14 && o->ftol_abs == 1e-16 && o->xtol_rel == 1e-12 &&
            o->maxtime == 0 && o->maxeval == 60);
      CHECK(d.sensitivity == 1);
    } else {
      /* u[0]..u[19] and m_A1 on a log scale; psi2 <= 10; mma; the other settings default */
      const int u0 = mb_desc_param_index(&d, "u[0]");
      CHECK(o->nvar == 21 && u0 == 5);
      for (int j = 0; j < 20 && o->nvar == 21; j++)
        CHECK(o->var[j].param == u0 + j && o->var[j].lower == -20 && o->var[j].upper == 20 &&
              !o->var[j].log_scale);
      CHECK(o->nvar == 21 && o->var[20].param == mb_desc_param_index(&d, "m_A1") &&
            o->var[20].log_scale && o->var[20].lower == 0.5 && o->var[20].upper == 2);
      CHECK(o->objective == 0 && o->ncon == 1 && o->con[0].functional == 1 &&
            o->con[0].upper == 10 && isinf(o->con[0].lower) && o->con[0].lower < 0);
      CHECK(strcmp(o->algorithm, "mma") == 0 && o->maxeval == 100 && o->ftol_rel == 1e-10 &&
            o->ftol_abs == 0 && o->xtol_rel == 1e-8 && o->maxtime == 0);
      CHECK(d.sensitivity == 0);
    }
  next:
    mb_desc_free(&d);
    free(text);
    cJSON_Delete(base);
    cJSON_Delete(add);
    cJSON_Delete(top);
  }
}

/* the block after "<!-- controller example -->": a pendulum held by a PID torque */
static void check_controller_example(const char* text) {
  const char* open = strstr(text, "<!-- controller example -->");
  const char* close;
  if (!CHECK(open != NULL) || !CHECK((open = strstr(open, "```json\n")) != NULL)) return;
  open += 8;
  if (!CHECK((close = strstr(open, "\n```")) != NULL)) return;
  char* json = calloc((size_t)(close - open) + 1, 1);
  if (!CHECK(json != NULL)) return;
  memcpy(json, open, (size_t)(close - open));
  mb_desc d;
  mb_error err;
  mb_status s = mb_desc_parse_json(json, "docs/model-format.md controller example", &d, &err);
  if (CHECK_MSG(s == MB_OK, err.message) && CHECK(d.ncontroller == 1 && d.nsensor == 4)) {
    const mb_controller_desc* k = &d.controller[0];
    CHECK(k->actuator == MB_ACTUATOR_TORQUE && k->body == 0 && k->direction[2] == 1);
    CHECK(k->nterm == 1 && strcmp(k->term[0].output, "x") == 0);
    CHECK(k->kp.param == mb_desc_param_index(&d, "Kp") && k->kd.param >= 0 && k->ki.param >= 0);
    CHECK(k->has_reference && k->reference.type == MB_FUNC_CONSTANT);
    CHECK_NEAR(k->reference.coef[0].value, sin(0.5));
    CHECK(k->has_saturation && k->saturation.value == 20);
    CHECK(d.sensor[2].type == MB_SENSOR_CONTROL && d.sensor[2].force == 0);
    CHECK(d.sensor[3].type == MB_SENSOR_CONTROL_ERROR && d.sensor[3].force == 0);
  }
  mb_desc_free(&d);
  free(json);
}

static void test_doc_examples(void) {
  FILE* file = fopen("docs/model-format.md", "rb");
  char* text = NULL;
  char* addition = NULL;
  char *opt = NULL, *opt_con = NULL;
  long size;
  int nexample = 0;
  if (!CHECK_MSG(file != NULL, "docs/model-format.md (run from the repository root)")) return;
  fseek(file, 0, SEEK_END);
  size = ftell(file);
  fseek(file, 0, SEEK_SET);
  text = calloc((size_t)size + 1, 1);
  if (text && fread(text, 1, (size_t)size, file) == (size_t)size) {
    check_controller_example(text);
    /* copied before the loop below cuts the text at the end of each block */
    opt = fenced_json(text, "<!-- five-bar optimization -->");
    opt_con = fenced_json(text, "<!-- five-bar optimization with constraint -->");
    /* the five-bar addition comes before the complete models */
    char* at = strstr(text, "<!-- five-bar addition -->");
    if (CHECK(at != NULL) && CHECK((addition = strstr(at, "```json\n")) != NULL)) {
      addition += 8;
      char* close = strstr(addition, "\n```");
      if (CHECK(close != NULL))
        *close = '\0';
      else
        addition = NULL;
    }
    for (at = strstr(addition ? addition + strlen(addition) + 1 : text, "<!-- complete model -->");
         at; at = strstr(at + 1, "<!-- complete model -->")) {
      char *open = strstr(at, "```json\n"), *close;
      if (!CHECK(open != NULL)) break;
      open += 8;
      close = strstr(open, "\n```");
      if (!CHECK(close != NULL)) break;
      *close = '\0';
      mb_desc d;
      mb_error err;
      mb_status s = mb_desc_parse_json(open, "docs/model-format.md example", &d, &err);
      CHECK_MSG(s == MB_OK, err.message);

      /* the first example is the five-bar benchmark */
      if (s == MB_OK && nexample == 0) {
        int ls1 = mb_desc_param_index(&d, "Ls1"), la1 = mb_desc_param_index(&d, "L_A1");
        CHECK(d.dim == 2 && d.nbody == 4 && d.njoint == 5 && d.nforce == 2 && d.nprescribe == 2);
        CHECK(ls1 >= 0 && d.force[0].natural_length.param == ls1);
        CHECK_NEAR(d.force[0].natural_length.value, sqrt(5.0));
        CHECK(la1 >= 0 && d.body[0].marker[1].point[0].param == la1);
        CHECK_NEAR(d.body[0].marker[1].point[0].value, sqrt(2.0));
        CHECK_NEAR(d.body[1].inertia[2].value, 1.5 * 3.25 / 12);
        /* the benchmark's objectives psi1, psi2, psi3 */
        CHECK(d.nfunctional == 3 && d.functional[0].nterm == 2 && d.functional[2].nterm == 2);
        CHECK(d.nfunctional == 3 && d.functional[0].term[1].has_reference &&
              d.functional[0].term[1].reference.coef[0].value == -2);
        CHECK(d.nfunctional == 3 && strcmp(d.functional[1].term[0].output, "v2.x") == 0 &&
              !d.functional[1].term[0].has_reference);
        if (addition) check_fivebar_addition(open, addition);
        check_fivebar_optimization(open, addition, opt, opt_con);
      }
      mb_desc_free(&d);
      nexample++;
      at = close + 1;
    }
  }
  CHECK(nexample >= 2);
  free(opt);
  free(opt_con);
  free(text);
  fclose(file);
}

/* ---------------------------------------------------------------------------------------------
   odds and ends */

static void test_misc(void) {
  mb_desc d;
  mb_error err;

  /* a file that does not exist */
  mb_status s = mb_desc_load_json("tests/models/bad/no_such_file.json", &d, &err);
  CHECK(s == MB_ERR_IO && err.status == MB_ERR_IO);
  CHECK(strstr(err.message, "tests/models/bad/no_such_file.json: ") == err.message);
  CHECK(strchr(err.message, '\n') == NULL);

  /* a key with a line break stays on one line in the message */
  s = mb_desc_parse_json("{\"dimension\": 2, \"a\\nb\": 1}", "nl", &d, &err);
  CHECK(s == MB_ERR_MODEL && strchr(err.message, '\n') == NULL &&
        strstr(err.message, "unknown key"));

  /* a syntax error on a later line, and one at the end of the text */
  s = mb_desc_parse_json("{\n  \"dimension\": 2,\n  \"bodies\": [}\n", "syn", &d, &err);
  CHECK_MSG(
      s == MB_ERR_JSON && strstr(err.message, "syn: line 3, column 14: syntax error near '}'"),
      err.message);
  s = mb_desc_parse_json("{\"dimension\": 2", "eof", &d, &err);
  CHECK_MSG(s == MB_ERR_JSON && strstr(err.message, "syntax error"), err.message);
  s = mb_desc_parse_json("{} {}", "trail", &d, &err);
  CHECK_MSG(s == MB_ERR_JSON && strstr(err.message, "line 1, column 4"), err.message);

  /* "$schema" names the file's JSON Schema for editors: any text, nothing else */
  s = mb_desc_parse_json(
      "{\"$schema\": \"../docs/model.schema.json\", \"dimension\": 2, \"bodies\": [{\"name\": "
      "\"b\", "
      "\"mass\": 1, \"inertia\": 1}]}",
      "schema", &d, &err);
  CHECK_MSG(s == MB_OK, err.message);
  mb_desc_free(&d);
  expect_failure("{\"$schema\": 2020, \"dimension\": 2, \"bodies\": []}", "schema_number",
                 "$schema", "expected a string, got number");

  /* a parameter used as a parameter value is not allowed; nor is a bare name */
  s = mb_desc_parse_json(
      "{\"dimension\": 2, \"parameters\": {\"a\": 1, \"b\": \"$a\"}, \"bodies\": []}", "p", &d,
      &err);
  CHECK_MSG(s == MB_ERR_MODEL && strstr(err.message, "parameters.b: expected a number"),
            err.message);

  /* NULL arguments and a NULL error record */
  CHECK(mb_desc_parse_json(NULL, "x", &d, &err) == MB_ERR_ARGUMENT);
  CHECK(mb_desc_parse_json("{}", "x", NULL, &err) == MB_ERR_ARGUMENT);
  CHECK(mb_desc_load_json(NULL, &d, &err) == MB_ERR_ARGUMENT);
  CHECK(mb_desc_parse_json("{\"dimension\": 5}", "x", &d, NULL) == MB_ERR_MODEL);
  CHECK(d.dim == 0);
  CHECK(mb_desc_parse_json("[", NULL, &d, &err) == MB_ERR_JSON);

  /* a spatial inertia at the triangle limit (thin disc: Izz = Ixx + Iyy) is accepted */
  s = mb_desc_parse_json(
      "{\"dimension\": 3, \"bodies\": [{\"name\": \"disc\", \"mass\": 1, "
      "\"inertia\": [0.25, 0.25, 0.5]}]}",
      "disc", &d, &err);
  CHECK_MSG(s == MB_OK, err.message);
  mb_desc_free(&d);
  mb_settings_default(NULL);
}

int main(void) {
  test_bad_models();
  test_planar();
  test_spatial();
  test_vector_params();
  test_mutations(planar_model, "planar", 1000);
  test_mutations(spatial_model, "spatial", 1000);
  test_mutations(vector_model, "vector", 400);
  test_controllers();
  test_controller_misc();
  test_mutations(controller_model, "controllers", 300);
  test_mutations(controller_spatial_model, "controllers spatial", 100);
  test_vector_misc();
  test_optimization();
  test_doc_examples();
  test_misc();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail != 0;
}
