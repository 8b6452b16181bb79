// SPDX-License-Identifier: BSD-3-Clause
// Internal: each backend family adds its instances to the registry's list.
#pragma once

#include <memory>
#include <vector>

#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm {

void add_host_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_host_ozaki_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_host_ozaki2_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_host_ozaki_slice_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_ozaki2_device_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_ozaki_fp32_device_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_ozaki_slice_device_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_dgemm_auto_backends(std::vector<std::unique_ptr<Backend>>& out);

namespace detail {
// ozaki2-int8's device workspace for an m x n x k product with `moduli` moduli and C in panels
// of `panel` columns (a multiple of 16): A's residues, one panel's B residues and INT32 products.
std::size_t ozaki2_int8_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, int moduli, std::int64_t panel);
}  // namespace detail
void add_cublas_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_corrected_sgemm_backends(std::vector<std::unique_ptr<Backend>>& out);
void add_slfp_backends(std::vector<std::unique_ptr<Backend>>& out);

}  // namespace mixsolve::gemm
