package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers/threshold"
)

// cosigners is a threshold signer (type threshold, itself a MODEL of
// horcrux v3's protocol) in virtual time. Its rules are those of the real
// runner's model, signers/threshold (cluster.go, KeySigner.rounds), which
// follow horcrux's ThresholdValidator.Sign (signer/threshold_validator.go):
//   - the leader is the lowest-numbered cosigner that is up;
//   - it makes its own nonce first (in place), then asks every other
//     cosigner at once; the first threshold-1 answers make the quorum;
//   - the sign round asks the quorum (the leader in place) at once and
//     needs every one of them;
//   - each call to another cosigner is one round trip over the cosigner
//     links (the same models and streams as the runner's fabric links,
//     links.Cosigner) plus the cosigner's slowness and one remote_hop of
//     the calibration; it fails after `timeout` when the link is isolated
//     or the answer is later than that, and after the round trip when the
//     cosigner is down (its port hangs up);
//   - without a quorum the signature fails.
type cosigners struct {
	n, threshold int
	timeout      time.Duration
	hop          time.Duration
	link         [][]latency.Model // [i][j]: one way from cosigner i+1 to j+1; nil: 0
	down         []bool
	slow         []latency.Model
	isolated     []bool
}

func newCosigners(v scenarios.ValidatorPlan, seed int64, hop time.Duration) (*cosigners, error) {
	tp := v.Signer.Threshold
	c := &cosigners{n: tp.Cosigners, threshold: tp.Threshold, timeout: tp.Timeout, hop: hop,
		down: make([]bool, tp.Cosigners), slow: make([]latency.Model, tp.Cosigners), isolated: make([]bool, tp.Cosigners)}
	for i := 1; i <= c.n; i++ {
		row := make([]latency.Model, c.n)
		for j := 1; j <= c.n; j++ {
			if i == j {
				continue
			}
			from, to := scenarios.CosignerEndpoint(v.Name, i), scenarios.CosignerEndpoint(v.Name, j)
			l, err := links.Cosigner(*tp, from, to, i, j, seed)
			if err != nil {
				return nil, fmt.Errorf("validator %s: cosigner link %s -> %s: %w", v.Name, from, to, err)
			}
			if l.Bandwidth > 0 {
				return nil, fmt.Errorf("validator %s: the sim does not model a cosigner link's bandwidth (a round's few hundred bytes); leave bandwidth out to model its latency", v.Name)
			}
			if l.Latency != nil {
				latency.MakeSerial(l.Latency)
				row[j-1] = l.Latency
			}
		}
		c.link = append(c.link, row)
	}
	return c, nil
}

func draw(m latency.Model) time.Duration {
	if m == nil {
		return 0
	}
	return m.Draw()
}

// call is one call from the leader l to cosigner k (0-based): when its
// answer (or its failure) reaches the leader, after the call started.
func (c *cosigners) call(l, k int) (time.Duration, error) {
	if l == k {
		return draw(c.slow[k]), nil
	}
	if c.isolated[l] || c.isolated[k] {
		return c.timeout, fmt.Errorf("no answer within the timeout (%v)", c.timeout)
	}
	there, back := draw(c.link[l][k]), draw(c.link[k][l])
	if c.down[k] {
		return there + back, fmt.Errorf("unexpected EOF")
	}
	d := there + draw(c.slow[k]) + back + c.hop
	if d > c.timeout {
		return c.timeout, fmt.Errorf("no answer within the timeout (%v)", c.timeout)
	}
	return d, nil
}

type answerAt struct {
	k   int
	at  time.Duration
	err error
}

// rounds is one signature's rounds, as threshold.KeySigner.rounds runs
// them: the leader, the nonce round's and the quorum's times, who
// answered, who failed, and an error without a quorum.
func (c *cosigners) rounds() (r threshold.Round, total time.Duration) {
	l := slices.Index(c.down, false)
	if l < 0 {
		r.Err = fmt.Errorf("threshold signer: every cosigner is down")
		return r, 0
	}
	r.Leader = l + 1
	own, _ := c.call(l, l)
	var asked []answerAt
	for k := range c.n {
		if k != l {
			at, err := c.call(l, k)
			asked = append(asked, answerAt{k, own + at, err})
		}
	}
	slices.SortStableFunc(asked, func(a, b answerAt) int { return cmp.Compare(a.at, b.at) })
	quorum := []int{l}
	now := own
	for _, a := range asked {
		if len(quorum) >= c.threshold {
			break
		}
		now = a.at
		if a.err != nil {
			r.Failed = append(r.Failed, threshold.Failure{Cosigner: a.k + 1, Round: "nonce", Reason: a.err.Error()})
			continue
		}
		quorum = append(quorum, a.k)
	}
	r.Nonces = now
	if len(quorum) < c.threshold {
		r.Err = fmt.Errorf("threshold signer: %d of %d cosigners answered the nonce round, %d needed", len(quorum), c.n, c.threshold)
		return r, now
	}
	end := now
	for _, k := range quorum {
		at, err := c.call(l, k)
		end = max(end, now+at)
		if err != nil {
			r.Failed = append(r.Failed, threshold.Failure{Cosigner: k + 1, Round: "sign", Reason: err.Error()})
			continue
		}
		r.Answered = append(r.Answered, k+1)
	}
	r.Quorum = end
	slices.Sort(r.Answered)
	if len(r.Answered) < c.threshold {
		r.Err = fmt.Errorf("threshold signer: %d of the quorum's %d partial signatures came back, %d needed", len(r.Answered), len(quorum), c.threshold)
	}
	return r, end
}

// cosignEvent is the cosign event of one signature's rounds, as the
// runner writes it (runner/threshold.go).
func (c *cosigners) cosignEvent(r threshold.Round) *eventlog.CosignSample {
	s := &eventlog.CosignSample{Model: threshold.Model, Cosigners: c.n, Threshold: c.threshold, Leader: r.Leader,
		NonceMS: msOf(r.Nonces), QuorumMS: msOf(r.Quorum), Answered: r.Answered}
	if s.Answered == nil {
		s.Answered = []int{}
	}
	for _, f := range r.Failed {
		s.Failed = append(s.Failed, eventlog.CosignFailure{Cosigner: f.Cosigner, Round: f.Round, Reason: f.Reason})
	}
	return s
}
