// SPDX-License-Identifier: BSD-3-Clause
// Eigen's blocked products size their blocks from the CPU's cache sizes (CPUID), so their
// rounding, and with it the test matrices and references the host tests build with Eigen (and the
// host backends' products), differ between machines. The host tests run with Eigen's own x86
// defaults (Eigen/src/Core/products/GeneralBlockPanelKernel.h) on every machine, so that a verdict
// does not depend on the machine CI runs on.
#include <Eigen/Core>

namespace {

const bool kEigenBlockingPinned = [] {
  Eigen::setCpuCacheSizes(32 * 1024, 256 * 1024, 2 * 1024 * 1024);
  return true;
}();

}  // namespace
