package runner

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers/threshold"
)

// openThreshold starts the cosigners of m's threshold signer (a MODEL of
// horcrux's protocol) and routes every cosigner-to-cosigner connection
// through the link fabric, as endpoints NAME.cosigner-K, so that each
// round pays its links and a cosigner can be isolated. Each signature's
// rounds become a cosign event.
func (r *run) openThreshold(m *member) (*threshold.Cluster, error) {
	tp, name := m.plan.Signer.Threshold, m.plan.Name
	if r.fabric == nil {
		return nil, fmt.Errorf("a threshold signer needs the link fabric, which this run did not start")
	}
	obs := threshold.ObserverFunc(func(x threshold.Round) {
		c := &eventlog.CosignSample{Model: threshold.Model, Cosigners: tp.Cosigners, Threshold: tp.Threshold,
			Leader: x.Leader, NonceMS: ms(x.Nonces), QuorumMS: ms(x.Quorum), Answered: x.Answered}
		if c.Answered == nil {
			c.Answered = []int{}
		}
		for _, f := range x.Failed {
			c.Failed = append(c.Failed, eventlog.CosignFailure{Cosigner: f.Cosigner, Round: f.Round, Reason: f.Reason})
		}
		e := eventlog.Event{Time: time.Now(), Kind: eventlog.KindCosign, Node: name, Validator: name,
			Height: x.Height, Round: int32(x.Round), Phase: x.Phase, Cosign: c}
		if x.Err != nil {
			e.Error = x.Err.Error()
		}
		r.rec.EmitAsync(e)
	})
	c, err := threshold.Start(threshold.Config{Cosigners: tp.Cosigners, Threshold: tp.Threshold, Timeout: tp.Timeout,
		StateDir: filepath.Join(m.config.RootDir, "cosigners"), Observer: obs})
	if err != nil {
		return nil, err
	}
	for i := 1; i <= tp.Cosigners; i++ {
		for j := 1; j <= tp.Cosigners; j++ {
			if i == j {
				continue
			}
			from, to := scenarios.CosignerEndpoint(name, i), scenarios.CosignerEndpoint(name, j)
			l, err := links.Cosigner(*tp, from, to, i, j, r.seed)
			if err != nil {
				_ = c.Close()
				return nil, fmt.Errorf("cosigner link %s -> %s: %w", from, to, err)
			}
			r.setLink(from, to, l)
			route, err := r.fabric.Route(from, to, c.Addr(j))
			if err != nil {
				_ = c.Close()
				return nil, err
			}
			c.SetRoute(i, j, route)
		}
	}
	return c, nil
}
