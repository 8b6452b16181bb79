// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/gemm/registry.hpp"

#include <algorithm>
#include <memory>
#include <string>

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
    add_ozaki_fp32_device_backends(owned);
    add_ozaki_slice_device_backends(owned);
    add_dgemm_auto_backends(owned);
    add_slfp_backends(owned);
    add_host_backends(owned);
    add_host_ozaki_backends(owned);
    add_host_ozaki2_backends(owned);
    add_host_ozaki_slice_backends(owned);
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

BackendCall find_backend_call(const std::string& text) {
  const std::size_t colon = text.find(':');
  BackendCall call;
  call.text = text;
  call.backend = &find_backend(text.substr(0, colon));
  if (colon == std::string::npos) return call;
  std::size_t start = colon + 1;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos)
      throw InvalidArgument("backend \"" + text + "\": parameter \"" + item + "\" is not key=value");
    const std::string key = item.substr(0, equals), value = item.substr(equals + 1);
    std::size_t used = 0;
    std::int64_t number = 0;
    try {
      number = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (value.empty() || used != value.size())
      throw InvalidArgument("backend \"" + text + "\": " + key + " = \"" + value + "\" is not an integer");
    call.parameters[key] = number;
    start = end + 1;
  }
  if (const Support given = call.backend->check_parameters(call.parameters); !given)
    throw InvalidArgument("backend \"" + text + "\": " + given.reason);
  return call;
}

}  // namespace mixsolve::gemm
