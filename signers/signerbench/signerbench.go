// Package signerbench measures, on the host it runs on, what one signature
// costs: the bare algorithms a validator could sign with, and valnet's own
// signer backends on their real path (double-sign guard and state-file
// fsync included), directly and over the remote-signer hop.
//
// Numbers are per operation, sequential, on one goroutine: the way
// CometBFT's consensus routine signs (synchronously, one message at a
// time). They move ±30-50 % between runs on a shared machine; compare rows
// of one run, not runs.
package signerbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
)

// Row groups.
const (
	GroupAlgorithm = "algorithm" // bare keygen/sign/verify of a scheme
	GroupBackend   = "backend"   // valnet signer chain, SignVote end to end
	GroupTransport = "transport" // the remote hop alone
)

// Operations.
const (
	OpKeygen   = "keygen"
	OpSign     = "sign"
	OpVerify   = "verify"
	OpSignVote = "sign-vote"
)

// Notes start with these when a row holds no measurement (N == 0).
const (
	FailedPrefix       = "FAILED: "        // the row ran and is wrong: a bug, not a number
	NotAvailablePrefix = "not available: " // the row cannot run here
)

// Defaults.
const (
	DefaultIterations = 1000
	DefaultDuration   = 2 * time.Second
	DefaultWarmup     = 3
	// minSamples keeps a row capped by Duration meaningful: a median of
	// one sample would hide that the next op could be far slower.
	minSamples = 3
)

// Options says what to measure and how long.
type Options struct {
	// Only selects rows by name (see Names); empty: all.
	Only []string
	// Iterations is the number of timed ops per row (default 1000).
	Iterations int
	// Duration caps each row's timed ops (default 2 s; negative: no cap).
	// A capped row has fewer than Iterations samples, never fewer than 3.
	Duration time.Duration
	// Warmup ops run before timing (default 3); slow ops stop warming up
	// after a tenth of Duration, so a 0.7 s op is not paid for three times.
	Warmup int
	// KeyfileCost is the bcrypt cost of the encrypted key file (default 12,
	// tm2's). Tests use 4.
	KeyfileCost int
	// Dir holds the state files, key file and unix socket, in a fresh
	// subdirectory removed afterwards (default: the system temp dir). Put
	// it on the disk a validator's home would be on: fsync cost is its.
	Dir string
	// Progress, if set, gets one line per row as it starts.
	Progress io.Writer

	// clock times the ops and the Duration cap; nil: the real clock
	// (tests give a fake one that their ops advance).
	clock clockwork.Clock
}

func (o *Options) defaults() {
	if o.Iterations <= 0 {
		o.Iterations = DefaultIterations
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Warmup <= 0 {
		o.Warmup = DefaultWarmup
	}
	if o.KeyfileCost == 0 {
		o.KeyfileCost = 12
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
}

// entry is one selectable name: an algorithm, a backend or a transport
// overhead.
type entry struct {
	name  string
	group string
	// needs are run too when this one is selected (an overhead is taken
	// from its remote row's signatures).
	needs []string
}

// catalog is every row name in output order.
var catalog = func() []entry {
	var c []entry
	for _, a := range algorithms {
		c = append(c, entry{name: a.name, group: GroupAlgorithm})
	}
	for _, b := range backends {
		c = append(c, entry{name: b.name, group: GroupBackend})
	}
	for _, t := range transports {
		c = append(c, entry{name: "overhead-" + t, group: GroupTransport, needs: []string{"remote-" + t}})
	}
	return c
}()

// aliases select groups of names.
var aliases = map[string]func(entry) bool{
	"all":        func(entry) bool { return true },
	"algorithms": func(e entry) bool { return e.group == GroupAlgorithm },
	"backends":   func(e entry) bool { return e.group == GroupBackend },
	"transport":  func(e entry) bool { return e.group == GroupTransport },
}

// Names lists what Options.Only accepts: row names, then group aliases.
func Names() []string {
	var n []string
	for _, e := range catalog {
		n = append(n, e.name)
	}
	return append(n, "algorithms", "backends", "transport", "all")
}

// UnknownNameError is a name in Options.Only that is not in Names.
type UnknownNameError struct{ Name string }

func (e *UnknownNameError) Error() string {
	return fmt.Sprintf("unknown name %q (allowed: %s)", e.Name, strings.Join(Names(), ", "))
}

// Select resolves only (names and aliases, case-insensitive) into the set
// of row names to run, dependencies included. Empty only selects all.
func Select(only []string) (map[string]bool, error) {
	sel := map[string]bool{}
	if len(only) == 0 {
		only = []string{"all"}
	}
	for _, raw := range only {
		name := strings.ToLower(strings.TrimSpace(raw))
		if name == "" {
			continue
		}
		if match, ok := aliases[name]; ok {
			for _, e := range catalog {
				if match(e) {
					sel[e.name] = true
				}
			}
			continue
		}
		i := slices.IndexFunc(catalog, func(e entry) bool { return e.name == name })
		if i < 0 {
			return nil, &UnknownNameError{Name: raw}
		}
		sel[name] = true
	}
	if len(sel) == 0 {
		return nil, errors.New("nothing selected")
	}
	for _, e := range catalog {
		if sel[e.name] {
			for _, d := range e.needs {
				sel[d] = true
			}
		}
	}
	return sel, nil
}

// Run measures the selected rows. On cancellation it returns the rows
// finished so far with ctx's error. A row that fails (a signature that
// does not verify, a backend that does not open) is reported in the
// Report, not as an error: see Report.Failed.
func Run(ctx context.Context, opts Options) (Report, error) {
	opts.defaults()
	sel, err := Select(opts.Only)
	if err != nil {
		return Report{}, err
	}
	rep := newReport(opts)
	msgs := voteMessages(msgCount)
	rep.MessageBytes = len(msgs[0])

	for _, a := range algorithms {
		if !sel[a.name] {
			continue
		}
		rows, err := runAlgorithm(ctx, opts, a, msgs)
		rep.Rows = append(rep.Rows, rows...)
		if err != nil {
			return rep, err
		}
	}

	if !anySelected(sel, GroupBackend) {
		return rep, nil
	}
	dir, err := os.MkdirTemp(opts.Dir, "valnet-bench-")
	if err != nil {
		return rep, fmt.Errorf("bench dir: %w", err)
	}
	defer os.RemoveAll(dir)
	env := &backendEnv{opts: opts, dir: dir, tmpfs: isTmpfs(dir)}
	var bs []backend
	for _, b := range backends {
		if sel[b.name] {
			bs = append(bs, b)
		}
	}
	res, err := runBackends(ctx, env, bs)
	if err != nil {
		return rep, err
	}
	byName := map[string]backendResult{}
	for i, r := range res {
		rep.Rows = append(rep.Rows, r.row)
		byName[bs[i].name] = r
	}
	for _, t := range transports {
		if name := "overhead-" + t; sel[name] {
			rep.Rows = append(rep.Rows, overhead(name, byName["remote-"+t]))
		}
	}
	return rep, nil
}

func anySelected(sel map[string]bool, group string) bool {
	for _, e := range catalog {
		if e.group == group && sel[e.name] {
			return true
		}
	}
	return false
}

func progress(o Options, name, op string) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "valnet: bench %s %s\n", name, op)
	}
}
