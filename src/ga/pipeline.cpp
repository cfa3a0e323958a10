// The pipeline (pipeline.hpp).
#include "ga/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace isletune {

int QueuedBrood::open() const {
  return static_cast<int>(
      std::count_if(results.begin(), results.end(), [](const auto& r) { return !r.has_value(); }));
}

void Pipeline::push(Brood b, Evaluator& evaluator) {
  QueuedBrood q;
  const std::size_t seq = first_seq_ + queue_.size();
  q.results.resize(b.fresh.size());
  q.timelines.resize(b.fresh.size());
  for (std::size_t i = 0; i < b.fresh.size(); ++i) {
    const Ticket t = evaluator.submit(b.fresh[i]);
    q.tickets.push_back(t);
    where_[t] = {seq, i};
  }
  q.brood = std::move(b);
  queue_.push_back(std::move(q));
}

int Pipeline::outstanding() const {
  int n = static_cast<int>(late_.size());
  for (const QueuedBrood& q : queue_)
    n += q.open();
  return n;
}

int Pipeline::returned() const {
  int n = 0;
  for (const QueuedBrood& q : queue_)
    n += static_cast<int>(q.results.size()) - q.open();
  return n;
}

int Pipeline::owed() const {
  int n = static_cast<int>(late_.size() + deferred_.size());
  for (const QueuedBrood& q : queue_)
    n += static_cast<int>(q.brood.fresh.size());
  return n;
}

std::vector<Setting> Pipeline::straggling() const {
  std::vector<Setting> out;
  for (const auto& [t, s] : late_)
    out.push_back(s);
  for (const auto& [s, c] : deferred_)
    out.push_back(s);
  return out;
}

int Pipeline::target(const Evaluator& evaluator) const {
  const int threads = evaluator.compile_threads();
  if (threads <= 0)
    return 2;
  int paced = threads;
  if (paced_ > 0 && gpu_s_ > 0) {
    // Compiles vary (a p90 twice the mean on an H200): half as many again as the means ask
    // for.
    const double compiles = std::ceil(1.5 * compile_s_ / gpu_s_);
    paced = static_cast<int>(std::clamp(compiles + 2, 2.0, static_cast<double>(threads + 4)));
  }
  if (!known_)
    return paced;
  // The queued proposals' measurements that have come back deepen the queue only once their
  // generations settle: they are the queue's fastest compiles, of generations not complete.
  // Counted at once, box2d2r 8192² needed 62.0 measurements to within 5 % of the optimum
  // (median of 100 seeds) against 58.5, one generation at a time 57.0
  // (docs/studies/2026-12-06-ramp-on-settled-generations.md).
  return std::min(paced, DepthRamp::most(known_() - returned()));
}

void Pipeline::learn_pace(const Measurement& m) {
  compile_s_ += m.compile_ms * 1e-3;
  gpu_s_ += (m.verify_ms + m.run_ms) * 1e-3;
  ++paced_;
}

void Pipeline::route(Completion c,
                     const std::function<void(const Setting&, const Completion&)>& on_late,
                     const Evaluator& evaluator) {
  learn_pace(c.measurement);
  if (const auto l = late_.find(c.ticket); l != late_.end()) {
    const Setting s = l->second;
    late_.erase(l);
    on_late(s, c);
    return;
  }
  const auto w = where_.find(c.ticket);
  if (w == where_.end())
    throw std::logic_error("Pipeline: a measurement of a ticket it did not queue");
  const auto [seq, slot] = w->second;
  where_.erase(w);
  QueuedBrood& q = queue_.at(seq - first_seq_);
  q.timelines[slot] = c.timeline;
  q.results[slot] = std::move(c.measurement);
  if (on_result_)
    on_result_(q.brood, slot, *q.results[slot], pipelined(evaluator));
}

bool Pipeline::top_up(Evaluator& evaluator, const std::function<std::optional<Brood>()>& propose) {
  while (broods() < max_broods_ && outstanding() < target(evaluator)) {
    std::optional<Brood> b = propose();
    if (!b)
      return false;
    push(std::move(*b), evaluator);
  }
  return true;
}

