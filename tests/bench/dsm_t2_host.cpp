// bench/issue48/dsm_t2.cu (issue 48's cluster prototype) on the host emulation of
// bench/harness/host_sim.h: its own kernel source, every variant of its host main against two
// steps of the reference on grids whose clusters, stream blocks and edges are partial.
#define DSM_HOST_SIM 1
#include "../../bench/issue48/dsm_t2.cu"
