package ledger

import "errors"

// ErrNoDevice is OpenHID's answer when no Ledger is attached.
var ErrNoDevice = errors.New("no Ledger device found (connect it, unlock it, open the Tendermint validator app)")

// ErrNoHID is OpenHID's answer in a binary built without cgo.
var ErrNoHID = errors.New("Ledger HID support needs a cgo build")
