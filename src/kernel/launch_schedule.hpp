// The launch schedule of the kernel ABI, its one home: T steps run as T / S launches of the
// main entry (S = steps per launch, the plan's tdeg), then T % S launches of the one-step tail
// entry, the two buffers swapped after every launch. Plain C++ without includes, so the same
// text serves the worker (included) and the exported .cu (embedded by standalone.cpp).
#pragma once

struct IslLaunchSchedule {
  long long main_launches;  // launches of the main entry, first
  long long tail_launches;  // then launches of the one-step tail entry
};

// The schedule of `steps` time steps for a main entry that advances `steps_per_launch` steps.
inline IslLaunchSchedule isl_launch_schedule(long long steps, long long steps_per_launch) {
  const long long per = steps_per_launch < 1 ? 1 : steps_per_launch;
  IslLaunchSchedule s;
  s.main_launches = steps / per;
  s.tail_launches = steps % per;
  return s;
}
