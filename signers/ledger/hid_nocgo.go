//go:build !cgo

package ledger

// HIDSupported reports whether this build can reach a device over USB HID.
const HIDSupported = false

// OpenHID needs cgo (ledger-go's HID uses a bundled hidapi); this build
// has none, so it always returns ErrNoHID.
func OpenHID(serial string) (Device, error) { return nil, ErrNoHID }
