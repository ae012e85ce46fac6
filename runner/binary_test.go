package runner

import (
	"os"
	"testing"

	"github.com/valnet/valnet/internal/testbin"
)

func TestMain(m *testing.M) {
	if overheadChild() {
		os.Exit(0)
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// valnetBinary is a built valnet: the process backend runs `valnet node`,
// and the test binary is not valnet.
func valnetBinary(t *testing.T) string { return testbin.Valnet(t) }
