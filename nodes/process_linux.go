//go:build linux

package nodes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const processSupported = true

// childAttr puts a child in its own process group (signals reach the node
// and anything it spawned, and never the runner) and has the kernel
// SIGKILL it when the runner dies, however it dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

type spawnRequest struct {
	cmd *exec.Cmd
	err chan error
}

var (
	spawnOnce sync.Once
	spawns    = make(chan spawnRequest)
)

// startChild starts cmd from one OS thread that never exits: Pdeathsig
// fires when the thread that forked the child ends, not the process, and
// Go may end a thread whenever a goroutine locked to it returns.
func startChild(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawns {
				r.err <- r.cmd.Start()
			}
		}()
	})
	r := spawnRequest{cmd: cmd, err: make(chan error, 1)}
	spawns <- r
	return <-r.err
}

type groupSignal int

const (
	sigTerm groupSignal = iota
	sigKill
	sigStop
	sigCont
)

var unixSignals = map[groupSignal]syscall.Signal{
	sigTerm: syscall.SIGTERM, sigKill: syscall.SIGKILL, sigStop: syscall.SIGSTOP, sigCont: syscall.SIGCONT,
}

// signalGroup signals the process group led by pid; a group that is gone
// is not an error.
func signalGroup(pid int, s groupSignal) error {
	err := syscall.Kill(-pid, unixSignals[s])
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// signalPID signals one process; a process that is gone is not an error.
func signalPID(pid int, s groupSignal) error {
	err := syscall.Kill(pid, unixSignals[s])
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// procStat reads /proc/<pid>/stat; os.ErrNotExist when there is no such
// process.
func procStat(pid int) (procInfo, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	info, ok := parseProcStat(string(data))
	if !ok {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return info, nil
}

// procCmdline is the command line of pid, arguments separated by spaces.
func procCmdline(pid int) (string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " ")), nil
}
