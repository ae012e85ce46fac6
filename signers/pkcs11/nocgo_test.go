//go:build !cgo

package pkcs11

import (
	"errors"
	"testing"
)

// TestUnavailableWithoutCgo: a CGO_ENABLED=0 build compiles and says why
// it cannot sign with PKCS#11.
func TestUnavailableWithoutCgo(t *testing.T) {
	if Available {
		t.Fatal("Available in a build without cgo")
	}
	if _, err := Open(Config{Module: "x", Token: "t", KeyLabel: "k", PIN: []byte("1234")}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open: %v", err)
	}
	if _, err := Provision(t.TempDir(), "valnet-x", ""); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Provision: %v", err)
	}
	if _, err := List("x", "", nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("List: %v", err)
	}
}
