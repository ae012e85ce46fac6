// Package golden compares test output with a golden file, or rewrites the
// file when the test runs with -update.
package golden

import (
	"bytes"
	"os"
	"testing"
)

// Check fails t when got differs from the file at path; with update it
// writes got there instead.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run the test with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
