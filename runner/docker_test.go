package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func needDocker(t *testing.T) {
	t.Helper()
	if err := exec.Command("docker", "version").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Docker engine in CI: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
}

func dockerObjects(t *testing.T, runDir string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"ps", "-a", "--format", "{{.Names}} {{.Labels}}"},
		{"network", "ls", "--format", "{{.Name}} {{.Labels}}"},
	} {
		out, _ := exec.Command("docker", args...).Output()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, filepath.Base(runDir)) {
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String()
}
