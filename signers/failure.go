package signers

import (
	"errors"
	"net"
	"os"
	"strings"

	"github.com/cometbft/cometbft/privval"

	"github.com/valnet/valnet/internal/signfail"
)

// Why a signature the node asked for did not reach it (internal/signfail
// has the one declaration; these are its names here).
const (
	FailureSignerFailed       = signfail.SignerFailed
	FailureSignatureInvalid   = signfail.SignatureInvalid
	FailureSignerConflict     = signfail.SignerConflict
	FailureSignerNotAnswering = signfail.SignerNotAnswering
)

// WithheldError is a signature a signer chain refused to hand to the node,
// and why (one of the Failure kinds).
type WithheldError struct {
	Kind string
	Err  error
}

func (e *WithheldError) Error() string { return e.Err.Error() }
func (e *WithheldError) Unwrap() error { return e.Err }

// FailureOf classifies a signature's error; "" for nil.
func FailureOf(err error) string {
	if err == nil {
		return ""
	}
	var w *WithheldError
	if errors.As(err, &w) {
		return w.Kind
	}
	var fe *ErrFault
	if errors.As(err, &fe) {
		if fe.Mode == FailDrop {
			return FailureSignerNotAnswering
		}
		return FailureSignerFailed
	}
	var rse *privval.RemoteSignerError
	if errors.As(err, &rse) {
		return FailureSignerFailed
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, privval.ErrConnectionTimeout) ||
		errors.Is(err, privval.ErrNoConnection) || errors.Is(err, privval.ErrReadTimeout) || errors.Is(err, privval.ErrWriteTimeout) || errors.Is(err, errRestarting) || errors.Is(err, errClosed) {
		return FailureSignerNotAnswering
	}
	var lost *errConnLost
	if errors.As(err, &lost) {
		return FailureSignerNotAnswering
	}
	// CometBFT's retrying client wraps what it last saw as text
	// ("exhausted all attempts to sign vote: EOF").
	msg := err.Error()
	for _, s := range []string{"exhausted all attempts", "EOF", "connection reset", "broken pipe", "use of closed"} {
		if strings.Contains(msg, s) {
			return FailureSignerNotAnswering
		}
	}
	return FailureSignerFailed
}
