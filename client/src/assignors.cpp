// Client-side partition assignors of the classic consumer protocol. The
// rules follow the Java client's RangeAssignor, RoundRobinAssignor and (in
// outline: balanced, sticky, cooperative) CooperativeStickyAssignor.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "kwire/client/group.hpp"

namespace kwire::client {

const char* assignor_name(Assignor a) {
  switch (a) {
    case Assignor::range: return "range";
    case Assignor::roundrobin: return "roundrobin";
    case Assignor::cooperative_sticky: return "cooperative-sticky";
  }
  return "?";
}

namespace {

// Java's member order: static members first, by instance id; then member id.
bool member_before(const MemberSubscription* a, const MemberSubscription* b) {
  if (a->group_instance_id && b->group_instance_id) return *a->group_instance_id < *b->group_instance_id;
  if (a->group_instance_id) return true;
  if (b->group_instance_id) return false;
  return a->member_id < b->member_id;
}

std::vector<const MemberSubscription*> ordered(const std::vector<MemberSubscription>& members) {
  std::vector<const MemberSubscription*> out;
  for (auto& m : members) out.push_back(&m);
  std::sort(out.begin(), out.end(), member_before);
  return out;
}

bool subscribes(const MemberSubscription& m, const std::string& topic) {
  return std::find(m.topics.begin(), m.topics.end(), topic) != m.topics.end();
}

GroupAssignment empty_for(const std::vector<MemberSubscription>& members) {
  GroupAssignment out;
  for (auto& m : members) out[m.member_id];
  return out;
}

GroupAssignment range(const std::vector<MemberSubscription>& members,
                      const std::map<std::string, std::int32_t>& counts) {
  GroupAssignment out = empty_for(members);
  const auto order = ordered(members);
  for (auto& [topic, n] : counts) {
    std::vector<const MemberSubscription*> subs;
    for (auto* m : order)
      if (subscribes(*m, topic)) subs.push_back(m);
    if (subs.empty()) continue;
    const std::int32_t k = static_cast<std::int32_t>(subs.size());
    const std::int32_t per = n / k, extra = n % k;
    for (std::int32_t i = 0; i < k; ++i) {
      const std::int32_t start = per * i + std::min(i, extra);
      const std::int32_t len = per + (i < extra ? 1 : 0);
      for (std::int32_t p = start; p < start + len; ++p) out[subs[i]->member_id].push_back({topic, p});
    }
  }
  return out;
}

GroupAssignment round_robin(const std::vector<MemberSubscription>& members,
                            const std::map<std::string, std::int32_t>& counts) {
  GroupAssignment out = empty_for(members);
  const auto order = ordered(members);
  if (order.empty()) return out;
  std::size_t next = 0;
  for (auto& [topic, n] : counts) {
    bool any = false;
    for (auto* m : order) any = any || subscribes(*m, topic);
    if (!any) continue;
    for (std::int32_t p = 0; p < n; ++p) {
      while (!subscribes(*order[next % order.size()], topic)) ++next;
      out[order[next % order.size()]->member_id].push_back({topic, p});
      ++next;
    }
  }
  return out;
}

GroupAssignment cooperative_sticky(const std::vector<MemberSubscription>& members,
                                   const std::map<std::string, std::int32_t>& counts) {
  GroupAssignment out = empty_for(members);
  const auto order = ordered(members);
  std::map<std::string, const MemberSubscription*> by_id;
  for (auto* m : order) by_id[m->member_id] = m;
  auto exists = [&](const TopicPartition& tp) {
    auto it = counts.find(tp.topic);
    return it != counts.end() && tp.partition >= 0 && tp.partition < it->second;
  };
  // Current owners: a claim counts when the partition exists and the member
  // still subscribes to its topic; of two claims the newer generation wins.
  std::map<TopicPartition, std::pair<std::string, std::int32_t>> owner;
  for (auto* m : order)
    for (auto& tp : m->owned) {
      if (!exists(tp) || !subscribes(*m, tp.topic)) continue;
      auto it = owner.find(tp);
      if (it == owner.end() || m->generation > it->second.second) owner[tp] = {m->member_id, m->generation};
    }
  std::map<std::string, std::set<TopicPartition>> target;
  for (auto* m : order) target[m->member_id];
  for (auto& [tp, o] : owner) target[o.first].insert(tp);
  // Every other partition goes to the least loaded subscribed member.
  auto least = [&](const std::string& topic, const std::string* except) -> const MemberSubscription* {
    const MemberSubscription* best = nullptr;
    for (auto* m : order) {
      if (!subscribes(*m, topic) || (except && m->member_id == *except)) continue;
      if (!best || target[m->member_id].size() < target[best->member_id].size()) best = m;
    }
    return best;
  };
  for (auto& [topic, n] : counts)
    for (std::int32_t p = 0; p < n; ++p) {
      TopicPartition tp{topic, p};
      if (owner.count(tp)) continue;
      if (auto* m = least(topic, nullptr)) target[m->member_id].insert(tp);
    }
  // Balance: move partitions from the most to the least loaded member that
  // may take them, while that narrows the gap to at most one.
  for (int round = 0; round < 100000; ++round) {
    bool moved = false;
    for (auto* from : order) {
      auto& have = target[from->member_id];
      for (auto it = have.begin(); it != have.end(); ++it) {
        auto* to = least(it->topic, &from->member_id);
        if (!to || target[to->member_id].size() + 1 >= have.size()) continue;
        target[to->member_id].insert(*it);
        have.erase(it);
        moved = true;
        break;
      }
      if (moved) break;
    }
    if (!moved) break;
  }
  // Cooperative: a partition changing hands between two live members is
  // left out until its owner has revoked it.
  for (auto& [id, tps] : target)
    for (auto& tp : tps) {
      auto o = owner.find(tp);
      if (o != owner.end() && o->second.first != id) continue;
      out[id].push_back(tp);
    }
  return out;
}

}  // namespace

GroupAssignment assign_partitions(Assignor assignor, const std::vector<MemberSubscription>& members,
                                  const std::map<std::string, std::int32_t>& partitions_per_topic) {
  switch (assignor) {
    case Assignor::range: return range(members, partitions_per_topic);
    case Assignor::roundrobin: return round_robin(members, partitions_per_topic);
    case Assignor::cooperative_sticky: return cooperative_sticky(members, partitions_per_topic);
  }
  throw ClientError(fmt::format("unknown assignor {}", static_cast<int>(assignor)));
}

}  // namespace kwire::client
