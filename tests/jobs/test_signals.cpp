// Termination-signal flag (src/run/signals.hpp): real signals raised at this process set
// the flag the run loop polls, the first signal is remembered, and a second SIGINT
// falls back to the default action.
#include <gtest/gtest.h>

#include <csignal>

#include "run/signals.hpp"

namespace isletune::run {
namespace {

// Each test starts with the handlers installed and the flag clear.
class Signals : public ::testing::Test {
 protected:
  void SetUp() override {
    install_termination_handlers();
    clear_termination_request();
  }
  void TearDown() override { clear_termination_request(); }
};

TEST_F(Signals, FlagIsClearUntilASignalArrives) {
  EXPECT_FALSE(termination_requested());
  EXPECT_EQ(termination_signal(), 0);
  EXPECT_FALSE(termination_poll()());
}

TEST_F(Signals, RaisedSigtermSetsTheFlagAndTheProcessLives) {
  ASSERT_EQ(std::raise(SIGTERM), 0);
  EXPECT_TRUE(termination_requested());
  EXPECT_EQ(termination_signal(), SIGTERM);
  EXPECT_TRUE(termination_poll()());
}

TEST_F(Signals, SigusrOneForwardedByMpirunSetsTheFlag) {
  ASSERT_EQ(std::raise(SIGUSR1), 0);
  EXPECT_TRUE(termination_requested());
  EXPECT_EQ(termination_signal(), SIGUSR1);
}

TEST_F(Signals, FirstSignalIsRememberedWhenMoreFollow) {
  ASSERT_EQ(std::raise(SIGUSR1), 0);
  ASSERT_EQ(std::raise(SIGTERM), 0);
  EXPECT_EQ(termination_signal(), SIGUSR1);
  clear_termination_request();
  EXPECT_FALSE(termination_requested());
  ASSERT_EQ(std::raise(SIGTERM), 0);
  EXPECT_EQ(termination_signal(), SIGTERM);
}

TEST_F(Signals, SigtermHandlerStaysInstalledAfterFiring) {
  ASSERT_EQ(std::raise(SIGTERM), 0);
  struct sigaction current {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &current), 0);
  EXPECT_NE(current.sa_handler, SIG_DFL);
  EXPECT_NE(current.sa_flags & SA_RESTART, 0);
}

TEST_F(Signals, SecondSigintFallsBackToTheDefaultAction) {
  ASSERT_EQ(std::raise(SIGINT), 0);
  EXPECT_EQ(termination_signal(), SIGINT);
  struct sigaction current {};
  ASSERT_EQ(sigaction(SIGINT, nullptr, &current), 0);
  EXPECT_EQ(current.sa_handler, SIG_DFL);
  // The default action really kills: a second Ctrl-C ends a process that is stuck.
  EXPECT_EXIT(std::raise(SIGINT), ::testing::KilledBySignal(SIGINT), "");
}

}  // namespace
}  // namespace isletune::run
