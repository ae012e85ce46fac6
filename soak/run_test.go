package soak

import "testing"

func TestCountStacks(t *testing.T) {
	profile := "goroutine profile: total 23\n" +
		"9 @ 0x491e8e 0x4205ee\n#\t0x125a2a6\tgithub.com/cometbft/cometbft/internal/autofile.OpenAutoFile.func1+0x46\t/x/autofile.go:81\n\n" +
		"1 @ 0x426d49\n#\t0x494417\tos/signal.signal_recv+0x97\t/x/sigqueue.go:152\n\n" +
		"9 @ 0x491e8e\n#\t0x125a24a\tgithub.com/cometbft/cometbft/internal/autofile.(*AutoFile).closeFileRoutine+0x6a\t/x/autofile.go:104\n\n" +
		"4 @ 0x491e8e\n#\t0x11c3c64\tgithub.com/cometbft/cometbft/proxy.(*multiAppConn).killTMOnClientError+0x104\t/x/multi_app_conn.go:174\n"
	for _, c := range []struct {
		fn   string
		want int
	}{{upstreamLeak, 18}, {"killTMOnClientError", 4}, {"os/signal.", 1}, {"nowhere", 0}} {
		if got := countStacks(profile, c.fn); got != c.want {
			t.Errorf("countStacks(%q) = %d, want %d", c.fn, got, c.want)
		}
	}
}
