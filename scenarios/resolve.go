package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/types"
)

// Limits and defaults of schema v1 that are not CometBFT's.
const (
	maxNameLen    = 48
	maxValidators = 200
	// maxSimValidators: the sim models networks no host could run.
	maxSimValidators = 5000
	defaultPower     = 10
	defaultHeights   = 20
	defaultMaxDur    = 10 * time.Minute
	// maxRealDuration caps run.max_duration where time is real: a longer
	// value is a typo (1000h for 1000s) that would hold the host for weeks.
	maxRealDuration = 24 * time.Hour
	defaultSeed     = 1
	chainIDPrefix   = "valnet-"
)

// Backends.
const (
	backendInprocess = "inprocess"
	backendProcess   = "process"
	backendDocker    = "docker"
	// BackendSim is the virtual-time MODEL of CometBFT consensus (sim/).
	BackendSim     = "sim"
	defaultBackend = backendInprocess
)

// Backends and signer types: those that work now, and those that are
// planned (named so that users get "not available yet", not "unknown").
// The other closed sets of signer values are in signer.go.
var (
	backends           = []string{backendInprocess, backendProcess, backendDocker, BackendSim}
	plannedBackends    = []string{}
	signerTypes        = []string{SignerLocal, SignerKeyfile, SignerSimulated, SignerPKCS11, SignerLedger, SignerExternal, SignerThreshold}
	plannedSignerTypes []string // none for now; a planned type goes here
)

// Backends lists the backends a scenario may name (run.backend).
func Backends() []string { return slices.Clone(backends) }

// Names go into the default chain ID and are likely to end up in file names
// and node monikers, so they are kept to a safe lowercase alphabet.
var (
	namePattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	namePatternAdvice = "use lowercase letters, digits and '-', starting with a letter or digit"
)

// positiveTimeoutKeys are the timeouts that may not be 0: each is how long
// a step waits for the proposal or for votes.
var positiveTimeoutKeys = map[string]bool{"propose": true, "prevote": true, "precommit": true}

// resolve checks a decoded scenario and turns it into a Plan: defaults,
// count expansion, cross-references. Problems go to d.errs, and the Plan is
// only meaningful when there are none.
func (d *decoder) resolve(raw *rawScenario) *Plan {
	p := &Plan{Name: raw.Name, Description: raw.Description}
	d.checkName("name", raw.Name, "scenario", "slow-signer")
	var chain rawChain
	if raw.Chain != nil {
		chain = *raw.Chain
	}
	p.ChainID = d.resolveChainID(chain.ChainID, raw.Name)
	p.Timeouts = d.resolveTimeouts(chain.Timeouts)
	p.Run = d.resolveRun(raw.Run)
	d.maxDuration = p.Run.MaxDuration
	d.checkTimeoutsWithinRun(p.Timeouts)
	p.Node = d.resolveNode("node", raw.Node, p.Run, nil)
	p.VoteExtensionsEnableHeight = d.resolveVoteExtensions(chain.VoteExtensionsEnableHeight)
	p.App = d.resolveApp(raw.App, p.Run)
	profiles := d.resolveProfiles(raw.Profiles)
	p.Profiles = profiles.plans
	devices := d.resolveDevices(raw.Devices, profiles)
	p.Devices = devices.plans
	vals := d.resolveValidators(raw.Validators, profiles, devices, p.Run, &p.Node)
	d.checkDevicesUsed(devices)
	p.Validators = vals.plans
	p.validatorGroups = vals.groups
	p.Nodes = d.resolvePeerNodes(raw.Nodes, &vals, p.Run)
	p.Network = d.resolveNetwork(raw.Network, vals, p.Nodes)
	if p.HasSeeds() && p.NeedsFabric() && p.Run.Backend != BackendSim {
		d.fail(d.valuePos("nodes"), "nodes", "seed nodes with shaped links (network latency, bandwidth, zones, links or a network fault): on real nodes peers found through seeds dial the addresses nodes advertise, which valnet's user-space links cannot sit between; give a topology instead of seeds (the sim MODEL takes both)")
	}
	p.Faults = d.resolveFaults(raw.Faults, vals, p.Run)
	p.Load = d.resolveLoad(raw.Load, vals)
	d.hasLoad = p.Load != nil
	p.Expect = d.resolveExpect(raw.Expect, vals)
	return p
}

