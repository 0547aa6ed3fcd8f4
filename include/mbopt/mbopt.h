/* mbopt: gradient-based design optimisation of multibody systems. Umbrella header. */
#ifndef MBOPT_MBOPT_H
#define MBOPT_MBOPT_H

#include "mbopt/version.h"
#include "mbopt/status.h"
#include "mbopt/desc.h"
#include "mbopt/model.h"
#include "mbopt/simulate.h"

#endif
