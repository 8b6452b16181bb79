// SPDX-License-Identifier: BSD-3-Clause
#include <cuda_runtime.h>

#include <cmath>
#include <sstream>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/internal/launch.hpp"
#include "mixsolve/core/random.hpp"

namespace mixsolve {

std::string RandomSpec::name() const {
  std::ostringstream s;
  if (distribution == Distribution::Phi) s << "phi(" << lo << ")";
  else s << (distribution == Distribution::Uniform ? "uniform(" : "exp_rand(") << lo << "," << hi << ")";
  return s.str();
}

namespace {

template <class T>
__global__ void fill_random_kernel(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                   RandomSpec spec) {
  const std::int64_t total = rows * cols;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    if constexpr (sizeof(T) == 4)
      data[i + j * ld] = random_float(spec, static_cast<std::uint64_t>(idx));
    else
      data[i + j * ld] = random_double(spec, static_cast<std::uint64_t>(idx));
  }
}

template <class T>
__global__ void fill_constant_kernel(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, T value) {
  const std::int64_t total = rows * cols;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x)
    data[idx % rows + (idx / rows) * ld] = value;
}

using detail::blocks_for;

template <class T>
void fill_random_impl(const MatrixView<T>& m, const RandomSpec& spec, cudaStream_t stream) {
  detail::check_view("fill_random", "m", m);
  if (spec.distribution == Distribution::ExpRand && !(spec.hi > spec.lo))
    throw InvalidArgument("fill_random: exp_rand(" + std::to_string(spec.lo) + ", " +
                          std::to_string(spec.hi) + ") needs a < b");
  if (spec.distribution == Distribution::Phi && !(spec.lo >= 0 && std::isfinite(spec.lo)))
    throw InvalidArgument("fill_random: phi(" + std::to_string(spec.lo) + ") needs a finite phi >= 0");
  if (spec.distribution == Distribution::Phi && !(spec.lo >= 0 && std::isfinite(spec.lo)))
    throw InvalidArgument("fill_random: phi(" + std::to_string(spec.lo) + ") needs a finite phi >= 0");
  if (m.empty()) return;
  if (m.memory == Memory::Host) {
    for (std::int64_t j = 0; j < m.cols; ++j)
      for (std::int64_t i = 0; i < m.rows; ++i) {
        const auto idx = static_cast<std::uint64_t>(i + j * m.rows);
        if constexpr (sizeof(T) == 4) m(i, j) = random_float(spec, idx);
        else m(i, j) = random_double(spec, idx);
      }
    return;
  }
  fill_random_kernel<<<blocks_for(m.rows * m.cols), 256, 0, stream>>>(m.data, m.rows, m.cols, m.ld, spec);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template <class T>
void fill_constant_impl(const MatrixView<T>& m, T value, cudaStream_t stream) {
  detail::check_view("fill_constant", "m", m);
  if (m.empty()) return;
  if (m.memory == Memory::Host) {
    for (std::int64_t j = 0; j < m.cols; ++j)
      for (std::int64_t i = 0; i < m.rows; ++i) m(i, j) = value;
    return;
  }
  fill_constant_kernel<<<blocks_for(m.rows * m.cols), 256, 0, stream>>>(m.data, m.rows, m.cols, m.ld, value);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_random(const MatrixView<float>& m, const RandomSpec& spec, CUstream_st* stream) {
  fill_random_impl(m, spec, stream);
}
void fill_random(const MatrixView<double>& m, const RandomSpec& spec, CUstream_st* stream) {
  fill_random_impl(m, spec, stream);
}
void fill_constant(const MatrixView<float>& m, float value, CUstream_st* stream) {
  fill_constant_impl(m, value, stream);
}
void fill_constant(const MatrixView<double>& m, double value, CUstream_st* stream) {
  fill_constant_impl(m, value, stream);
}

}  // namespace mixsolve
