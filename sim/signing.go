package sim

import (
	"fmt"
	"math"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/signbytes"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
	"github.com/valnet/valnet/signers/ledger"
	"github.com/valnet/valnet/signers/threshold"
)

// signer is one validator's signer chain in virtual time: the same
// decorators in the same order as signers.Build (latency, then faults,
// then the double-sign guard, then a shared device's queue, then the
// backend), each drawing from the same models and random streams, with
// the waits spent on the node's clock instead of in real time.
type signer struct {
	label   string
	latency latency.Model
	phases  map[string]bool // nil: every phase
	faults  *signers.Faults
	device  *signers.DeviceTiming // simulated: the profile's time
	cosign  *cosigners            // threshold: its cosigners' rounds
	ledger  *ledgerModel          // ledger emulator: its modelled time
	queue   *deviceQueue          // shared device; nil: none
	remote  bool                  // via tcp or unix: the remote-signer hop
	// link: the node<->signer connection's delays (signer.link), each
	// signature paying one of each; nil: the signer next to its node.
	linkTo, linkBack latency.Model
	decrypt          time.Duration // keyfile every-sign: bcrypt before each signature
	// outage: the remote signer is disconnected (signer-outage,
	// signer-restart) until outageUntil (virtual ns; 0: no end known).
	outage      bool
	outageUntil int64
	cpuScale    float64 // cpu_scale: multiplies the software signing cost
	// hwm is the double-sign guard's high-water mark, as FilePV keeps it:
	// height, round, step and what was signed there.
	hwm struct {
		h     int64
		r     int32
		step  int8
		block int32
		set   bool
	}
}

type ledgerModel struct {
	chunk   int
	timing  ledger.EmulatorTiming
	confirm time.Duration // waited once, before the first signature
	signed  bool
}

// deviceQueue is a shared signing device in virtual time: one signature
// at a time, first come first served (signers.Device in real time).
type deviceQueue struct {
	name       string
	profile    string
	busyUntil  int64
	busy       int64 // ns spent signing
	signatures int64
	bg         *deviceBackground // other chains' load; nil: none
}

// A node whose remote signer is gone retries: node/setup.go wraps the
// signer client in privval.NewRetrySignerClient(pvsc, 50, 100ms), and each
// attempt waits for the signer to connect for up to the listener's accept
// timeout (privval/socket_listeners.go defaultTimeoutAcceptSeconds, 3 s).
// A signer back within that budget signs; after it the request fails.
const (
	remoteRetries    = 50
	remoteRetryWait  = 100 * time.Millisecond
	remoteAcceptWait = 3 * time.Second
	remoteBudget     = remoteRetries * (remoteAcceptWait + remoteRetryWait)
)