QueuedBrood Pipeline::take(Evaluator& evaluator,
                           const std::function<std::optional<Brood>()>& propose,
                           const std::function<void(const Setting&, const Completion&)>& on_late,
                           bool early, const std::function<bool()>& spent, int quorum) {
  if (queue_.empty())
    throw std::logic_error("Pipeline::take with no proposal queued");
  deliver(on_late);
  const bool overlap = pipelined(evaluator);
  const auto out_of_time = [&] { return overlap && spent && spent(); };
  bool more = overlap && propose && !out_of_time();  // propose() may still give a proposal
  // Topped up first, also when the oldest proposal has all come back already: an island
  // whose later proposals had all come back took them one generation after another without
  // proposing, and its queue ran dry meanwhile (an island of 4: 12.9 settings queued against
  // 20.3 for one of 16, in replay). Here, not right after a proposal settles: by now the
  // island has taken in its neighbours' migrants, which proposals made before then missed
  // (four islands of 4 then took 3.64 s of replay's clock to 5 % instead of 2.50).
  if (more)
    more = top_up(evaluator, propose);
  while (queue_.front().open() > 0) {
    if (out_of_time())
      break;
    const QueuedBrood& front = queue_.front();
    if (overlap && quorum >= 0 && static_cast<int>(front.results.size()) - front.open() >= quorum)
      break;
    if (more)
      more = top_up(evaluator, propose);
    // Nothing but the oldest proposal's own settings queued, and nothing more to propose:
    // it settles without them rather than hold every later proposal up.
    // Nor may it hold up the next proposal while the queue is short of its target only
    // because every proposal allowed is queued: once no more than kLateTail of its settings
    // are still out, it settles without them (the compile threads would idle otherwise).
    if (overlap && early && more && broods() >= max_broods_ && queue_.front().open() <= kLateTail &&
        outstanding() < target(evaluator))
      break;
    if (overlap && early && outstanding() == queue_.front().open() &&
        (!more || broods() >= max_broods_))
      break;
    std::optional<Completion> c = evaluator.next();
    if (!c)
      throw std::logic_error("Pipeline: the evaluator's queue ran dry with settings owed");
    route(std::move(*c), on_late, evaluator);
  }
  QueuedBrood out = std::move(queue_.front());
  queue_.erase(queue_.begin());
  ++first_seq_;
  for (std::size_t i = 0; i < out.tickets.size(); ++i) {
    if (!out.results[i]) {
      where_.erase(out.tickets[i]);
      late_.emplace(out.tickets[i], out.brood.fresh[i]);
    }
  }
  return out;
}

bool Pipeline::pump(Evaluator& evaluator, const std::function<std::optional<Brood>()>& propose) {
  if (!pipelined(evaluator))
    return false;
  if (propose)
    top_up(evaluator, propose);
  if (outstanding() == 0)
    return false;
  std::optional<Completion> c = evaluator.next();
  if (!c)
    throw std::logic_error("Pipeline: the evaluator's queue ran dry with settings owed");
  // A straggler's measurement waits for the next take().
  route(
      std::move(*c),
      [&](const Setting& s, const Completion& done) { deferred_.emplace_back(s, done); },
      evaluator);
  return true;
}

void Pipeline::deliver(const std::function<void(const Setting&, const Completion&)>& on_late) {
  std::vector<std::pair<Setting, Completion>> ready;
  ready.swap(deferred_);
  for (const auto& [s, c] : ready)
    on_late(s, c);
}

void Pipeline::drain_late(Evaluator& evaluator,
                          const std::function<void(const Setting&, const Completion&)>& on_late,
                          const std::function<bool()>& spent) {
  deliver(on_late);
  while (!late_.empty() && !(spent && spent())) {
    std::optional<Completion> c = evaluator.next();
    if (!c)
      throw std::logic_error("Pipeline: the evaluator's queue ran dry with settings owed");
    route(std::move(*c), on_late, evaluator);
  }
}

namespace {

void put_brood(ByteWriter& w, const Brood& b) {
  w.put(static_cast<std::uint8_t>(b.kind));
  w.put_ints(b.ids);
  w.put_ints(b.cells);
  w.put(static_cast<std::uint32_t>(b.bred.size()));
  for (const bool x : b.bred)
    w.put(static_cast<std::uint8_t>(x));
  w.put_ints(b.first_of);
  w.put(static_cast<std::uint32_t>(b.fresh.size()));
  for (const Setting& s : b.fresh)
    w.put_setting(s);
}

Brood get_brood(ByteReader& r) {
  Brood b;
  const auto kind = r.get<std::uint8_t>();
  if (kind > static_cast<std::uint8_t>(Brood::Kind::offspring))
    r.failed();
  b.kind = static_cast<Brood::Kind>(kind);
  b.ids = r.get_ints();
  b.cells = r.get_ints();
  b.bred.resize(r.get<std::uint32_t>());
  if (!b.bred.empty() && b.bred.size() != b.ids.size())
    r.failed();
  for (std::size_t i = 0; i < b.bred.size(); ++i)
    b.bred[i] = r.get<std::uint8_t>() != 0;
  b.first_of = r.get_ints();
  const std::uint32_t fresh = r.get<std::uint32_t>();
  if (fresh > b.ids.size() || b.cells.size() != b.ids.size() || b.first_of.size() != b.ids.size())
    r.failed();
  for (std::uint32_t i = 0; i < fresh; ++i)
    b.fresh.push_back(r.get_setting());
  for (const int f : b.first_of) {
    if (f < Brood::kDropped || f >= static_cast<int>(fresh))
      r.failed();
  }
  return b;
}

}  // namespace