// checkName checks a scenario or validator name; false if it is unusable.
func (d *decoder) checkName(key, name, what, example string) bool {
	switch {
	case d.failed(key):
		return false
	case !d.written(key):
		d.fail(d.valuePos(key), key, fmt.Sprintf("required: give the %s a name, e.g. name: %s", what, example))
	case !namePattern.MatchString(name):
		d.fail(d.valuePos(key), key, fmt.Sprintf("%q is not a valid %s name: %s", name, what, namePatternAdvice))
	case len(name) > maxNameLen:
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s name is %d characters long; the maximum is %d", what, len(name), maxNameLen))
	default:
		return true
	}
	return false
}

// resolveChainID defaults to valnet-<name>, cut to CometBFT's limit so that
// any valid scenario name gives a valid chain ID.
func (d *decoder) resolveChainID(id *string, name string) string {
	const key = "chain.chain_id"
	if id == nil {
		def := chainIDPrefix + name
		if len(def) > types.MaxChainIDLen {
			def = strings.TrimRight(def[:types.MaxChainIDLen], "-")
		}
		return def
	}
	switch {
	case *id == "":
		d.fail(d.valuePos(key), key, "must not be empty; remove the key to use valnet-<name>")
	case len(*id) > types.MaxChainIDLen:
		d.fail(d.valuePos(key), key, fmt.Sprintf("chain ID is %d characters long; CometBFT allows at most %d", len(*id), types.MaxChainIDLen))
	}
	return *id
}

// resolveTimeouts applies CometBFT's defaults, refuses zero where consensus
// could not make progress, and lets CometBFT's own check have the last word.
func (d *decoder) resolveTimeouts(rt *rawTimeouts) Timeouts {
	const key = "chain.timeouts"
	cfg := config.DefaultConsensusConfig()
	if rt == nil {
		rt = &rawTimeouts{}
	}
	for _, f := range []struct {
		key string
		raw *time.Duration
		cfg *time.Duration
	}{
		{"propose", rt.Propose, &cfg.TimeoutPropose},
		{"propose_delta", rt.ProposeDelta, &cfg.TimeoutProposeDelta},
		{"prevote", rt.Prevote, &cfg.TimeoutPrevote},
		{"prevote_delta", rt.PrevoteDelta, &cfg.TimeoutPrevoteDelta},
		{"precommit", rt.Precommit, &cfg.TimeoutPrecommit},
		{"precommit_delta", rt.PrecommitDelta, &cfg.TimeoutPrecommitDelta},
		{"commit", rt.Commit, &cfg.TimeoutCommit},
	} {
		if f.raw == nil {
			continue
		}
		if *f.raw == 0 && positiveTimeoutKeys[f.key] {
			k := key + "." + f.key
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be greater than 0: with a zero %s timeout validators stop waiting at once and consensus spins through rounds without committing (only commit and the *_delta timeouts may be 0)", f.key))
			continue
		}
		*f.cfg = *f.raw
	}
	if err := cfg.ValidateBasic(); err != nil {
		d.fail(d.valuePos(key), key, "rejected by CometBFT: "+err.Error())
	}
	return Timeouts{
		Propose:        cfg.TimeoutPropose,
		ProposeDelta:   cfg.TimeoutProposeDelta,
		Prevote:        cfg.TimeoutPrevote,
		PrevoteDelta:   cfg.TimeoutPrevoteDelta,
		Precommit:      cfg.TimeoutPrecommit,
		PrecommitDelta: cfg.TimeoutPrecommitDelta,
		Commit:         cfg.TimeoutCommit,
	}
}

// checkTimeoutsWithinRun refuses a written timeout no shorter than the
// whole run: a round or a commit would then outlast the hard stop (1000h
// for 1000ms, say).
func (d *decoder) checkTimeoutsWithinRun(t Timeouts) {
	if d.failed("run.max_duration") {
		return
	}
	for _, f := range []struct {
		key string
		v   time.Duration
	}{
		{"propose", t.Propose}, {"propose_delta", t.ProposeDelta}, {"prevote", t.Prevote}, {"prevote_delta", t.PrevoteDelta},
		{"precommit", t.Precommit}, {"precommit_delta", t.PrecommitDelta}, {"commit", t.Commit},
	} {
		k := "chain.timeouts." + f.key
		if d.written(k) && !d.failed(k) && f.v >= d.maxDuration {
			d.fail(d.valuePos(k), k, fmt.Sprintf("%v is not shorter than the whole run (run.max_duration %v): the chain would not get past it before the hard stop; shorten it or raise run.max_duration", f.v, d.maxDuration))
		}
	}
}

