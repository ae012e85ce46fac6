package signers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/signers/profiles"
)

// BackgroundSpec is a MODEL of the signing load of other chains a shared
// device serves. Each chain asks, per block of BlockTime, for a proposal
// signature on its turns (a ProposerShare of its blocks, spread evenly),
// a prevote and a precommit, Spacing apart, starting at the block's start:
// the chain's own phase offset (uniform over one block time) plus a jitter
// uniform in [0, Jitter), both drawn from the run seed. The chains are
// open loop (they do not slow down when the device is late), except that
// one chain waits for its own signature before asking for the next, as a
// validator signs one message at a time.
type BackgroundSpec struct {
	Chains        int
	BlockTime     time.Duration
	ProposerShare float64 // 0..1; 0.25 = one validator of four
	Spacing       time.Duration
	Jitter        time.Duration
}

// Validate checks the spec.
func (b BackgroundSpec) Validate() error {
	switch {
	case b.Chains < 0:
		return fmt.Errorf("background chains must be >= 0, got %d", b.Chains)
	case b.BlockTime <= 0:
		return fmt.Errorf("background block_time must be > 0, got %v", b.BlockTime)
	case b.ProposerShare < 0 || b.ProposerShare > 1 || math.IsNaN(b.ProposerShare):
		return fmt.Errorf("background proposer_share must be between 0 and 1, got %g", b.ProposerShare)
	case b.Spacing < 0 || b.Jitter < 0:
		return errors.New("background spacing and jitter must be >= 0")
	case 2*b.Spacing+b.Jitter >= b.BlockTime:
		return fmt.Errorf("background: two spacings plus jitter (%v) must be shorter than block_time (%v): a block's requests would overlap the next block's", 2*b.Spacing+b.Jitter, b.BlockTime)
	}
	return nil
}

// bgRequest is one signature a background chain asks for: At is its
// arrival, measured from the start of the load.
type bgRequest struct {
	At    time.Duration
	Phase string
}

// bgChain is one background chain's timing, drawn once from the seed.
type bgChain struct {
	spec   BackgroundSpec
	offset time.Duration // phase of its blocks against the others', [0, BlockTime)
	turn   float64       // where its proposer turns fall, [0, 1)
}

// proposes reports whether the chain's validator proposes block k: the
// turns are the blocks where k*share + turn crosses an integer, which
// spreads a share of the blocks evenly (share 0.25: every 4th block).
func (c bgChain) proposes(k int64) bool {
	s := c.spec.ProposerShare
	return math.Floor(float64(k+1)*s+c.turn) > math.Floor(float64(k)*s+c.turn)
}

// block lists the requests of block k, in arrival order, given that
// block's jitter draw. It is a pure function of the chain, k and jitter.
func (c bgChain) block(k int64, jitter time.Duration) []bgRequest {
	start := c.offset + time.Duration(k)*c.spec.BlockTime + jitter
	var out []bgRequest
	if c.proposes(k) {
		out = append(out, bgRequest{At: start, Phase: phase.Proposal})
	}
	return append(out,
		bgRequest{At: start + c.spec.Spacing, Phase: phase.Prevote},
		bgRequest{At: start + 2*c.spec.Spacing, Phase: phase.Precommit})
}

// background feeds the device with the background chains' requests.
type background struct {
	spec   BackgroundSpec
	chains []bgChain
	rngs   []*latency.Rand // jitter draws, one stream per chain
	signer *Simulated      // the device's service time, over a throwaway key
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// SetBackground gives the device the load of other chains, served at the
// time of profile p. Draws come from (seed, "device:<name>/background/<i>").
// It must be called before Start.
func (d *Device) SetBackground(spec BackgroundSpec, p profiles.Profile, seed int64) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	stream := backgroundStream(d.name)
	// The background's signatures are real ones, with a key of its own
	// (not any validator's), so the device's work is real work.
	key := ed25519.GenPrivKeyFromSecret([]byte(stream + "/" + strconv.FormatInt(seed, 10)))
	sim, err := NewSimulated(PrivKeySigner{Key: key}, p, seed, stream)
	if err != nil {
		return err
	}
	sim.clock = d.clock // the background's service time is the device's time
	bg := &background{spec: spec, signer: sim}
	for _, c := range NewBackgroundChains(d.name, spec, seed) {
		bg.chains = append(bg.chains, c.chain)
		bg.rngs = append(bg.rngs, c.rng)
	}
	d.bg = bg
	return nil
}

