package scenarios

import (
	"testing"
	"time"
)

// TestLoadPlan checks the load key's defaults and units.
func TestLoadPlan(t *testing.T) {
	for _, c := range []struct {
		name, load string
		want       *LoadPlan
	}{
		{"none", "", nil},
		{"defaults", "load: {rate: 200/s}", &LoadPlan{Rate: 200, RateText: "200/s", Size: 1024, To: LoadToAll}},
		{"per minute", "load: {rate: 30/min, size: 512B}", &LoadPlan{Rate: 0.5, RateText: "30/min", Size: 512, To: LoadToAll}},
		{"fraction", "load: {rate: 1.5/s, size: 2KB, to: all}", &LoadPlan{Rate: 1.5, RateText: "1.5/s", Size: 2000, To: LoadToAll}},
		{"one validator", "load: {rate: 10/s, size: 1 MiB, to: v-2}", &LoadPlan{Rate: 10, RateText: "10/s", Size: 1 << 20, To: "v-2"}},
		{"window", "load: {rate: 10/s, size: 18B, start: 5s, duration: 10s}", &LoadPlan{Rate: 10, RateText: "10/s", Size: 18, To: LoadToAll, Start: 5 * time.Second, Duration: 10 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "name: load\nvalidators:\n  - {name: v, count: 2}\n" + c.load + "\n"
			p, err := Parse("load.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == nil && p.Load != nil:
				t.Errorf("load %+v, want none", *p.Load)
			case c.want != nil && (p.Load == nil || *p.Load != *c.want):
				t.Errorf("load %+v, want %+v", p.Load, *c.want)
			}
		})
	}
}
