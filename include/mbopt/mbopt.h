/* mbopt: gradient-based design optimisation of multibody systems. Umbrella header: every public
   header of the library. */
#ifndef MBOPT_MBOPT_H
#define MBOPT_MBOPT_H

#include "mbopt/version.h"
#include "mbopt/status.h"
#include "mbopt/desc.h"
#include "mbopt/model.h"
#include "mbopt/simulate.h"
#include "mbopt/sensitivity.h"
#include "mbopt/gradient.h"
#include "mbopt/optimize.h"
#include "mbopt/optim.h"
#include "mbopt/binding.h"

#endif
