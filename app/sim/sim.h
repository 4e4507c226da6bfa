/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-sim: the experiments of doc/sim-experiments.md on the simulated fabric,
// metaroce beside the RoCEv2 baseline with and without PFC (doc/mr-sim.md).
//
// One file per concern, as mr-perf: parameters.cc (the command line),
// lab.cc (a fabric, one protocol on every host, flows of WRITEs),
// stack_*.cc (a protocol's engines behind one interface), report.cc (CSV,
// JSON, markdown, gnuplot) and exp_*.cc, one experiment each, every
// experiment one struct in kExperiments.

#ifndef METAROCE_APP_SIM_SIM_H
#define METAROCE_APP_SIM_SIM_H

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_sim.h"

namespace metaroce::mrsim {

/** The protocols compared. */
enum class Proto : uint8_t { kMetaRoce, kRocePfc, kRoce, kCount };
/** "metaroce", "rocev2-pfc", "rocev2". */
const char* ProtoName(Proto p);

/** The command line. */
struct Params {
  std::vector<std::string> experiments;  ///< names from kExperiments; empty: all
  std::vector<Proto> protos = {Proto::kMetaRoce, Proto::kRocePfc, Proto::kRoce};
  uint32_t seeds = 10;
  uint64_t first_seed = 1;
  uint64_t gbps = 400;  ///< every link
  uint32_t leaves = 8, spines = 8, hosts_per_leaf = 8;
  uint32_t planes = 1;  ///< parallel fabrics, a NIC port on each per host
  sim::SimTime link_delay_ps = sim::kDefaultLinkDelayPs;
  bool quick = false;  ///< the CI run: a small fabric, one seed, few points
  std::string out_dir = "mr-sim-out";
  bool plots = true;       ///< PNGs with gnuplot
  bool progress = true;    ///< a line per run on stderr
  std::vector<double> xs;  ///< the swept values, replacing an experiment's own (--x)
  uint32_t Hosts() const { return leaves * hosts_per_leaf; }
};

/** Parses argv; an error says which option and what to fix. Sets *help for --help. */
absl::StatusOr<Params> ParseParams(int argc, char** argv, bool* help);
void PrintUsage(FILE* to);

// ---------------------------------------------------------------------------
// The lab: a leaf-spine fabric with one protocol's engine on every host.

/** A flow: WRITEs of msg_bytes, depth of them outstanding, from src to dst. */
struct FlowSpec {
  uint32_t src = 0, dst = 0;  ///< host indexes (Topology::hosts order)
  uint64_t bytes = 0;         ///< 0: endless (runs until the lab stops)
  uint64_t msg_bytes = 1 << 20;
  uint32_t depth = 8;
  sim::SimTime start_ps = 0;  ///< after Lab::Establish() (its time is added)
  /**
   * RoCE: the plane of its QP; kAnyPlane: (src + dst) mod P, so that every
   * host's QPs, sent and received, are spread over the planes. metaroce
   * spreads every connection's paths over all planes and ignores it.
   */
  uint32_t plane = kAnyPlane;
  static constexpr uint32_t kAnyPlane = UINT32_MAX;
};

struct FlowState {
  FlowSpec spec;
  /** Lab::Chain: it may have posted at most gate_lead bytes beyond what flow gate has completed. */
  uint32_t gate = kNoGate;
  uint64_t gate_lead = 0;
  static constexpr uint32_t kNoGate = UINT32_MAX;
  uint64_t posted = 0;  ///< bytes posted
  uint64_t done = 0;    ///< bytes completed
  uint32_t outstanding = 0;
  sim::SimTime end_ps = 0;        ///< when its last byte completed; 0: not (yet)
  bool failed = false;            ///< a WRITE completed in error (the QP failed)
  std::vector<uint64_t> done_at;  ///< bytes done at each sample (Lab::Run's sample_ps)
  bool Finished() const { return failed || (spec.bytes != 0 && done == spec.bytes); }
};

/** What every protocol counts alike. */
struct Totals {
  uint64_t data_pkts = 0;    ///< data packets sent, resent ones included
  uint64_t resent_pkts = 0;  ///< of those, sent again
  uint64_t qp_errors = 0;    ///< flows whose QP failed
  uint64_t drops = 0;        ///< frames the fabric dropped, every cause
  uint64_t pfc_pauses = 0;   ///< pauses that took effect at a port
  uint64_t ecn_marked = 0;
  uint64_t events = 0;  ///< simulator events processed
};

class Stack;  // a protocol's engines (stack.h)

struct LabConfig {
  Proto proto = Proto::kMetaRoce;
  uint64_t seed = 1;
  double loss = 0;  ///< loss on every link, both directions
  /**
   * 0: loss is Bernoulli. Else bursts (Gilbert-Elliott: the bad state loses
   * every frame) of this many full frames' time at line rate on average, as
   * often as makes @c loss of a busy link's frames.
   */
  double burst_frames = 0;
  uint32_t planes = 0;  ///< 0: Params::planes
  /**
   * Not 0: the last leaf's links to the spines have this one-way delay, so
   * that leaf is a second site joined to the others by them (longhaul).
   */
  sim::SimTime site_link_delay_ps = 0;
};

class Lab {
 public:
  static absl::StatusOr<std::unique_ptr<Lab>> Create(const Params& p, const LabConfig& c);
  ~Lab();

