package scenarios

import (
	"fmt"
	"slices"
	"strings"
)

// AppPlan is the chain's own ABCI application (`app:`): valnet starts one
// process of Command per validator, with AppAddr replaced by the address
// it picked (a unix socket for socket, loopback TCP for grpc) and AppHome by
// the validator's app directory, and that validator's node connects to it
// over Transport (CometBFT's proxy_app and abci settings).
type AppPlan struct {
	Command   []string // argv as written, placeholders kept
	Transport string   // socket | grpc
}

// Placeholders in app.command.
const (
	AppAddr = "{addr}"
	AppHome = "{home}"
)

// ABCI transports (CometBFT's abci setting).
const (
	AppSocket = "socket"
	AppGRPC   = "grpc"
)

var appTransports = []string{AppSocket, AppGRPC}

// resolveApp checks app:. The sim models no application and the docker
// backend's containers run valnet node only: both refuse it.
func (d *decoder) resolveApp(ra *rawApp, run RunPlan) *AppPlan {
	const key = "app"
	if ra == nil {
		return nil
	}
	ap := &AppPlan{Transport: AppSocket, Command: ra.Command}
	ok := true
	switch run.Backend {
	case BackendSim:
		d.fail(d.keyPos(key), key, "app is not possible with run.backend: sim: the sim is a MODEL of consensus and runs no application (use backend inprocess or process)")
		ok = false
	case backendDocker:
		d.fail(d.keyPos(key), key, "app is not available with run.backend: docker yet: the containers run valnet node with its built-in app (use backend inprocess or process)")
		ok = false
	}
	if ra.Transport != nil {
		ap.Transport = *ra.Transport
		if !d.checkChoice(key+".transport", "transport", ap.Transport, appTransports, nil) {
			ok = false
		}
	}
	ck := key + ".command"
	switch {
	case d.failed(ck):
		ok = false
	case len(ra.Command) == 0:
		d.fail(d.valuePos(ck), ck, "required: the app's argv as a list, e.g. command: [abci-cli, kvstore, --address, '{addr}']")
		ok = false
	case ra.Command[0] == "":
		k := ck + "[0]"
		d.fail(d.valuePos(k), k, "must not be empty: the app's executable (a name on PATH, or a path relative to the scenario file's directory)")
		ok = false
	case !slices.ContainsFunc(ra.Command, func(a string) bool { return strings.Contains(a, AppAddr) }):
		d.fail(d.valuePos(ck), ck, fmt.Sprintf("no argument contains %s: valnet picks each app's listen address and the command must pass it on (e.g. --address '%s')", AppAddr, AppAddr))
		ok = false
	}
	if !ok {
		return nil
	}
	ap.Command = slices.Clone(ra.Command)
	// A path with a slash is the scenario's; a bare name is looked up on PATH.
	if strings.Contains(ap.Command[0], "/") {
		ap.Command[0] = d.filePath(ap.Command[0])
	}
	return ap
}
