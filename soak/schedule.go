package soak

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/action"
)

// Family is a kind of fault the soak injects: a fault action of the
// scenario schema (internal/action).
type Family = string

// Families are every fault family a soak draws from, in report order.
// Heal, node-start and node-resume are not families: they end others,
// and every generated fault ends by its own duration.
var Families = []Family{
	action.SignerDelay, action.SignerDrop, action.SignerError, action.SignerOutage, action.SignerRestart,
	action.CosignerDown, action.CosignerSlow,
	action.Partition, action.Isolate, action.NetworkLatency,
	action.NodeKill, action.NodeStop, action.NodeRestart, action.NodePause,
}

// Fault is one scenario fault as the schema writes it (scenarios/schema.go
// rawFault): the schedule goes through the same strict decoding and
// validation as a scenario's own faults, and its YAML can be pasted into
// a scenario's faults: list.
type Fault struct {
	Action   string     `json:"action"`
	Target   string     `json:"target,omitempty"`
	At       At         `json:"at"`
	Duration string     `json:"duration,omitempty"`
	Latency  string     `json:"latency,omitempty"`
	Groups   [][]string `json:"groups,omitempty"`

	start, dur time.Duration // the window, for the generator
	validator  string        // the validator it is on ("" for a partition)
}

// At is when a fault starts: the time since the network started.
type At struct {
	Time string `json:"time"`
}

// GenConfig is everything a schedule depends on.
type GenConfig struct {
	Seed int64
	// Start and End bound the faults: none starts before Start, every one
	// has ended by End (the quiet tail after End shows the chain resume).
	Start, End time.Duration
	// Validators are the expanded validator names, in plan order.
	Validators []string
	// Remote are the validators whose signer is remote (via tcp or unix):
	// signer-outage and signer-restart need one.
	Remote []string
	// Pause: the backend can freeze a node (process, docker): node-pause.
	Pause bool
	// Cosigners are the validators with a threshold signer, each with its
	// number of cosigners: cosigner-down and cosigner-slow need one.
	Cosigners map[string]int
}

// Available are the families cfg allows, in Families order, and why each
// other one is left out.
func (cfg GenConfig) Available() (fams []Family, missing map[Family]string) {
	missing = map[Family]string{}
	for _, f := range Families {
		switch {
		case (f == action.SignerOutage || f == action.SignerRestart) && len(cfg.Remote) == 0:
			missing[f] = "no validator has a remote signer (via: tcp or unix)"
		case (f == action.CosignerDown || f == action.CosignerSlow) && len(cfg.Cosigners) == 0:
			missing[f] = "no validator has a threshold signer (type: threshold)"
		case f == action.NodePause && !cfg.Pause:
			missing[f] = "in-process nodes cannot be frozen (run on the process or docker backend)"
		case f == action.Partition && len(cfg.Validators) < 2:
			missing[f] = "a partition needs at least two validators"
		default:
			fams = append(fams, f)
		}
	}
	return fams, missing
}

// Window lengths and gaps of generated faults.
const (
	minFault = 3 * time.Second
	maxFault = 15 * time.Second
	minGap   = 1 * time.Second
	maxGap   = 6 * time.Second
)

// Generate draws the fault schedule of a soak: a pure function of cfg
// (the same config always gives the same schedule). Families are dealt
// from a shuffled deck, reshuffled once every family has been drawn, so
// each appears as soon as there is time for it. At most f = (n-1)/3
// validators are under a node or signer fault at once, the same validator
// never carries two, and network faults (partition, isolation, latency)
// never overlap each other; partitions are drawn both with and without a
// side holding +2/3 of the validators.
func Generate(cfg GenConfig) []Fault {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x50a1c0de))
	fams, _ := cfg.Available()
	n := len(cfg.Validators)
	if len(fams) == 0 || n == 0 || cfg.End-cfg.Start < minFault {
		return nil
	}
	f := max(1, (n-1)/3)
	busy := map[string]time.Duration{} // validator -> when its fault ends
	var netBusy time.Duration
	var deck []Family
	var out []Fault
	skips := 0
	for t := cfg.Start; cfg.End-t >= minFault && skips < 4*len(fams); {
		if len(deck) == 0 {
			deck = slices.Clone(fams)
			rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		fam := deck[0]
		dur := min(between(rng, minFault, maxFault), cfg.End-t)
		fl, ok := draw(rng, fam, t, dur, cfg, f, busy, netBusy)
		if !ok {
			// Nothing free for this family now: try the next one a
			// little later, keeping it on top of the deck.
			deck = append(deck[1:], fam)
			t += time.Second
			skips++
			continue
		}
		skips = 0
		deck = deck[1:]
		end := t + fl.dur
		switch fam {
		case action.Partition:
			netBusy = end
		case action.Isolate, action.NetworkLatency:
			netBusy = end
			busy[fl.validator] = end
		default:
			busy[fl.validator] = end
		}
		out = append(out, fl)
		t += between(rng, minGap, maxGap)
	}
	return out
}

