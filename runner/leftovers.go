package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/docker"
	"github.com/valnet/valnet/nodes"
)

// Leftovers is what runners that are gone (killed) left on this host and
// in its Docker engine: every kind a run creates that outlives a SIGKILL.
type Leftovers struct {
	Processes  []int    // node processes (process backend), killed
	Containers int      // containers (docker backend)
	Networks   []string // docker networks
	Sockets    int      // unix sockets, in the temp dirs
	TempDirs   []string // run temp dirs (sockets, image builds)
	// Notes say what could not be checked (no Docker engine answers).
	Notes []string
}

// dockerCheckTimeout bounds the Docker part of a cleanup, so that an
// engine that does not answer never holds up a run.
const dockerCheckTimeout = 5 * time.Second

// CleanLeftovers removes what runners that are gone left behind: node
// processes, containers, docker networks, temp dirs and the unix sockets
// in them; dryRun only lists them. A resource is removed only when its
// runner is known to be gone: its pid runs no process, or another one
// (start time), as nodes.SweepLeftovers and docker.CleanupLeftovers tell.
// A live run's resources are never touched. valnet run calls it before
// each run, valnet clean on demand.
func CleanLeftovers(ctx context.Context, dryRun bool) (Leftovers, error) {
	var l Leftovers
	dctx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	// Docker first: it removes its runs' socket dirs itself.
	d, derr := docker.CleanupLeftovers(dctx, dryRun)
	if derr != nil && len(d.Runs) == 0 && d.Containers == 0 {
		l.Notes = append(l.Notes, "docker: not checked: "+firstLine(derr.Error()))
		derr = nil
	}
	l.Containers, l.Networks = d.Containers, d.Networks
	l.TempDirs, l.Sockets = d.SockDirs, d.Sockets
	n, nerr := nodes.SweepLeftovers(dryRun, d.SockDirs...)
	l.Processes = n.Processes
	l.TempDirs = append(l.TempDirs, n.TempDirs...)
	l.Sockets += n.Sockets
	if derr != nil {
		return l, derr
	}
	return l, nerr
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Empty reports whether nothing was left.
func (l Leftovers) Empty() bool {
	return len(l.Processes) == 0 && l.Containers == 0 && len(l.Networks) == 0 && l.Sockets == 0 && len(l.TempDirs) == 0
}

// Lines says what was removed (dryRun: what would be), one line per kind
// with its count; kinds with none are left out.
func (l Leftovers) Lines(dryRun bool) []string {
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	var out []string
	add := func(n int, one, many, detail string) {
		if n == 0 {
			return
		}
		what := many
		if n == 1 {
			what = one
		}
		line := fmt.Sprintf("leftovers of dead runs: %s %d %s", verb, n, what)
		if detail != "" {
			line += " (" + detail + ")"
		}
		out = append(out, line)
	}
	pids := make([]string, len(l.Processes))
	for i, p := range l.Processes {
		pids[i] = strconv.Itoa(p)
	}
	add(len(l.Processes), "node process", "node processes", "pids "+strings.Join(pids, ", "))
	add(l.Containers, "container", "containers", "")
	add(len(l.Networks), "docker network", "docker networks", strings.Join(l.Networks, ", "))
	add(l.Sockets, "unix socket", "unix sockets", "")
	add(len(l.TempDirs), "temp dir", "temp dirs", strings.Join(l.TempDirs, ", "))
	return out
}
