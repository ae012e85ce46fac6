package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Unit is how the values of a threshold range are read and written: a
// duration (signer.latency, chain.timeouts.*), an integer (count,
// background.chains) or any number.
type Unit int

// Units.
const (
	Durations Unit = iota
	Integers
	Numbers
)

func (u Unit) String() string {
	switch u {
	case Durations:
		return "duration"
	case Integers:
		return "integer"
	}
	return "number"
}

// defaultSteps is how many resolution steps the default resolution cuts a
// range into.
const defaultSteps = 32

// Grid is the values a threshold search may probe: Lo, Lo+Step, Lo+2·Step,
// ... and Hi (the last step may be shorter). Values are float64: the
// nanoseconds of a duration, an integer, or a number; Format writes them as
// a scenario would.
type Grid struct {
	Unit       Unit
	Lo, Hi     float64
	Resolution float64
}

// ParseGrid reads a range "LO..HI" and a resolution in unit u. The default
// resolution is the range / 32: for integers rounded down and at least 1, for
// durations rounded down to a whole millisecond (when at least 1ms). Errors name the flag they are about.
func ParseGrid(u Unit, rng, resolution string) (Grid, error) {
	loText, hiText, ok := strings.Cut(rng, "..")
	if !ok {
		return Grid{}, fmt.Errorf("--range %q: want LO..HI, e.g. %s", rng, example(u))
	}
	lo, err := parseValue(u, strings.TrimSpace(loText))
	if err != nil {
		return Grid{}, fmt.Errorf("--range %q: low end: %v", rng, err)
	}
	hi, err := parseValue(u, strings.TrimSpace(hiText))
	if err != nil {
		return Grid{}, fmt.Errorf("--range %q: high end: %v", rng, err)
	}
	g := Grid{Unit: u, Lo: lo, Hi: hi}
	switch {
	case hi == lo:
		return Grid{}, fmt.Errorf("--range %q is empty: LO and HI are the same value", rng)
	case hi < lo:
		return Grid{}, fmt.Errorf("--range %q is reversed: write the lower value first (%s..%s); --direction says which end the search looks for", rng, g.Format(hi), g.Format(lo))
	}
	if resolution == "" {
		g.Resolution = (hi - lo) / defaultSteps
		switch u {
		case Integers:
			g.Resolution = max(1, math.Floor(g.Resolution))
		case Durations:
			// Whole milliseconds (rounded down) keep probe values readable.
			if ms := float64(time.Millisecond); g.Resolution >= ms {
				g.Resolution = math.Floor(g.Resolution/ms) * ms
			}
			g.Resolution = max(1, math.Floor(g.Resolution))
		}
		return g, nil
	}
	r, err := parseValue(u, resolution)
	if err != nil {
		return Grid{}, fmt.Errorf("--resolution %q: %v", resolution, err)
	}
	if r <= 0 {
		return Grid{}, fmt.Errorf("--resolution %q: must be greater than zero", resolution)
	}
	g.Resolution = r
	return g, nil
}

func example(u Unit) string {
	switch u {
	case Durations:
		return "0..3s or 50ms..2s"
	case Integers:
		return "1..20"
	}
	return "0.5..4"
}

// parseValue reads one value in unit u.
func parseValue(u Unit, s string) (float64, error) {
	switch u {
	case Durations:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 550ms, 1.5s, 0s)", s)
		}
		return float64(d), nil
	case Integers:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", s)
		}
		return float64(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

// Steps is the index of Hi: the grid's values are Value(0..Steps).
func (g Grid) Steps() int {
	return int(math.Ceil((g.Hi-g.Lo)/g.Resolution - 1e-9))
}

// Value is the grid's i-th value, as Format writes it (so the value a run
// gets is the value printed).
func (g Grid) Value(i int) float64 {
	if i >= g.Steps() {
		return g.Hi
	}
	v, err := parseValue(g.Unit, g.Format(g.Lo+float64(i)*g.Resolution))
	if err != nil {
		panic(err) // Format writes what parseValue reads
	}
	return v
}

// Format writes v as a scenario would: 550ms, 1.5s, 0s, 2m; 12; 0.25.
func (g Grid) Format(v float64) string {
	switch g.Unit {
	case Durations:
		return FormatDuration(time.Duration(math.Round(v)))
	case Integers:
		return strconv.FormatInt(int64(math.Round(v)), 10)
	}
	return strconv.FormatFloat(v, 'g', 12, 64)
}

// FormatDuration writes d as a scenario's YAML would: time.Duration's text
// without the zero units Go appends (2m, not 2m0s).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
