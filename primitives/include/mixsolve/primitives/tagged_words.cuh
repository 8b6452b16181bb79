// SPDX-License-Identifier: BSD-3-Clause
// Tagged words: how blocks of one grid pass values without a grid barrier or a fence. A word is
// 64 bits, a 16-bit tag above a 48-bit payload, stored and loaded whole with relaxed GPU-scope
// accesses (PTX st/ld.relaxed.gpu): 64-bit accesses are single-copy atomic, so a reader that sees
// the tag it waits for sees the payload stored with it. A writer publishes with a tag that is new
// for each round; readers poll until the tag appears (memory consistency model: PTX ISA, "Memory
// Consistency Model", morally strong relaxed accesses).
#pragma once

namespace mixsolve::primitives {

__device__ inline void store_word(unsigned long long* word, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(v) : "memory");
}
__device__ inline void publish(unsigned long long* word, unsigned tag, unsigned long long payload) {
  store_word(word, (static_cast<unsigned long long>(tag) << 48) | payload);
}
__device__ inline unsigned long long load_word(const unsigned long long* word) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
}
__device__ inline bool tagged(unsigned long long v, unsigned tag) { return static_cast<unsigned>(v >> 48) == tag; }

}  // namespace mixsolve::primitives
