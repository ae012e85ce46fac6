package unixsock

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestListenIsOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022) // the usual umask: the kernel would make it 0755
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "x.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a 0600 socket", st.Mode())
	}
	if _, err := Listen(path); err == nil {
		t.Fatal("a second listener on the same path")
	}
}
