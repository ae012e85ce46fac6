package docker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/nodes"
)

// BenchmarkDockerFirstBlock measures a docker network of n validators
// (peers by container IP, FilePV in each home) from the first container
// start to the first block event, the time until every container answers
// RPC, and the memory each container uses right after the first block.
// The image exists already (built once per binary, outside the timing).
//
//	go test ./docker/ -run '^$' -bench DockerFirstBlock -benchtime 1x
func BenchmarkDockerFirstBlock(b *testing.B) {
	for _, n := range []int{4, 25} {
		b.Run(fmt.Sprintf("validators=%d", n), func(b *testing.B) {
			var firstBlock, allUp time.Duration
			var memSum, memMax float64
			var memCount int
			for range b.N {
				b.StopTimer()
				root := b.TempDir()
				nettest.ShowLogsOnFailure(b, root, "node.log", nodes.StderrFile)
				r := newTestRun(b, nil)
				tn := newTestNet(b, r, root, n, netOptions{})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				b.StartTimer()
				start := time.Now()
				tn.start(ctx)
				up := time.Since(start)
				nettest.WaitFor(b, 3*time.Minute, "the first block", func() bool { return !tn.Log.FirstBlock().IsZero() })
				b.StopTimer()
				firstBlock += tn.Log.FirstBlock().Sub(start)
				allUp += up
				mem, err := r.Memory(ctx)
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range mem {
					mib := float64(m) / (1 << 20)
					memSum += mib
					memMax = max(memMax, mib)
					memCount++
				}
				tn.Stop()
				cancel()
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(firstBlock.Seconds()/float64(b.N), "s/first-block")
			b.ReportMetric(allUp.Seconds()/float64(b.N), "s/all-up")
			if memCount > 0 {
				b.ReportMetric(memSum/float64(memCount), "MiB/container")
				b.ReportMetric(memMax, "MiB-max/container")
			}
		})
	}
}