  /** Hosts, each with a NIC port on every plane. */
  uint32_t hosts() const { return static_cast<uint32_t>(topo_.hosts.size()) / topo_.planes; }
  uint32_t planes() const { return topo_.planes; }
  uint32_t LeafOf(uint32_t host) const { return host / topo_.hosts_per_leaf; }
  uint64_t line_bps() const { return line_bps_; }
  /** What a host's NIC ports carry together: the line rate on every plane. */
  uint64_t host_bps() const { return line_bps_ * planes(); }
  /** Unloaded round trip of a full data packet and its ACK between the two hosts. */
  sim::SimTime BaseRttPs(uint32_t a, uint32_t b) const;
  /** Bytes in flight that fill that path at line rate. */
  uint64_t BdpBytes(uint32_t a, uint32_t b) const;
  sim::Fabric& fabric() { return fabric_; }
  const sim::Topology& topo() const { return topo_; }
  /** The switch port that sends to @p host on @p plane (its leaf's downlink). */
  sim::PortId DownlinkOf(uint32_t host, uint32_t plane = 0) const;
  /** Bytes all flows have completed. */
  uint64_t DoneBytes() const;

  /** Adds a flow (before or between Run calls); returns its index. */
  absl::StatusOr<uint32_t> AddFlow(const FlowSpec& f);
  /**
   * Chains flow @p flow behind flow @p after (the steps of a ring all-reduce):
   * it may post only the bytes @p after has completed, plus @p lead (what it
   * sends before it needs anything from @p after).
   */
  absl::Status Chain(uint32_t flow, uint32_t after, uint64_t lead);
  FlowState& flow(uint32_t i) { return flows_[i]; }
  size_t flow_count() const { return flows_.size(); }
  /**
   * Runs until the flows' QPs can send (metaroce's handshakes done: RoCE
   * connects its QPs out of band, so neither protocol's connection set-up is
   * timed), then makes the flows' start times relative to that moment and
   * returns it. Call after adding the flows, before Run.
   */
  absl::StatusOr<sim::SimTime> Establish();
  /**
   * Runs until every flow with a size has finished, or @p until_ps. With
   * @p sample_ps, every flow records its bytes done each sample_ps.
   */
  void Run(sim::SimTime until_ps, sim::SimTime sample_ps = 0);
  Totals totals() const;

 private:
  Lab(const Params& p, const LabConfig& c);
  void Post(FlowState& f, uint32_t index);

