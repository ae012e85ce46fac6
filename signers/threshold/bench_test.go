package threshold

import (
	"testing"
	"time"
)

// BenchmarkThresholdSign is the model's own cost per signature on
// loopback (no link latency): both rounds over net/rpc, the cosigners'
// persisted marks, and the full key's signature.
func BenchmarkThresholdSign(b *testing.B) {
	for _, n := range []struct{ cosigners, threshold int }{{3, 2}, {5, 3}} {
		b.Run(Label(n.threshold, n.cosigners), func(b *testing.B) {
			c, err := Start(Config{Cosigners: n.cosigners, Threshold: n.threshold, StateDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			s := c.Signer(fullKey{testKey})
			ts := time.Unix(1700000000, 0).UTC()
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Sign("prevote", prevote(int64(i+1), 0, ts)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
