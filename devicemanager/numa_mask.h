// NumaMask: a set of NUMA node IDs as a bitmask, the affinity a topology manager admits and the
// device manager's hints carry. Nodes 0..63; a plain value.
#pragma once

#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace devmgr::devicemanager {

class NumaMask {
 public:
  NumaMask() = default;
  NumaMask(std::initializer_list<int> nodes) {
    for (int node : nodes) Add(node);
  }
  static NumaMask FromBits(uint64_t bits) {
    NumaMask mask;
    mask.bits_ = bits;
    return mask;
  }

  // The nodes a mask can hold are 0 .. kMaxNode-1 (no machine the kubelet supports has more).
  static constexpr int kMaxNode = 64;

  // Add ignores nodes outside 0 .. kMaxNode-1.
  void Add(int node) {
    if (node >= 0 && node < kMaxNode) bits_ |= uint64_t{1} << node;
  }
  bool Contains(int64_t node) const {
    return node >= 0 && node < kMaxNode && (bits_ & (uint64_t{1} << node)) != 0;
  }
  int Count() const { return std::popcount(bits_); }
  bool empty() const { return bits_ == 0; }
  uint64_t bits() const { return bits_; }
  std::vector<int> Nodes() const {
    std::vector<int> nodes;
    for (int i = 0; i < kMaxNode; ++i) {
      if (Contains(i)) nodes.push_back(i);
    }
    return nodes;
  }

  bool operator==(const NumaMask&) const = default;

 private:
  uint64_t bits_ = 0;
};

}  // namespace devmgr::devicemanager
