package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"testing"
)

func TestSaturated(t *testing.T) {
	tests := []struct {
		name string
		s    eventlog.HostSample
		want bool
	}{
		{"idle", eventlog.HostSample{CPUBusy: 0.1, SchedLagP99MS: 0.2, TickLagMS: 0.1}, false},
		{"busy but goroutines run at once", eventlog.HostSample{CPUBusy: 0.97, SchedLagP99MS: 1, TickLagMS: 2}, false},
		{"busy and waiting to be scheduled", eventlog.HostSample{CPUBusy: 0.97, SchedLagP99MS: 25}, true},
		{"a burst of wake-ups on a 90 % busy host", eventlog.HostSample{CPUBusy: 0.9, SchedLagP99MS: 100, TickLagMS: 120}, false},
		{"busy and the ticker is late", eventlog.HostSample{CPUBusy: 0.96, TickLagMS: 120}, true},
		{"lagging but not busy (GC pause, page faults)", eventlog.HostSample{CPUBusy: 0.5, SchedLagP99MS: 30, TickLagMS: 200}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Saturated(tt.s); got != tt.want {
				t.Fatalf("Saturated(%+v) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

func TestHostSummary(t *testing.T) {
	var a hostAgg
	if a.result() != nil {
		t.Fatal("no samples must give no host summary")
	}
	for i := range 20 {
		s := eventlog.HostSample{Cores: 2, CPUBusy: 0.2, SchedLagP99MS: 0.5, RSSMB: float64(100 + i)}
		if i < 2 { // two saturated seconds of twenty: 10 %
			s.CPUBusy, s.SchedLagP99MS, s.TickLagMS = 0.99, 20, 80
		}
		a.add(&s)
	}
	got := a.result()
	want := HostSummary{Cores: 2, Samples: 20, CPUBusyP95: 0.99, SchedLagP99MS: 20, TickLagMaxMS: 80, RSSMaxMB: 119, SaturatedSeconds: 2, Overloaded: true}
	if *got != want {
		t.Fatalf("got %+v\nwant %+v", *got, want)
	}
}
