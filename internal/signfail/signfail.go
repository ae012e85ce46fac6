// Package signfail names why a signature the node asked for did not reach
// it. The signers classify their errors with these names, sign events carry
// them (Event.Failure), and the reports use them as causes: one
// declaration, so a withheld signature cannot be called late by one layer
// and invalid by another.
package signfail

// The kinds, in report order.
const (
	// SignerFailed: the signer answered with an error (CometBFT's
	// RemoteSignerError, a device or HSM failure, an injected error).
	SignerFailed = "signer-failed"
	// SignatureInvalid: the signer answered, but its signature does not
	// verify over the message the node asked for, against the validator's
	// key; withheld.
	SignatureInvalid = "signature-invalid"
	// SignerConflict: a double-sign rule withheld it (valnet's guard
	// refused a regression or conflicting data, or the node-side watch
	// caught the signer signing conflicting data).
	SignerConflict = "signer-conflict"
	// SignerNotAnswering: no answer at all (the connection was lost or
	// timed out, the signer stopped, a dropped signature).
	SignerNotAnswering = "signer-not-answering"
)

// All returns every kind in report order, as a new slice.
func All() []string {
	return []string{SignerFailed, SignatureInvalid, SignerConflict, SignerNotAnswering}
}

// Of reads an event's failure: "" (a stream written before failures were
// recorded) is SignerFailed, the only kind those streams knew.
func Of(recorded string) string {
	if recorded == "" {
		return SignerFailed
	}
	return recorded
}
