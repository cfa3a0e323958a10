#include "eval/cuda/compile_cpus.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string_view>
#include <thread>

namespace isletune::cuda {

std::optional<NodeShare> parse_node_share(const std::string& whole) {
  constexpr std::string_view kOverlap = ":overlap";
  std::string text = whole;
  const bool overlap = text.ends_with(kOverlap);
  if (overlap)
    text.resize(text.size() - kOverlap.size());
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size())
    return std::nullopt;
  const std::string a = text.substr(0, slash), b = text.substr(slash + 1);
  const auto digits = [](const std::string& s) {
    return s.size() <= 6 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(a) || !digits(b))
    return std::nullopt;
  const NodeShare s{std::atoi(a.c_str()), std::atoi(b.c_str()), overlap};
  if (s.ranks < 1 || s.rank < 0 || s.rank >= s.ranks)
    return std::nullopt;
  return s;
}

std::vector<int> cpu_slice(const std::vector<int>& node, NodeShare s) {
  if (node.empty() || s.ranks < 1 || s.rank < 0 || s.rank >= s.ranks)
    return {};
  const auto n = static_cast<long long>(node.size());
  if (s.ranks > n)  // more ranks than CPUs: one CPU each, round-robin
    return {node[static_cast<std::size_t>(s.rank % n)]};
  const long long begin = n * s.rank / s.ranks, end = n * (s.rank + 1) / s.ranks;
  return {node.begin() + begin, node.begin() + end};
}

std::vector<int> compile_cpus(const std::vector<int>& own, const std::vector<int>& node,
                              NodeShare s) {
  const std::vector<int> slice = cpu_slice(node, s);
  if (slice.empty() || (!s.bindings_overlap && own.size() >= slice.size()))
    return own;
  return slice;
}

std::string node_share_text(NodeShare s) {
  return std::to_string(s.rank) + "/" + std::to_string(s.ranks) +
         (s.bindings_overlap ? ":overlap" : "");
}

bool any_overlap(const std::vector<std::vector<int>>& bindings) {
  std::set<int> seen;
  for (const auto& cpus : bindings) {
    for (const int c : std::set<int>(cpus.begin(), cpus.end())) {
      if (!seen.insert(c).second)
        return true;
    }
  }
  return false;
}

namespace {

std::vector<int> cpus_of(const cpu_set_t& set) {
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set))
      out.push_back(c);
  }
  return out;
}

bool set_cpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE)
      CPU_SET(c, &set);
  }
  return CPU_COUNT(&set) > 0 && ::sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace

std::vector<int> current_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0)
    return {};
  return cpus_of(set);
}

std::vector<int> take_compile_cpus(NodeShare s) {
  const std::vector<int> own = current_cpus();
  if (own.empty())
    return own;
  // Ask for every online CPU: the kernel grants those the process's cpuset allows.
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<int> all;
  for (int c = 0; c < std::min<long>(online, CPU_SETSIZE); ++c)
    all.push_back(c);
  if (!set_cpus(all))
    return own;
  const std::vector<int> node = current_cpus();
  if (!set_cpus(compile_cpus(own, node, s)))
    set_cpus(own);
  return current_cpus();
}

std::vector<int> probe_compile_cpus(NodeShare s) {
  std::vector<int> cpus;
  // A new thread starts with the caller's affinity; setting its own changes no one else's.
  std::thread probe([&] { cpus = take_compile_cpus(s); });
  probe.join();
  return cpus;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    if (!out.empty())
      out += ',';
    out += std::to_string(cpus[i]);
    if (j > i)
      out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace isletune::cuda
