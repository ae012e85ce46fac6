package scenarios

import "fmt"

// resolveNodeBinary checks a node mapping (top-level `node:` or a
// validator's own) and returns its binary, joined to the scenario file's
// directory; "" when none is given. Only the process backend runs
// binaries: the inprocess backend runs every node inside valnet.
func (d *decoder) resolveNodeBinary(key string, rn *rawNode, run RunPlan) string {
	if rn == nil || rn.Binary == nil {
		return ""
	}
	k := key + ".binary"
	if *rn.Binary == "" {
		d.fail(d.valuePos(k), k, "must not be empty: the path of a CometBFT-compatible binary (remove the key to run valnet's own node)")
		return ""
	}
	if run.Backend == backendDocker {
		d.fail(d.keyPos(k), k, "node.binary is not possible with run.backend: docker: every container runs valnet node (use backend process to run your own binary)")
		return ""
	}
	if run.Backend != backendProcess {
		if !d.failed("run.backend") {
			d.fail(d.keyPos(k), k, fmt.Sprintf("node.binary needs run.backend: process; with backend %s every node runs inside valnet, not as a binary of its own", run.Backend))
		}
		return ""
	}
	return d.filePath(*rn.Binary)
}
