package eventlog

import (
	"crypto/sha256"
	"encoding/hex"
)

// TxHash is how events name a transaction: the first 8 bytes of its
// SHA-256 (CometBFT's tx hash), in hex. Short, to keep tx events and the
// tx_hashes of blocks small at 1000 tx/s; a collision among a run's
// transactions is a 1 in 2^64 chance per pair.
func TxHash(tx []byte) string {
	h := sha256.Sum256(tx)
	return hex.EncodeToString(h[:8])
}
