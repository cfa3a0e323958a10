// What `run`, `resume` and `space` build from a configuration before searching: the
// stencil, the problem, the evaluator of the chosen backend, the space (with the
// evaluator's device limits), and the settings the search may visit.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "eval/evaluator.hpp"
#include "sample/sampled_set.hpp"
#include "sample/sampler.hpp"
#include "space/space.hpp"
#include "trace/reader.hpp"
#include "trace/trace_types.hpp"

namespace isletune::run {

// The evaluator of `config.evaluator.backend` for this rank's GPU ordinal `gpu`
// (cuda) or the recorded dataset (replay). Fills `env` (GPU name, UUID, clocks, ...).
// `node_rank` of `node_ranks`: this rank's place among the ranks of its node, whose share of
// the node's CPUs the CUDA worker compiles on; `bindings_overlap`: the CPU bindings the node's
// ranks inherited overlap, so each takes its slice whatever its binding
// (eval/cuda/compile_cpus.hpp). Throws InputError when the backend cannot start here (no
// driver, not built with CUDA, missing dataset).
[[nodiscard]] std::unique_ptr<Evaluator> make_evaluator(const Config& config, int gpu,
                                                        EnvironmentInfo& env, int node_rank = 0,
                                                        int node_ranks = 1,
                                                        bool bindings_overlap = false);

// Throws InputError, one sentence naming both problems, unless `dataset` (a replay dataset
// or trace) measured the problem of `config`: the same stencil points (their coefficients
// do not change a kernel's time), grid and step count. Replay answers with recorded times, which
// are only true of the problem they were measured on.
void check_replay_problem(const Config& config, const Stencil& stencil, const TraceReader& dataset);
// The reason check_replay_problem refuses ("holds times of A, not of CONFIG's B"), or
// nullopt when the dataset matches.
[[nodiscard]] std::optional<std::string> replay_problem_mismatch(const Config& config,
                                                                 const Stencil& stencil,
                                                                 const TraceReader& dataset);

// The device whose limits bound the config's space before any evaluator starts (`isletune
// space`): with backend replay the dataset's recording GPU, after the checks `run` makes
// (a dataset is named, exists, is readable and holds this config's problem; InputError
// otherwise); the H100 defaults of DeviceLimits with cuda.
[[nodiscard]] DeviceLimits configured_limits(const Config& config, const Stencil& stencil);

// The search space of the config on the evaluator's device.
[[nodiscard]] Space make_space(const Config& config, const Stencil& stencil,
                               const DeviceLimits& limits);

// The settings a replay evaluator can answer that lie in `space`, or nullopt for other
// evaluators (the space itself is the source). Throws InputError when none lie in it.
[[nodiscard]] std::optional<std::vector<Setting>> recorded_candidates(const Evaluator& evaluator,
                                                                      const Space& space);

// The sampled set of the run (quota-based reward sampling, docs/architecture.md, "The sampler")
// from the recorded candidates when given, else from the space, plus the naive-equivalent
// setting when the run may draw it (naive_seed). Deterministic in the seed.
[[nodiscard]] SampledSet sample_settings(const Config& config, const Stencil& stencil,
                                         const Space& space,
                                         const std::optional<std::vector<Setting>>& candidates);

// The samples of restart epochs for island `rank` (sampler.hpp epoch_sampler over the
// recorded candidates or the space), or an empty function when the sample of `sampled`
// settings already holds every setting the run may draw. `stencil`, `space` and
// `candidates` must outlive it.
[[nodiscard]] EpochSampler refill_source(const Config& config, const Stencil& stencil,
                                         const Space& space,
                                         const std::optional<std::vector<Setting>>& candidates,
                                         int rank, std::size_t sampled);

// SampleData (trace) ⇄ SampledSet (search).
[[nodiscard]] SampleData to_sample_data(const SampledSet& s);
[[nodiscard]] SampledSet to_sampled_set(const SampleData& d);

// "tbx=64 tby=4 merge=cyclic ..." without the parameters the setting's kernel family does not
// read and the z factors at 1.
[[nodiscard]] std::string short_setting(const Setting& s);

}  // namespace isletune::run
