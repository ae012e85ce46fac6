package sim

import (
	"github.com/valnet/valnet/signers"
)

// A shared device's background load (other chains on the same HSM) in
// virtual time: the same chains, drawn from the same seed streams
// (signers.NewBackgroundChains), and the same device timing as the
// runner's background goroutines. Each chain is closed loop: it asks for
// its next signature once the last was served, or when its block says,
// whichever is later.

const evDevice evKind = 101

type bgState struct {
	chain   *signers.BackgroundChain
	k       int64 // block
	pending []signers.BackgroundRequest
}

type deviceBackground struct {
	chains []*bgState
	timing *signers.DeviceTiming
	n      int // chains
	served int64
}

// startBackground queues every device's first background requests.
func (w *world) startBackground() error {
	for di, name := range w.deviceNames {
		dp := w.plan.Devices[name]
		if dp.Background == nil {
			continue
		}
		prof, err := w.plan.DeviceProfile(dp.Profile)
		if err != nil {
			return err
		}
		bg := dp.Background
		spec := signers.BackgroundSpec{Chains: bg.Chains, BlockTime: bg.BlockTime, ProposerShare: bg.ProposerShare,
			Spacing: bg.Spacing, Jitter: bg.Jitter}
		timing, err := signers.BackgroundTiming(name, prof, w.seed)
		if err != nil {
			return err
		}
		d := w.devices[name]
		d.bg = &deviceBackground{timing: timing, n: bg.Chains}
		for ci, c := range signers.NewBackgroundChains(name, spec, w.seed) {
			st := &bgState{chain: c}
			d.bg.chains = append(d.bg.chains, st)
			w.nextBackground(di, ci, st, 0)
		}
	}
	return nil
}

// nextBackground queues chain ci's next request, not before notBefore.
func (w *world) nextBackground(di, ci int, st *bgState, notBefore int64) {
	for len(st.pending) == 0 {
		st.pending = st.chain.Block(st.k)
		st.k++
	}
	at := max(st.pending[0].At.Nanoseconds(), notBefore)
	w.q.push(event{at: at, kind: evDevice, node: int32(di), from: int32(ci)})
}

// serveBackground serves one background request on its device.
func (w *world) serveBackground(e event) {
	d := w.devices[w.deviceNames[e.node]]
	st := d.bg.chains[e.from]
	req := st.pending[0]
	st.pending = st.pending[1:]
	msg := signers.BackgroundSignBytes(st.chain.ChainID, st.k, req.Phase)
	service := d.bg.timing.Draw(len(msg)).Nanoseconds()
	start := max(w.now, d.busyUntil)
	d.busyUntil = start + service
	d.busy += service
	d.bg.served++
	w.nextBackground(int(e.node), int(e.from), st, start+service)
}
