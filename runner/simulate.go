package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cometbft/cometbft/crypto"

	"github.com/valnet/valnet/results/eventlog"
)

// simulate runs the plan on a simulator; r.end is the virtual time its
// last event carries, for run_end.
func (r *run) simulate(ctx context.Context, s Simulator) error {
	keys := make([]crypto.PubKey, len(r.plan.Validators))
	infos := make([]eventlog.ValidatorInfo, len(r.plan.Validators))
	for i, v := range r.plan.Validators {
		k, err := validatorKey(r.seed, v.Name, v.Signer.KeyType)
		if err != nil {
			return fmt.Errorf("validator %s: %w", v.Name, err)
		}
		keys[i] = k.PubKey()
		infos[i] = eventlog.ValidatorInfo{Name: v.Name, Address: strings.ToUpper(k.PubKey().Address().String()),
			Power: v.Power, Device: v.Signer.Device}
	}
	start := r.runStart(infos)
	start.Time = time.Time{} // the model's epoch
	// A model runs in one call: nothing polls its live progress (the
	// wait loop's status line and halts are the real backends'), so the
	// tracker would keep a copy of every event for nobody.
	r.rec.untracked()
	r.live = startLiveSummary(r.writer)
	last := &lastTime{sink: r.rec}
	reason, err := s.Simulate(ctx, r.plan, r.seed, keys, start, last)
	r.reason, r.end = reason, last.t
	if reason == eventlog.StopMaxDuration {
		// The model ran to max_duration of virtual time (a halted chain
		// sits there), past its last event.
		r.end = last.first.Add(r.plan.Run.MaxDuration)
	}
	return err
}

// lastTime passes events on and keeps the time of the first (run_start)
// and of the latest.
type lastTime struct {
	sink     eventlog.Sink
	first, t time.Time
}

func (l *lastTime) Emit(e eventlog.Event) {
	l.note(&e)
	l.sink.Emit(e)
}

var _ eventlog.BatchSink = (*lastTime)(nil)

// EmitBatch passes a batch on, as one if its sink takes batches.
func (l *lastTime) EmitBatch(evs []eventlog.Event) {
	for i := range evs {
		l.note(&evs[i])
	}
	if bs, ok := l.sink.(eventlog.BatchSink); ok {
		bs.EmitBatch(evs)
		return
	}
	for i := range evs {
		l.sink.Emit(evs[i])
	}
}

func (l *lastTime) note(e *eventlog.Event) {
	if l.first.IsZero() {
		l.first = e.Time
	}
	if e.Time.After(l.t) {
		l.t = e.Time
	}
}
