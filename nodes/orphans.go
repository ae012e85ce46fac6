package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The pid registry: every node process the process backend spawns is
// recorded in PIDRegistryDir()/<pid>.json until it is reaped. Pdeathsig
// already kills a child whose runner dies; the registry catches what
// slips through (a child spawned by a runner that was itself killed before
// the kernel delivered the signal, or another OS user's runner) so that
// the next run can clean up.

// PIDRegistryDir is where spawned node processes are recorded.
func PIDRegistryDir() string { return filepath.Join(os.TempDir(), "valnet-pids") }

// pidEntry is one registry file.
type pidEntry struct {
	RunnerPID   int       `json:"runner_pid"`
	RunnerStart uint64    `json:"runner_start,omitempty"` // /proc start time: tells a reused pid apart
	PID         int       `json:"pid"`
	PIDStart    uint64    `json:"pid_start,omitempty"`
	Home        string    `json:"home"` // in its command line: a node's home, an app's address
	Started     time.Time `json:"started"`
}

func entryPath(pid int) string { return filepath.Join(PIDRegistryDir(), strconv.Itoa(pid)+".json") }

// registerChild records a spawned child; home is a string its command
// line contains (a node's home, an app's listen address). The file is written whole and
// renamed into place, so CleanOrphans never reads half of one.
func registerChild(pid int, home string) error {
	e := pidEntry{RunnerPID: os.Getpid(), PID: pid, Home: home, Started: time.Now().UTC()}
	e.RunnerStart, _ = ProcessStart(e.RunnerPID)
	e.PIDStart, _ = ProcessStart(pid)
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(PIDRegistryDir(), 0o700); err != nil {
		return fmt.Errorf("pid registry: %w", err)
	}
	tmp := entryPath(pid) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("pid registry: %w", err)
	}
	if err := os.Rename(tmp, entryPath(pid)); err != nil {
		return fmt.Errorf("pid registry: %w", err)
	}
	return nil
}

// unregisterChild removes the record of a reaped child.
func unregisterChild(pid int) { _ = os.Remove(entryPath(pid)) }

// CleanOrphans kills node processes left by runners that are gone and
// returns their pids; see SweepLeftovers, which it runs.
func CleanOrphans() (killed []int, err error) {
	l, err := SweepLeftovers(false)
	return l.Processes, err
}

// Leftovers is what runners that are gone left on this host: node
// processes and run temp dirs (with the unix sockets in them).
type Leftovers struct {
	Processes []int    // node processes, killed (with their process groups)
	TempDirs  []string // run temp dirs (valnet-<kind>-<pid>-*), removed
	Sockets   int      // unix sockets in those dirs
}

// SweepLeftovers kills node processes left by runners that are gone and
// removes their temp dirs; dryRun only lists them. A recorded child is
// killed (its whole process group) only if its runner is no longer alive
// (pid and start time) and the process under its pid is still the one
// recorded: its command line contains the recorded home (and its start
// time matches, when recorded). Otherwise the pid may have been reused by
// an unrelated process, which is left alone. Entries of dead runners are
// removed either way; entries of live runners are kept. A temp dir is
// removed only when no process runs under the pid in its name; dirs in
// except are left to whoever listed them (the docker cleanup's socket
// dirs).
func SweepLeftovers(dryRun bool, except ...string) (Leftovers, error) {
	var l Leftovers
	if !processSupported {
		return l, nil
	}
	var errs []error
	// Socket directories a killed runner left behind go too.
	dirs, err := StaleTempDirs()
	if err != nil {
		errs = append(errs, err)
	}
	for _, dir := range dirs {
		if slices.Contains(except, dir) {
			continue
		}
		socks := CountSockets(dir)
		if !dryRun {
			if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
		}
		l.TempDirs = append(l.TempDirs, dir)
		l.Sockets += socks
	}
	files, err := filepath.Glob(filepath.Join(PIDRegistryDir(), "*.json"))
	if err != nil {
		return l, errors.Join(append(errs, err)...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // removed meanwhile
		}
		var e pidEntry
		if err := json.Unmarshal(data, &e); err != nil || e.PID <= 0 || e.RunnerPID <= 0 {
			errs = append(errs, fmt.Errorf("pid registry: %s: unreadable entry, left in place", f))
			continue
		}
		if ProcessAlive(e.RunnerPID, e.RunnerStart) {
			continue
		}
		if isRecordedChild(e) {
			if dryRun {
				l.Processes = append(l.Processes, e.PID)
				continue
			}
			info, _ := procStat(e.PID)
			// The child leads its own group (Setpgid): kill the group, so
			// nothing it spawned survives; else just the process.
			kill := signalPID
			if info.pgid == e.PID {
				kill = signalGroup
			}
			if err := kill(e.PID, sigKill); err != nil {
				errs = append(errs, fmt.Errorf("kill orphan %d (%s): %w", e.PID, e.Home, err))
				continue
			}
			l.Processes = append(l.Processes, e.PID)
		}
		if dryRun {
			continue
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return l, errors.Join(errs...)
}

// CountSockets counts the unix sockets under dir.
func CountSockets(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type()&os.ModeSocket != 0 {
			n++
		}
		return nil
	})
	return n
}

// isRecordedChild reports whether the live process e.PID is still the node
// recorded in e.
func isRecordedChild(e pidEntry) bool {
	if e.Home == "" || !ProcessAlive(e.PID, e.PIDStart) {
		return false
	}
	cmdline, err := procCmdline(e.PID)
	return err == nil && strings.Contains(cmdline, e.Home)
}
