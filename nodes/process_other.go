//go:build !linux

package nodes

import (
	"os/exec"
	"syscall"
)

// The process backend needs Linux: Pdeathsig (no orphan when the runner is
// killed) and /proc (orphan cleanup) have no portable equivalent.
const processSupported = false

func childAttr() *syscall.SysProcAttr { return nil }

func startChild(*exec.Cmd) error { return errNoProcess }

type groupSignal int

const (
	sigTerm groupSignal = iota
	sigKill
	sigStop
	sigCont
)

func signalGroup(int, groupSignal) error { return errNoProcess }
func signalPID(int, groupSignal) error   { return errNoProcess }

func procStat(int) (procInfo, error)  { return procInfo{}, errNoProcess }
func procCmdline(int) (string, error) { return "", errNoProcess }