  const LabConfig cfg_;
  sim::Fabric fabric_;
  sim::Topology topo_;
  uint64_t line_bps_ = 0;
  sim::SimTime delay_ps_ = 0;
  sim::SimTime site_delay_ps_ = 0;  ///< the last leaf's uplinks
  std::unique_ptr<Stack> stack_;
  std::vector<FlowState> flows_;
  std::vector<std::vector<uint32_t>> flows_of_;  ///< by source host
  std::vector<uint32_t> outstanding_of_;         ///< the depths of its flows, by source host
  sim::SimTime step_ps_;
  sim::SimTime next_sample_ps_ = 0;
};

// ---------------------------------------------------------------------------
// Results: a table per experiment, its summary and its verdicts.

/** Rows of (protocol, seed, x, metrics...). */
struct Table {
  std::string x_name;                ///< the swept parameter, with its unit ("loss_pct")
  std::vector<std::string> metrics;  ///< names with units ("goodput_gbps")
  size_t plot_metric = 0;            ///< the metric the summary plots
  bool log_x = false;
  struct Row {
    Proto proto;
    uint64_t seed;
    double x;
    std::vector<double> v;  ///< NaN: not applicable to this protocol
  };
  std::vector<Row> rows;
  size_t Metric(const std::string& name) const;  ///< index of a metric (aborts if absent)
};

/** Median, min and max of one metric over the seeds of one (protocol, x). */
struct Spread {
  double median = 0, min = 0, max = 0;
  uint32_t n = 0;
};
Spread SpreadOf(const Table& t, Proto p, double x, size_t metric);
/** The x values of a table, in order of first appearance. */
std::vector<double> XsOf(const Table& t);

struct Verdict {
  std::string claim;     ///< what is checked
  std::string target;    ///< the number it must reach
  std::string measured;  ///< what it reached (medians)
  bool met = false;
};

struct Result {
  Table table;
  std::vector<Verdict> verdicts;
  std::string notes;  ///< definitions and caveats, markdown
};

/** Wall time and simulator events of an experiment's runs. */
struct Speed {
  double wall_s = 0;
  uint64_t events = 0;
  uint32_t runs = 0;
};

/** What experiments call per run: progress and speed. */
class Runner {
 public:
  Runner(const Params& p, const char* experiment) : p_(p), experiment_(experiment) {}
  /** Opens a lab, or stops the experiment with the lab's error. */
  absl::StatusOr<std::unique_ptr<Lab>> Open(const LabConfig& c) const { return Lab::Create(p_, c); }
  /** Accounts a finished run and prints @p what with its speed. */
  void Done(const Lab& lab, const std::string& what, double wall_s);
  const Speed& speed() const { return speed_; }
  uint32_t seeds() const { return p_.seeds; }

 private:
  const Params& p_;
  const char* experiment_;
  Speed speed_;
};

struct Experiment {
  const char* name;
  const char* what;  ///< one line for --help and the summary
  absl::StatusOr<Result> (*run)(const Params& p, Runner& r);
};
std::span<const Experiment> Experiments();

absl::StatusOr<Result> RunCalibration(const Params& p, Runner& r);
absl::StatusOr<Result> RunLossSweep(const Params& p, Runner& r);
absl::StatusOr<Result> RunGraySpine(const Params& p, Runner& r);
absl::StatusOr<Result> RunBurstyLoss(const Params& p, Runner& r);
absl::StatusOr<Result> RunIncast(const Params& p, Runner& r);
absl::StatusOr<Result> RunIncastQps(const Params& p, Runner& r);
absl::StatusOr<Result> RunPermutation(const Params& p, Runner& r);
absl::StatusOr<Result> RunAllToAll(const Params& p, Runner& r);
absl::StatusOr<Result> RunAllReduce(const Params& p, Runner& r);
absl::StatusOr<Result> RunFailure(const Params& p, Runner& r);
absl::StatusOr<Result> RunPlaneScaling(const Params& p, Runner& r);
absl::StatusOr<Result> RunSpineFailure(const Params& p, Runner& r);
absl::StatusOr<Result> RunLinkFailure(const Params& p, Runner& r);
absl::StatusOr<Result> RunLongHaul(const Params& p, Runner& r);
absl::StatusOr<Result> RunLongHaulLoss(const Params& p, Runner& r);

/** Writes <out>/<name>.csv, .json, .gp (+ .png) and appends to summary.md. */
absl::Status WriteReport(const Params& p, const Experiment& e, const Result& r, const Speed& s);
/** Starts <out>/summary.md (overwrites). */
absl::Status StartSummary(const Params& p);

/** Median of @p v (0 if empty); sorts a copy. */
double Median(std::vector<double> v);
/** Percentile @p q in [0, 1] by nearest rank. */
double Percentile(std::vector<double> v, double q);

}  // namespace metaroce::mrsim

#endif  // METAROCE_APP_SIM_SIM_H
