// Graceful termination: SIGTERM, SIGINT and SIGUSR1 set a process-wide flag that the run
// loop polls once per generation (the GA driver's `interrupted` callback). The island
// that sees the flag votes StopReason::signal; the collective stop vote then ends every
// rank in the same generation, the trace is flushed and `isletune resume DIR` continues.
//
// Why these signals: Slurm's `--signal=TERM@N` and `scancel` send SIGTERM, a terminal
// sends SIGINT, and Open MPI's mpirun forwards SIGUSR1 to every rank (it answers SIGTERM
// itself by killing the ranks one second later, too soon to finish a generation).
// A second SIGINT falls back to the default action, so a double Ctrl-C still kills.
#pragma once

#include <functional>

namespace isletune::run {

// Installs the handlers with sigaction (SA_RESTART, so blocking calls are not cut short).
// Call once, before MPI_Init: Open MPI keeps handlers that are already installed.
void install_termination_handlers();

// True once a termination signal has arrived. Async-signal-safe to read.
[[nodiscard]] bool termination_requested();

// The signal number that requested termination (the first one), or 0.
[[nodiscard]] int termination_signal();

// Clears the flag (tests, or a driver that handled the request and continues).
void clear_termination_request();

// The GA driver's `interrupted` callback (called once per generation): polls
// termination_requested().
[[nodiscard]] std::function<bool()> termination_poll();

}  // namespace isletune::run