// newSigner builds the model of v's signer. A signer whose timing the
// model cannot know (a real PKCS#11 token, a Ledger over USB) is refused:
// the sim says it cannot run rather than guess. A key file decrypted on
// every signature costs the calibration's bcrypt time at its cost.
func newSigner(plan *scenarios.Plan, params Params, v scenarios.ValidatorPlan, seed int64, devices map[string]*deviceQueue) (*signer, error) {
	sp := v.Signer
	s := &signer{label: sp.Type, faults: signers.WithFaults(nil), remote: sp.Via == scenarios.ViaTCP || sp.Via == scenarios.ViaUnix}
	switch sp.Type {
	case scenarios.SignerLocal:
	case scenarios.SignerKeyfile:
		s.label = "keyfile(" + sp.Keyfile.Decrypt + ")"
		if sp.Keyfile.Decrypt == scenarios.DecryptEverySign {
			// bcrypt doubles per cost step; the calibration measured cost 10.
			s.decrypt = time.Duration(float64(params.KeyfileDecrypt) * math.Pow(2, float64(sp.Keyfile.BcryptCost-10)))
		}
	case scenarios.SignerThreshold:
		c, err := newCosigners(v, seed, params.RemoteHop)
		if err != nil {
			return nil, err
		}
		s.cosign, s.label = c, threshold.Label(c.threshold, c.n)
	case scenarios.SignerSimulated:
		p, err := plan.DeviceProfile(sp.Profile)
		if err != nil {
			return nil, fmt.Errorf("validator %s: %w", v.Name, err)
		}
		if s.device, err = signers.NewDeviceTiming(p, seed, v.Name); err != nil {
			return nil, fmt.Errorf("validator %s: %w", v.Name, err)
		}
		s.label = "simulated(" + p.Label() + ")"
	case scenarios.SignerLedger:
		lp := sp.Ledger
		if lp.Connection != "emulator" {
			return nil, fmt.Errorf("validator %s: the sim cannot time a real Ledger (connection: %s); use connection: emulator", v.Name, lp.Connection)
		}
		s.ledger = &ledgerModel{chunk: lp.ChunkSize, timing: ledger.NanoSPlus.With(lp.HostStall, lp.Wire, lp.DeviceSign), confirm: lp.ConfirmDelay}
		s.label = "ledger(emulator, model)"
	case scenarios.SignerPKCS11:
		return nil, fmt.Errorf("validator %s: the sim cannot time a real PKCS#11 token; give it a simulated signer with a device profile (valnet profiles) to model it", v.Name)
	default:
		return nil, fmt.Errorf("validator %s: the sim has no model of signer type %q", v.Name, sp.Type)
	}
	s.cpuScale = 1
	if sp.CPUScale != 0 && sp.CPUScale != 1 {
		s.cpuScale = sp.CPUScale
		s.label += fmt.Sprintf("+cpu_scale(%g)", sp.CPUScale)
	}
	if sp.Device != "" {
		s.queue = devices[sp.Device]
		s.label += "+device(" + sp.Device + ")"
	}
	if l := sp.Latency; l != nil {
		m, err := latency.New(l.Spec, seed, v.Name)
		if err != nil {
			return nil, fmt.Errorf("validator %s: %w", v.Name, err)
		}
		latency.MakeSerial(m)
		s.latency = m
		if len(l.Phases) > 0 {
			s.phases = map[string]bool{}
			for _, p := range l.Phases {
				s.phases[p] = true
			}
		}
		s.label += "+latency(" + m.String() + ")"
	}
	if s.remote {
		s.label += " via " + sp.Via
	}
	if lp := sp.Link; lp != nil {
		// The same models and streams as the runner's fabric link.
		name, far := v.Name, scenarios.SignerEndpoint(v.Name)
		for _, d := range []struct {
			m        *latency.Model
			from, to string
		}{{&s.linkTo, name, far}, {&s.linkBack, far, name}} {
			l, err := links.FromPlan(*lp, seed, "signer-link:"+d.from+"->"+d.to)
			if err != nil {
				return nil, fmt.Errorf("validator %s: signer link: %w", v.Name, err)
			}
			if l.Latency != nil {
				latency.MakeSerial(l.Latency)
				*d.m = l.Latency
			}
		}
		if lp.Bandwidth > 0 {
			return nil, fmt.Errorf("validator %s: the sim does not model a signer link's bandwidth (a signature's few hundred bytes); leave bandwidth out to model its latency", v.Name)
		}
		s.label += "+link"
	}
	return s, nil
}

// guard follows the double-sign guard: a regression is refused, the same
// height, round and step signs again only what was signed there (the step
// order is FilePV's: internal/signbytes).
func (s *signer) guard(h int64, r int32, ph string, block int32) error {
	st := signbytes.StepOf(ph)
	m := &s.hwm
	next := signbytes.VoteState{Height: h, Round: int64(r), Step: st}
	if m.set {
		last := signbytes.VoteState{Height: m.h, Round: int64(m.r), Step: signbytes.Step(m.step)}
		switch next.Cmp(last) {
		case -1:
			return &signers.WithheldError{Kind: signers.FailureSignerConflict,
				Err: fmt.Errorf("double-sign guard: height/round/step regression (%d/%d/%d after %d/%d/%d)", h, r, st, m.h, m.r, m.step)}
		case 0:
			if block != m.block {
				return &signers.WithheldError{Kind: signers.FailureSignerConflict,
					Err: fmt.Errorf("double-sign guard: conflicting data at %d/%d/%d", h, r, st)}
			}
		}
	}
	m.h, m.r, m.step, m.block, m.set = h, r, st.Int8(), block, true
	return nil
}