func (d *decoder) resolveRun(rr *rawRun) RunPlan {
	run := RunPlan{Backend: defaultBackend, Heights: defaultHeights, MaxDuration: defaultMaxDur, Seed: defaultSeed}
	if rr == nil {
		return run
	}
	if rr.Backend != nil {
		run.Backend = *rr.Backend
		d.checkChoice("run.backend", "backend", run.Backend, backends, plannedBackends)
	}
	if rr.Heights != nil {
		run.Heights = *rr.Heights
		if run.Heights < 1 {
			d.fail(d.valuePos("run.heights"), "run.heights", fmt.Sprintf("must be at least 1, got %d", run.Heights))
		}
	}
	if rr.MaxDuration != nil {
		run.MaxDuration = *rr.MaxDuration
		switch {
		case run.MaxDuration == 0:
			d.fail(d.valuePos("run.max_duration"), "run.max_duration", "must be greater than 0: it is the hard stop of the run")
		case run.MaxDuration > maxRealDuration && run.Backend != BackendSim:
			d.fail(d.valuePos("run.max_duration"), "run.max_duration", fmt.Sprintf(
				"must be at most %v on a real backend, got %v: a longer soak is several runs (on the sim, run.backend: sim, time is virtual and may be longer)",
				maxRealDuration, run.MaxDuration))
		}
	}
	if rr.Seed != nil {
		run.Seed = *rr.Seed
	}
	if rr.Sim != nil {
		run.Sim = d.resolveSim(rr.Sim)
	}
	if rr.HaltAfter != nil {
		run.HaltAfter = *rr.HaltAfter
		if run.HaltAfter == 0 {
			d.fail(d.valuePos("run.halt_after"), "run.halt_after", "must be greater than 0: a stretch without a commit longer than this is a halt (remove the key for the default: two rounds of timeouts plus the commit timeout, at least 5 × the median block interval)")
		}
	}
	return run
}

// checkChoice checks a value from a closed set that may grow: planned
// values get "not available yet" rather than "unknown". It reports
// whether got is available.
func (d *decoder) checkChoice(key, what, got string, available, planned []string) bool {
	switch {
	case contains(available, got):
		return true
	case contains(planned, got):
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s %q is not available yet", what, got), available...)
	default:
		d.fail(d.valuePos(key), key, fmt.Sprintf("unknown %s %q", what, got)+didYouMean(got, available), available...)
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// maxValidatorsFor is the most validators a backend runs: what a host can
// run for real backends, more for the sim.
func maxValidatorsFor(backend string) int {
	if backend == BackendSim {
		return maxSimValidators
	}
	return maxValidators
}

// resolveSim checks run.sim: the sim backend's own settings.
func (d *decoder) resolveSim(rs *rawSim) SimPlan {
	var sp SimPlan
	if rs.Calibration != nil {
		sp.Calibration = *rs.Calibration
		switch {
		case sp.Calibration == "":
			d.fail(d.valuePos("run.sim.calibration"), "run.sim.calibration", "must not be empty: a built-in calibration name (default) or a file written by valnet calibrate")
		case strings.ContainsAny(sp.Calibration, "/."):
			sp.Calibration = d.filePath(sp.Calibration)
		}
	}
	if rs.SharedCores != nil {
		if c := *rs.SharedCores; c < 0 || c > 1024 {
			d.fail(d.valuePos("run.sim.shared_cores"), "run.sim.shared_cores", fmt.Sprintf("must be between 0 (every node its own CPU) and 1024, got %d", c))
		} else {
			sp.SharedCores = int(c)
		}
	}
	return sp
}

// validatorLimitText says both limits.
var validatorLimitText = fmt.Sprintf("valnet runs at most %d validators, %d on the sim backend (run.backend: sim)", maxValidators, maxSimValidators)
