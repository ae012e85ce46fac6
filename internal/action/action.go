// Package action names the fault actions once: the scenario schema checks
// them, the runner applies them and writes them into fault events, and
// the results read them back (node down or up, halt causes).
package action

// Fault actions, as a scenario and events.jsonl write them.
const (
	SignerDelay   = "signer-delay"
	SignerDrop    = "signer-drop"
	SignerError   = "signer-error"
	SignerOutage  = "signer-outage"
	SignerRestart = "signer-restart"

	// A threshold signer's cosigners (target NAME.cosigner-K).
	CosignerDown = "cosigner-down"
	CosignerSlow = "cosigner-slow"

	NetworkLatency = "network-latency"
	Partition      = "partition"
	Isolate        = "isolate"
	Heal           = "heal"

	NodeStop    = "node-stop"
	NodeStart   = "node-start"
	NodeKill    = "node-kill"
	NodePause   = "node-pause"
	NodeResume  = "node-resume"
	NodeRestart = "node-restart"
)

// All lists every action, in documentation order: the scenario schema's
// rules, the fault core's cases and the docs' table are checked against it.
func All() []string {
	return []string{SignerDelay, SignerDrop, SignerError, SignerOutage, SignerRestart, CosignerDown, CosignerSlow,
		NetworkLatency, Partition, Isolate, Heal, NodeStop, NodeStart, NodeKill, NodePause, NodeResume, NodeRestart}
}