// sign is one signature of validator n at its clock: the consensus
// routine waits for it (signAddVote, decideProposal). It records the
// request and the signature as the real chain's instrumentation does, and
// reports whether a signature came back.
func (w *world) sign(n *node, ph string, h int64, r int32, block int32) bool {
	s := w.signers[n.i]
	start := n.t
	w.emit(eventlog.Event{Time: w.at(start), Kind: eventlog.KindSignRequest, Node: n.name, Validator: n.name,
		Height: h, Round: r, Phase: ph})
	var injected, queued time.Duration
	var err error
	t := start
	if s.latency != nil && (s.phases == nil || s.phases[ph]) {
		d := s.latency.Draw()
		t += d.Nanoseconds()
		injected += d
	}
	delay, ferr := s.faults.Plan(ph, h, r)
	switch {
	case s.outage && (s.outageUntil == 0 || s.outageUntil-t > remoteBudget.Nanoseconds()):
		t += remoteBudget.Nanoseconds()
		err = fmt.Errorf("exhausted all attempts to sign: the remote signer did not come back within %d retries", remoteRetries)
	case ferr != nil:
		err = ferr
	default:
		if s.outage {
			t = s.outageUntil // the retries reach the signer once it is back
		}
		t += delay.Nanoseconds()
		injected += delay
		if c := s.cosign; c != nil {
			// The rounds run inside the backend, under the guard: a
			// signature without a quorum leaves its mark unmoved.
			rr, d := c.rounds()
			t += d.Nanoseconds()
			ev := eventlog.Event{Time: w.at(t), Kind: eventlog.KindCosign, Node: n.name, Validator: n.name,
				Height: h, Round: r, Phase: ph, Cosign: c.cosignEvent(rr)}
			if rr.Err != nil {
				ev.Error, err = rr.Err.Error(), rr.Err
			}
			w.emit(ev)
		}
		if err == nil {
			err = s.guard(h, r, ph, block)
		}
	}
	if err == nil {
		if q := s.queue; q != nil {
			if q.busyUntil > t {
				queued = time.Duration(q.busyUntil - t)
				t = q.busyUntil
			}
		}
		// With vote extensions a non-nil precommit is two signatures, its
		// vote's and its extension's (FilePV signs both, one after the
		// other, on the same backend).
		payloads := []int{w.signBytesLen(ph, h, r, block)}
		if ph == phase.Precommit && block != noBlock && w.extHeight > 0 && h >= w.extHeight {
			payloads = append(payloads, w.extSignBytesLen(h, r))
		}
		service := time.Duration(float64(w.p.SignLocal+s.decrypt) * s.cpuScale * float64(len(payloads)))
		switch {
		case s.device != nil:
			var dev time.Duration
			for _, n := range payloads {
				dev += s.device.Draw(n)
			}
			injected += dev
			service = max(service, dev)
		case s.ledger != nil:
			lm := s.ledger
			var dev time.Duration
			for _, n := range payloads {
				dev += ledger.ModelledSignTime(n, lm.chunk, lm.timing)
			}
			if !lm.signed {
				dev += lm.confirm
				lm.signed = true
			}
			injected += dev
			service = max(service, dev)
		}
		if q := s.queue; q != nil {
			q.busyUntil = t + service.Nanoseconds()
			q.busy += service.Nanoseconds()
			q.signatures++
		}
		t += service.Nanoseconds()
		if s.remote {
			t += w.p.RemoteHop.Nanoseconds()
		}
		for _, d := range []latency.Model{s.linkTo, s.linkBack} {
			if d != nil {
				t += d.Draw().Nanoseconds() // the request there, the signature back
			}
		}
	}
	n.t = t
	e := eventlog.Event{Time: w.at(t), Kind: eventlog.KindSign, Node: n.name, Validator: n.name, Height: h, Round: r,
		Phase: ph, LatencyMS: msOf(time.Duration(t - start)), InjectedMS: msOf(injected)}
	if s.queue != nil {
		q := msOf(queued)
		e.QueueMS = &q
	}
	if err != nil {
		e.Error, e.Failure = err.Error(), signers.FailureOf(err)
	} else {
		e.BlockID = w.hashOf(h, block)
	}
	w.emit(e)
	return err == nil
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// signBytesLen is the length of the sign bytes CometBFT would hand the
// signer (a device's time may depend on it), computed from the real
// encoding and cached by what changes it.
func (w *world) signBytesLen(ph string, h int64, r int32, block int32) int {
	key := signLenKey{ph: ph, nilVote: block == noBlock, h: digits(h), r: r}
	if n, ok := w.signLens[key]; ok {
		return n
	}
	hash := make([]byte, 32)
	bid := cmtproto.BlockID{Hash: hash, PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: hash}}
	if block == noBlock {
		bid = cmtproto.BlockID{}
	}
	var n int
	if ph == phase.Proposal {
		n = len(types.ProposalSignBytes(w.chainID, &cmtproto.Proposal{Type: cmtproto.ProposalType, Height: h, Round: r,
			PolRound: -1, BlockID: bid, Timestamp: w.epoch}))
	} else {
		typ := cmtproto.PrevoteType
		if ph == phase.Precommit {
			typ = cmtproto.PrecommitType
		}
		n = len(types.VoteSignBytes(w.chainID, &cmtproto.Vote{Type: typ, Height: h, Round: r, BlockID: bid, Timestamp: w.epoch}))
	}
	w.signLens[key] = n
	return n
}

// extSignBytesLen is the length of a vote extension's sign bytes
// (types.VoteExtensionSignBytes: CanonicalVoteExtension) with the empty
// extension valnet's kvstore gives.
func (w *world) extSignBytesLen(h int64, r int32) int {
	return len(types.VoteExtensionSignBytes(w.chainID, &cmtproto.Vote{Type: cmtproto.PrecommitType, Height: h, Round: r}))
}

type signLenKey struct {
	ph      string
	nilVote bool
	h       int
	r       int32
}

func digits(h int64) int {
	n := 0
	for h > 0 {
		h >>= 7
		n++
	}
	return n
}