// draw builds one fault of family fam at t, or says nothing is free.
func draw(rng *rand.Rand, fam Family, t, dur time.Duration, cfg GenConfig, f int, busy map[string]time.Duration, netBusy time.Duration) (Fault, bool) {
	free := func(pool []string) []string {
		var out []string
		for _, v := range pool {
			if busy[v] <= t {
				out = append(out, v)
			}
		}
		return out
	}
	underFault := 0
	for _, end := range busy {
		if end > t {
			underFault++
		}
	}
	fl := Fault{Action: fam, At: At{Time: t.String()}, start: t, dur: dur}
	fl.Duration = dur.String()
	pick := func(pool []string) bool {
		c := free(pool)
		if len(c) == 0 || underFault >= f {
			return false
		}
		fl.Target = c[rng.IntN(len(c))]
		fl.validator = fl.Target
		return true
	}
	switch fam {
	case action.Partition:
		if netBusy > t {
			return fl, false
		}
		vals := slices.Clone(cfg.Validators)
		rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		n := len(vals)
		k := 1 + rng.IntN(max(1, (n-1)/3)) // a minority: the rest hold +2/3
		if rng.IntN(3) == 0 {
			k = n / 2 // no side holds +2/3: the chain halts until the heal
		}
		k = max(1, min(k, n-1))
		a, b := vals[:k], vals[k:]
		slices.Sort(a)
		slices.Sort(b)
		fl.Groups = [][]string{a, b}
		return fl, true
	case action.Isolate, action.NetworkLatency:
		if netBusy > t || !pick(cfg.Validators) {
			return fl, false
		}
		if fam == action.NetworkLatency {
			fl.Latency = between(rng, 50*time.Millisecond, 800*time.Millisecond).Round(10 * time.Millisecond).String()
		}
		return fl, true
	case action.SignerOutage, action.SignerRestart:
		return fl, pick(cfg.Remote)
	case action.CosignerDown, action.CosignerSlow:
		// One cosigner of a threshold signer: within the threshold the
		// signer signs on, beyond it its validator misses votes.
		if !pick(slices.Sorted(maps.Keys(cfg.Cosigners))) {
			return fl, false
		}
		fl.Target += ".cosigner-" + strconv.Itoa(1+rng.IntN(cfg.Cosigners[fl.Target]))
		if fam == action.CosignerSlow {
			fl.Latency = between(rng, 100*time.Millisecond, 2*time.Second).Round(10 * time.Millisecond).String()
		}
		return fl, true
	case action.SignerDelay:
		fl.Latency = between(rng, 100*time.Millisecond, 3*time.Second).Round(10 * time.Millisecond).String()
	}
	return fl, pick(cfg.Validators)
}

// between draws a duration in [lo, hi], to the 100 ms.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	d := lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	return d.Round(100 * time.Millisecond)
}

// FlowYAML is the schedule as one flow value (JSON, which YAML reads):
// the value of --set faults=... that puts it into the scenario.
func FlowYAML(faults []Fault) string {
	if faults == nil {
		faults = []Fault{}
	}
	b, err := json.Marshal(faults)
	if err != nil {
		panic(err) // strings and lists only
	}
	return string(b)
}

// ScheduleYAML is the schedule as a scenario's faults: section, one fault
// a line, to paste into a scenario file.
func ScheduleYAML(faults []Fault) string {
	var b strings.Builder
	b.WriteString("faults:\n")
	if len(faults) == 0 {
		b.WriteString("  []\n")
	}
	for _, f := range faults {
		b.WriteString("  - " + f.YAML() + "\n")
	}
	return b.String()
}

// YAML is the fault as one flow mapping.
func (f Fault) YAML() string {
	parts := []string{"action: " + f.Action}
	if f.Target != "" {
		parts = append(parts, "target: "+f.Target)
	}
	parts = append(parts, "at: {time: "+f.At.Time+"}")
	if f.Duration != "" {
		parts = append(parts, "duration: "+f.Duration)
	}
	if f.Latency != "" {
		parts = append(parts, "latency: "+f.Latency)
	}
	if len(f.Groups) > 0 {
		gs := make([]string, len(f.Groups))
		for i, g := range f.Groups {
			gs[i] = "[" + strings.Join(g, ", ") + "]"
		}
		parts = append(parts, "groups: ["+strings.Join(gs, ", ")+"]")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
