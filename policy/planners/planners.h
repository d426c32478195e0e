// The planners, one file each; policy/planner.h finds them by name.
#pragma once

#include "policy/planner.h"

namespace cuswap::policy::planners {

const Planner& cuswap_planner();    // cuswap.cpp
const Planner& seed_planner();      // seed.cpp
const Planner& vdnn_planner();      // vdnn.cpp
const Planner& capuchin_planner();  // capuchin.cpp
const Planner& lru_planner();       // lru.cpp
const Planner& ondemand_planner();  // ondemand.cpp

}  // namespace cuswap::policy::planners