void Pipeline::save(ByteWriter& w) const {
  w.put(compile_s_);
  w.put(gpu_s_);
  w.put(paced_);
  w.put(static_cast<std::uint32_t>(queue_.size()));
  for (const QueuedBrood& q : queue_) {
    put_brood(w, q.brood);
    for (std::size_t i = 0; i < q.tickets.size(); ++i) {
      w.put(q.tickets[i]);
      w.put(static_cast<std::uint8_t>(q.results[i].has_value()));
      if (q.results[i])
        w.put_measurement(*q.results[i]);
      w.put(q.timelines[i].submit_s);
      w.put(q.timelines[i].start_s);
      w.put(q.timelines[i].finish_s);
    }
  }
  w.put(static_cast<std::uint32_t>(late_.size()));
  for (const auto& [t, s] : late_) {
    w.put(t);
    w.put_setting(s);
  }
  w.put(static_cast<std::uint32_t>(deferred_.size()));
  for (const auto& [s, c] : deferred_) {
    w.put_setting(s);
    w.put(c.ticket);
    w.put_measurement(c.measurement);
    w.put(c.timeline.submit_s);
    w.put(c.timeline.start_s);
    w.put(c.timeline.finish_s);
  }
}

void Pipeline::clear() {
  queue_.clear();
  late_.clear();
  where_.clear();
  deferred_.clear();
  first_seq_ = 0;
  compile_s_ = gpu_s_ = 0;
  paced_ = 0;
}

void Pipeline::restore(ByteReader& r, Island& island) {
  clear();
  compile_s_ = r.get<double>();
  gpu_s_ = r.get<double>();
  paced_ = r.get<std::int64_t>();
  const std::uint32_t broods = r.get<std::uint32_t>();
  if (broods > static_cast<std::uint32_t>(GaSettings::kMaxPipelineBroods))
    r.failed();
  for (std::uint32_t k = 0; k < broods; ++k) {
    QueuedBrood q;
    q.brood = get_brood(r);
    const std::size_t n = q.brood.fresh.size();
    q.tickets.resize(n);
    q.results.resize(n);
    q.timelines.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      q.tickets[i] = r.get<Ticket>();
      if (r.get<std::uint8_t>())
        q.results[i] = r.get_measurement();
      else
        where_[q.tickets[i]] = {k, i};
      q.timelines[i].submit_s = r.get<double>();
      q.timelines[i].start_s = r.get<double>();
      q.timelines[i].finish_s = r.get<double>();
    }
    island.adopt(q.brood);
    queue_.push_back(std::move(q));
  }
  const std::uint32_t late = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < late; ++i) {
    const Ticket t = r.get<Ticket>();
    Setting s = r.get_setting();
    Brood b;
    b.kind = Brood::Kind::initial;
    b.fresh.push_back(s);
    island.adopt(b);
    late_.emplace(t, std::move(s));
  }
  const std::uint32_t deferred = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < deferred; ++i) {
    Setting s = r.get_setting();
    Completion c;
    c.ticket = r.get<Ticket>();
    c.measurement = r.get_measurement();
    c.timeline.submit_s = r.get<double>();
    c.timeline.start_s = r.get<double>();
    c.timeline.finish_s = r.get<double>();
    Brood b;
    b.kind = Brood::Kind::initial;
    b.fresh.push_back(s);
    island.adopt(b);
    deferred_.emplace_back(std::move(s), std::move(c));
  }
}

void Pipeline::requeue(Evaluator& evaluator, bool kept) {
  if (kept)
    return;
  // Every setting still owed, in ticket order, under a new ticket.
  std::map<Ticket, std::pair<bool, std::pair<std::size_t, std::size_t>>> owed;
  for (const auto& [t, at] : where_)
    owed[t] = {false, at};
  for (const auto& [t, s] : late_)
    owed[t] = {true, {0, 0}};
  std::map<Ticket, Setting> late;
  where_.clear();
  for (const auto& [t, what] : owed) {
    if (what.first) {
      late.emplace(evaluator.submit(late_.at(t)), late_.at(t));
      continue;
    }
    const auto [seq, slot] = what.second;
    QueuedBrood& q = queue_.at(seq - first_seq_);
    const Ticket fresh = evaluator.submit(q.brood.fresh[slot]);
    q.tickets[slot] = fresh;
    where_[fresh] = {seq, slot};
  }
  late_ = std::move(late);
}

}  // namespace isletune
