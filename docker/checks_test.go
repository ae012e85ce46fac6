package docker

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	dc "github.com/ory/dockertest/v3/docker"
)

// The engine tests (a real engine, the static node binary built once) are
// make integ's: docker_test.go and image_test.go, TestInteg*.

// What cannot run in a scratch image is refused before any build.
func TestBinaryChecks(t *testing.T) {
	if err := checkStatic("/bin/sh", runtime.GOARCH); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		if _, statErr := os.Stat("/bin/sh"); statErr == nil {
			t.Errorf("/bin/sh: %v, want dynamically linked", err)
		}
	}
	if err := checkStatic(os.Args[0], "s390x"); err == nil {
		t.Error("an executable of another architecture was accepted")
	}
	if err := checkStatic("docker_test.go", runtime.GOARCH); err == nil {
		t.Error("a text file was accepted")
	}
	c, err := dc.NewClient("tcp://127.0.0.1:2375")
	if err != nil {
		t.Fatal(err)
	}
	if !engineRemote(c) {
		t.Error("a tcp engine is not taken for a remote one")
	}
	if _, err := connect(context.Background(), "ssh://user@host"); err == nil || !strings.Contains(err.Error(), "ssh://") {
		t.Errorf("an ssh engine: %v", err)
	}
}
