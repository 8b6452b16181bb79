// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/gemm/registry.hpp"

#include <memory>

#include "backends.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::gemm {

namespace {
struct Registry {
  std::vector<std::unique_ptr<Backend>> owned;
  std::vector<const Backend*> view;
  Registry() {
    add_cublas_backends(owned);
    add_corrected_sgemm_backends(owned);
    add_ozaki2_device_backends(owned);
    add_host_backends(owned);
    add_host_ozaki_backends(owned);
    add_host_ozaki2_backends(owned);
    for (const auto& b : owned) view.push_back(b.get());
  }
};
const Registry& registry() {
  static const Registry r;
  return r;
}
}  // namespace

const std::vector<const Backend*>& all_backends() { return registry().view; }

std::vector<const Backend*> available_backends(const Context& ctx) {
  std::vector<const Backend*> out;
  for (const Backend* b : all_backends())
    if (b->unavailable_reason(ctx).empty()) out.push_back(b);
  return out;
}

const Backend& find_backend(const std::string& name) {
  for (const Backend* b : all_backends())
    if (b->name() == name) return *b;
  std::string names;
  for (const Backend* b : all_backends()) names += (names.empty() ? "" : ", ") + b->name();
  throw InvalidArgument("find_backend: no backend named \"" + name + "\"; known: " + names);
}

}  // namespace mixsolve::gemm
