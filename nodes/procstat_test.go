package nodes

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// /proc/<pid>/stat is read past a command name that holds spaces and
// parentheses; what is not a stat line is refused.
func TestParseProcStat(t *testing.T) {
	// Fields 6 to 23 after state, ppid and pgrp; field 22 (start) is 123456.
	rest := " 0 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000"
	for _, tc := range []struct {
		line string
		ok   bool
		want procInfo
	}{
		{"42 (valnet) S 1 42" + rest, true, procInfo{state: 'S', pgid: 42, start: 123456}},
		{"42 (a) (b c)) T 1 7" + rest, true, procInfo{state: 'T', pgid: 7, start: 123456}},
		{"42 (valnet) S 1 42 0", false, procInfo{}},
		{"42 valnet S 1 42" + rest, false, procInfo{}},
		{"42 (valnet) SS 1 42" + rest, false, procInfo{}},
		{"42 (valnet) S 1 x" + rest, false, procInfo{}},
	} {
		got, ok := parseProcStat(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: got %+v %v, want %+v %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// A process is alive while it runs under the start time it had; a zombie
// or a reaped process is not, nor a reused pid (another start time).
func TestProcessAlive(t *testing.T) {
	if !processSupported {
		t.Skip("needs /proc")
	}
	self := os.Getpid()
	start, ok := ProcessStart(self)
	if !ok || start == 0 {
		t.Fatalf("ProcessStart(self) = %d, %v", start, ok)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	pid := zombie.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for info, err := procStat(pid); err == nil && info.state != 'Z'; info, err = procStat(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not exit", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, tc := range []struct {
		name  string
		pid   int
		start uint64
		want  bool
	}{
		{"self, any start", self, 0, true},
		{"self, its start", self, start, true},
		{"self under another start (a reused pid)", self, start + 1, false},
		{"a zombie", pid, 0, false},
	} {
		if got := ProcessAlive(tc.pid, tc.start); got != tc.want {
			t.Errorf("%s: ProcessAlive(%d, %d) = %v, want %v", tc.name, tc.pid, tc.start, got, tc.want)
		}
	}
	if err := zombie.Wait(); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(pid, 0) {
		t.Errorf("reaped pid %d is alive", pid)
	}
}
