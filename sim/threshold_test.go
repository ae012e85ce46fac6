package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
)

// The sim's threshold rounds follow the real model's rules
// (signers/threshold): the leader is the lowest cosigner up, the first
// threshold-1 nonce answers make the quorum, a down cosigner fails after
// a round trip, an isolated or too slow one after the timeout.
func TestCosignerRounds(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name                 string
		down, isolated       []int
		slow                 map[int]time.Duration
		wantLeader           int
		wantAnswered         []int
		wantNonce, wantTotal time.Duration
		wantErr              string
	}{
		// 10 ms one way between every pair, a 300 µs hop per call.
		{name: "all up", wantLeader: 1, wantAnswered: []int{1, 2}, wantNonce: 20*ms + 300*time.Microsecond, wantTotal: 40*ms + 600*time.Microsecond},
		{name: "leader down", down: []int{1}, wantLeader: 2, wantAnswered: []int{2, 3}, wantNonce: 20*ms + 300*time.Microsecond, wantTotal: 40*ms + 600*time.Microsecond},
		{name: "cosigner 2 slow: 3 answers first", slow: map[int]time.Duration{2: 50 * ms}, wantLeader: 1, wantAnswered: []int{1, 3},
			wantNonce: 20*ms + 300*time.Microsecond, wantTotal: 40*ms + 600*time.Microsecond},
		{name: "two down", down: []int{2, 3}, wantLeader: 1, wantErr: "1 of 3 cosigners answered the nonce round", wantNonce: 20 * ms, wantTotal: 20 * ms},
		{name: "leader isolated", isolated: []int{1}, wantLeader: 1, wantErr: "nonce round", wantNonce: 500 * ms, wantTotal: 500 * ms},
		{name: "all down", down: []int{1, 2, 3}, wantErr: "every cosigner is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := scenarios.ValidatorPlan{Name: "th", Signer: scenarios.SignerPlan{Type: scenarios.SignerThreshold,
				Threshold: &scenarios.ThresholdPlan{Cosigners: 3, Threshold: 2, Timeout: 500 * ms,
					Links: &scenarios.LinkPlan{Latency: &scenarios.LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: 10 * ms}}}}}}
			c, err := newCosigners(v, 1, 300*time.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.down {
				c.down[k-1] = true
			}
			for _, k := range tc.isolated {
				c.isolated[k-1] = true
			}
			for k, d := range tc.slow {
				c.slow[k-1] = latency.Constant(d)
			}
			r, total := c.rounds()
			if tc.wantErr != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", r.Err, tc.wantErr)
				}
			} else if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Leader != tc.wantLeader || !slices.Equal(r.Answered, tc.wantAnswered) || r.Nonces != tc.wantNonce || total != tc.wantTotal {
				t.Fatalf("leader %d answered %v nonce %v total %v; want %d %v %v %v", r.Leader, r.Answered, r.Nonces, total,
					tc.wantLeader, tc.wantAnswered, tc.wantNonce, tc.wantTotal)
			}
		})
	}
}
