// Termination-signal handling (see signals.hpp): a lock-free atomic flag written from
// the handler, read by the run loop.
#include "run/signals.hpp"

#include <atomic>
#include <csignal>

namespace isletune::run {
namespace {

// Lock-free atomics are async-signal-safe; a plain global is the only way a handler can
// talk to the program, so these two are the module's state.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

// Records the first termination signal; later ones keep the first number.
extern "C" void on_termination_signal(int signo) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, signo);
}

// Installs on_termination_signal for one signal with the given extra flags.
void install(int signo, int flags) {
  struct sigaction action {};
  action.sa_handler = on_termination_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | flags;
  sigaction(signo, &action, nullptr);
}

}  // namespace

void install_termination_handlers() {
  install(SIGTERM, 0);
  install(SIGUSR1, 0);
  install(SIGINT, SA_RESETHAND);  // a second Ctrl-C kills at once
}

bool termination_requested() {
  return g_signal.load(std::memory_order_relaxed) != 0;
}

int termination_signal() {
  return g_signal.load(std::memory_order_relaxed);
}

void clear_termination_request() {
  g_signal.store(0, std::memory_order_relaxed);
}

std::function<bool()> termination_poll() {
  return [] { return termination_requested(); };
}

}  // namespace isletune::run
