// SPDX-License-Identifier: BSD-3-Clause
// cuSOLVER's iterative-refinement solvers (IRSXgesv, IRSXgels) as the benchmarks run them: the
// lowest precision by name and the parameter and information objects, destroyed however a run
// ends (a suite goes on after a method throws).
#pragma once

#include <cusolverDn.h>

#include <string>

#include "mixsolve/core/error.hpp"

namespace mixsolve::bench {

inline cusolverPrecType_t irs_precision(const std::string& name) {
  if (name == "32F") return CUSOLVER_R_32F;
  if (name == "TF32") return CUSOLVER_R_TF32;
  if (name == "16F") return CUSOLVER_R_16F;
  if (name == "16BF") return CUSOLVER_R_16BF;
  throw InvalidArgument("--irs: \"" + name + "\" is not one of 32F, TF32, 16F, 16BF");
}

struct IrsObjects {
  cusolverDnIRSParams_t params = nullptr;
  cusolverDnIRSInfos_t infos = nullptr;
  IrsObjects() = default;
  IrsObjects(const IrsObjects&) = delete;
  IrsObjects& operator=(const IrsObjects&) = delete;
  ~IrsObjects() {
    if (infos) cusolverDnIRSInfosDestroy(infos);
    if (params) cusolverDnIRSParamsDestroy(params);
  }
};

}  // namespace mixsolve::bench
