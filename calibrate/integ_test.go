//go:build integ

package calibrate

import (
	"context"
	"io"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/valnet/valnet/sim"
)

// TestIntegCalibrate: a small calibration of real in-process runs on this
// host gives a calibration the sim reads back, measured and fitted
// figures in range, and a finite fit error.
func TestIntegCalibrate(t *testing.T) {
	cfg := Config{Validators: []int{4}, Heights: 10, Seed: 1, Name: "integ", OutDir: t.TempDir(), Cores: runtime.NumCPU(), Command: "TestIntegCalibrate"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	data, err := res.Params.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.ParseParams("written", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if p.SignLocal <= 0 || p.CommitCost <= 0 || p.GossipSleep < fitBounds.sleep[0] || p.GossipSleep > fitBounds.sleep[1] {
		t.Errorf("implausible figures: %+v", p)
	}
	if math.IsNaN(res.Error) || math.IsInf(res.Error, 0) || res.Error > 1 {
		t.Errorf("fit error %v", res.Error)
	}
	if len(res.Points) != 1 || res.Points[0].Real.IntervalP50 < 1000 {
		t.Errorf("points %+v: a real 4-validator run at default timeouts has blocks > 1 s apart", res.Points)
	}
}
