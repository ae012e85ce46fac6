package nodes

import (
	"strconv"
	"strings"
)

// What /proc/<pid>/stat says of a process: whether it runs, and a start
// time that, with the pid, names one process (a reused pid has another).
// The process backend's orphan checks and the docker backend's leftover
// checks both ask here.

// procInfo is what /proc/<pid>/stat says of a process.
type procInfo struct {
	state byte   // R, S, D, T (stopped), Z (zombie), ...
	pgid  int    // process group
	start uint64 // start time in clock ticks since boot: with the pid, it names one process
}

// ProcessAlive reports whether pid is a running (not zombie) process
// started at start (0: any start time); without /proc, false.
func ProcessAlive(pid int, start uint64) bool {
	st, ok := ProcessStart(pid)
	return ok && (start == 0 || st == start)
}

// ProcessStart is the start time of the running (not zombie) process pid,
// in clock ticks since boot: with the pid it names one process, so that a
// reused pid is told apart. false: no such process, or no /proc.
func ProcessStart(pid int) (uint64, bool) {
	info, err := procStat(pid)
	if err != nil || info.state == 'Z' || info.state == 'X' {
		return 0, false
	}
	return info.start, true
}

// parseProcStat reads the line of /proc/<pid>/stat (proc(5)).
func parseProcStat(s string) (procInfo, bool) {
	// The command name (field 2) may hold spaces and parentheses: the
	// fields that follow start after its last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procInfo{}, false
	}
	pgid, err1 := strconv.Atoi(f[2])                // field 5
	start, err2 := strconv.ParseUint(f[19], 10, 64) // field 22
	if err1 != nil || err2 != nil || len(f[0]) != 1 {
		return procInfo{}, false
	}
	return procInfo{state: f[0][0], pgid: pgid, start: start}, true
}