func backgroundStream(device string) string { return "device:" + device + "/background" }

// BackgroundChain is one background chain of a device, drawn from the
// seed exactly as SetBackground draws it, for a driver with its own clock
// (the simulator): Block gives its requests of each block, in order.
type BackgroundChain struct {
	chain bgChain
	rng   *latency.Rand
	// ChainID is what the chain's sign bytes carry.
	ChainID string
}

// BackgroundRequest is one signature a background chain asks for: At is
// its arrival, measured from the start of the load.
type BackgroundRequest = bgRequest

// NewBackgroundChains draws the chains of spec on device from seed (draws
// from (seed, "device:<name>/background/<i>")).
func NewBackgroundChains(device string, spec BackgroundSpec, seed int64) []*BackgroundChain {
	stream := backgroundStream(device)
	var out []*BackgroundChain
	for i := range spec.Chains {
		rng := latency.NewRand(seed, fmt.Sprintf("%s/%d", stream, i))
		c := bgChain{spec: spec, offset: time.Duration(rng.Float64() * float64(spec.BlockTime)), turn: rng.Float64()}
		out = append(out, &BackgroundChain{chain: c, rng: rng, ChainID: "valnet-background-" + strconv.Itoa(i)})
	}
	return out
}

// Block draws block k's jitter and lists its requests, in arrival order.
// Call it for k = 0, 1, 2, ... as the real load does.
func (c *BackgroundChain) Block(k int64) []BackgroundRequest {
	jitter := time.Duration(c.rng.Float64() * float64(c.chain.spec.Jitter))
	return c.chain.block(k, jitter)
}

// BackgroundTiming is the device time of the background's signatures:
// the stream SetBackground's signer draws from.
func BackgroundTiming(device string, p profiles.Profile, seed int64) (*DeviceTiming, error) {
	return NewDeviceTiming(p, seed, backgroundStream(device))
}

// BackgroundSignBytes are the sign bytes of a background chain's message.
func BackgroundSignBytes(chainID string, height int64, ph string) []byte {
	return bgSignBytes(chainID, height, ph)
}

// Start starts the clock of Stats and the background load, which runs
// until ctx ends or Close.
func (d *Device) Start(ctx context.Context) {
	d.mu.Lock()
	d.started = d.clock.Now()
	d.mu.Unlock()
	if d.bg == nil {
		return
	}
	ctx, d.bg.cancel = context.WithCancel(ctx)
	for i := range d.bg.chains {
		d.bg.wg.Add(1)
		go d.bg.run(ctx, d, i, d.started)
	}
}

// run is one background chain: it waits for each request's arrival, then
// for the device.
func (bg *background) run(ctx context.Context, d *Device, i int, t0 time.Time) {
	defer bg.wg.Done()
	c := &BackgroundChain{chain: bg.chains[i], rng: bg.rngs[i]}
	chainID := "valnet-background-" + strconv.Itoa(i)
	for k := int64(0); ; k++ {
		for _, req := range c.Block(k) {
			if wait := d.clock.Until(t0.Add(req.At)); wait > 0 && !sleepOn(d.clock, wait, ctx.Done()) {
				return
			}
			if ctx.Err() != nil {
				return
			}
			msg := bgSignBytes(chainID, k+1, req.Phase)
			_, err := d.serve(func() error {
				_, err := bg.signer.Sign(req.Phase, msg)
				return err
			}, true)
			if err != nil {
				return // the device is closed
			}
		}
	}
}

// stop ends the load and waits for every chain's goroutine.
func (bg *background) stop() {
	if bg.cancel != nil {
		bg.cancel()
	}
	_ = bg.signer.Close() // ends a service time in progress
	bg.wg.Wait()
}

// bgSignBytes are CometBFT's sign bytes of a background chain's message,
// so the device prices them at a real message's size.
func bgSignBytes(chainID string, height int64, ph string) []byte {
	blockID := cmtproto.BlockID{Hash: make([]byte, 32), PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: make([]byte, 32)}}
	ts := time.Unix(1700000000, 0).UTC()
	if ph == phase.Proposal {
		return types.ProposalSignBytes(chainID, &cmtproto.Proposal{Type: types.ProposalType, Height: height, BlockID: blockID, PolRound: -1, Timestamp: ts})
	}
	t := types.PrevoteType
	if ph == phase.Precommit {
		t = types.PrecommitType
	}
	return types.VoteSignBytes(chainID, &cmtproto.Vote{Type: t, Height: height, BlockID: blockID, Timestamp: ts})
}
