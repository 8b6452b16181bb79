// SPDX-License-Identifier: BSD-3-Clause
#include "tuning.hpp"

namespace mixsolve::solvers_detail {

Tuning& tuning() {
  static Tuning knobs;
  return knobs;
}

}  // namespace mixsolve::solvers_detail
