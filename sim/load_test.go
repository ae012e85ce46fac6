package sim

import (
	"math"
	"testing"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
)

// TestMempoolBytesOnLinks: while the load runs, a connection i -> j
// carries the transactions that entered at i, none that entered at j and
// half of the others (each crosses a link between two other nodes once);
// after the load ends, none.
func TestMempoolBytesOnLinks(t *testing.T) {
	const perTx = 100 * 1024.0 // 100/s of 1 KiB
	tests := []struct {
		name, load string
		want       func(from, to int32) float64
	}{
		{"round robin", "{rate: 100/s, size: 1KiB}", func(int32, int32) float64 {
			return perTx * (0.25 + 0.5/2) // its own quarter, half of the other two quarters
		}},
		{"to v-1", "{rate: 100/s, size: 1KiB, to: v-1}", func(from, to int32) float64 {
			switch {
			case from == 0:
				return perTx
			case to == 0:
				return 0
			}
			return perTx / 2
		}},
		{"ended", "{rate: 100/s, size: 1KiB, duration: 2s}", func(int32, int32) float64 { return 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := scenarios.Parse("load.yaml", []byte(`name: load
run: {backend: sim, heights: 8}
validators: [{name: v, count: 4}]
load: `+tc.load+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, w := runToJSON(t, plan)
			for i := range int32(4) {
				for j := range int32(4) {
					if i == j {
						continue
					}
					if got, want := w.net.link(i, j).mempool, tc.want(i, j); math.Abs(got-want) > 1e-6 {
						t.Errorf("link %d -> %d carries %.0f B/s of transactions, want %.0f", i, j, got, want)
					}
				}
			}
		})
	}
}

// TestMempoolTakesItsShare: the mempool channel's bytes slow a consensus
// channel by what they take, up to the mempool's priority share (5
// against data's 10: a third of the connection).
func TestMempoolTakesItsShare(t *testing.T) {
	for _, tc := range []struct {
		mempool, want float64 // bytes per second; the data channel's rate
	}{
		{0, 1000},
		{200, 800},
		{900, 1000 - 1000.0/3},
	} {
		nm := &netModel{n: 2, links: make([]link, 4), sleep: 1, cap: 1000, rng: latency.NewStream(1, "test")}
		lk := nm.link(0, 1)
		lk.rate, lk.mempool = 1000, tc.mempool
		arrive, _ := nm.sendOn(lk, 0, 1000, chData)
		if want := int64(1000 / tc.want * 1e9); math.Abs(float64(arrive-want)) > 1 {
			t.Errorf("mempool %.0f B/s: 1000 B arrive at %d ns, want %d (%.0f B/s left to the data channel)", tc.mempool, arrive, want, tc.want)
		}
	}
}
